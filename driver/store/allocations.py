"""The allocation index of the local store: which claim holds which device, and when each pool was
last allocated from.

Every write of a ResourceClaim rewrites its entries (driver.store.indexes.allocation_entries). Two
things read them: the double-booking check of the schedulers' writes (`create`/`update` with
`exclusive=True` refuse a device another claim holds, whoever wrote first; issue 29), and
`pool_revisions` / `check_pools`, with which a scheduler learns that a pool it read has been
allocated from since (its allocation may then over-commit the pool's counters: read again).
`allocated_devices` and `claims_in_pools` answer "what is in use in this pool" without reading
every claim.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Collection, Mapping
from typing import Any

from driver.errors import ConflictError, InputError
from driver.store import indexes, shape
from driver.store.base import StoreBase

log = logging.getLogger("fake-dra.store")


class Allocations(StoreBase):
    def _index_allocation(self, conn: sqlite3.Connection, row_id: int, key: tuple[str, str, str],
                          obj: Mapping[str, Any], revision: int, exclusive: bool) -> None:
        new = indexes.allocation_entries(obj)
        old = [(d, int(h)) for d, h in conn.execute("SELECT device, shared FROM allocations WHERE object=?", (row_id,))]
        if sorted(new) == sorted(old):
            return
        if exclusive and new:
            mine = dict(new)
            for device, theirs, ns, name in conn.execute(
                    "SELECT a.device, a.shared, o.namespace, o.name FROM allocations a JOIN objects o ON o.id = a.object "
                    f"WHERE a.object != ? AND a.device IN ({','.join('?' * len(mine))})", (row_id, *mine)):
                if indexes.conflicts(mine[device], int(theirs)):
                    raise ConflictError(
                        f"resourceclaim {key[1]}/{key[2]}: device {device} is already allocated to resourceclaim "
                        f"{ns}/{name} (allocated meanwhile by another writer); nothing was written")
        conn.execute("DELETE FROM allocations WHERE object=?", (row_id,))
        conn.executemany("INSERT INTO allocations(device, object, shared) VALUES (?,?,?)",
                         [(d, row_id, h) for d, h in new])
        held_before = {d for d, _ in old}
        added = {indexes.pool_of(d) for d, _ in new if d not in held_before}
        conn.executemany("INSERT INTO pools(pool, rv) VALUES (?, ?) ON CONFLICT(pool) DO UPDATE SET rv=excluded.rv",
                         [(p, revision) for p in sorted(added)])

    def allocated_devices(self, driver: str, pool: str) -> set[str]:
        """Names of the devices of (driver, pool) that allocated claims hold (adminAccess included),
        from the allocation index: no claim is read."""
        conn = self._conn(write=False)
        if conn is None:
            return set()
        prefix = f"{driver}/{pool}/"
        return {d[len(prefix):] for (d,) in conn.execute(
            "SELECT DISTINCT device FROM allocations WHERE device >= ? AND device < ?", (prefix, prefix[:-1] + "0"))
            if "/" not in d[len(prefix):]}

    def claims_in_pools(self, pools: Collection[str]) -> list[dict[str, Any]]:
        """The claims whose allocation holds a device of one of `pools` (`driver/pool`), from the
        allocation index: what `describe node` needs, without reading every claim."""
        conn = self._conn(write=False)
        wanted = sorted(set(pools))
        if conn is None or not wanted:
            return []
        ids: set[int] = set()
        for pool in wanted:
            prefix = f"{pool}/"
            ids.update(r[0] for r in conn.execute(
                "SELECT object FROM allocations WHERE device >= ? AND device < ?", (prefix, prefix[:-1] + "0")))
        out = []
        for row in conn.execute(f"SELECT namespace, name, crc, value FROM objects WHERE id IN "
                                f"({','.join('?' * len(ids))}) ORDER BY namespace, name", sorted(ids)):
            try:
                out.append(shape.decode("resourceclaims", row[0] or None, row[1], row[2], row[3], self.db_path))
            except InputError as exc:
                log.warning("leaving out an unreadable object: %s", exc)
        return out

    def pool_revisions(self) -> dict[str, int]:
        """The revision of the last allocation into each pool (`driver/pool`): what a scheduler
        read its claims at, to check with `check_pools` before it writes."""
        conn = self._conn(write=False)
        return {r[0]: int(r[1]) for r in conn.execute("SELECT pool, rv FROM pools")} if conn else {}

    def check_pools(self, known: Mapping[str, int], pools: Collection[str]) -> None:
        """ConflictError when a claim was allocated from one of `pools` after the revision `known`
        says (0 when absent): another writer allocated there since this one read its claims, so
        an allocation computed from that read may over-commit the pool's counters. Call inside
        `locked()`, before the write it guards."""
        if not pools:
            return
        conn = self._db.connection(create=True)
        assert conn is not None
        wanted = sorted(set(pools))
        for pool, rv in conn.execute(f"SELECT pool, rv FROM pools WHERE pool IN ({','.join('?' * len(wanted))})", wanted):
            if int(rv) > known.get(pool, 0):
                raise ConflictError(f"pool {pool}: allocated from at revision {rv} by another writer since this one read "
                                    f"it (at {known.get(pool, 0)}); read the claims again")
