"""The 1.37 API inventory: every resource.k8s.io/v1 field of the schema is handled somewhere, or listed as
deliberately not modelled with its reason (tests/allocator/api_inventory.yaml).

A field Kubernetes adds (regenerating driver/schema/data with hack/gen_schema.py) fails this test until
someone models it or says why not; a `where` entry fails once its module stops mentioning the field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = yaml.safe_load((Path(__file__).parent / "api_inventory.yaml").read_text())
PREFIX = "io.k8s.api.resource.v1."


def schema_fields() -> set[str]:
    data = json.loads((ROOT / "driver" / "schema" / "data" / "k8s-1.37-strict.json").read_text())
    return {f"{name[len(PREFIX):]}.{field}" for name, body in data["types"].items() if name.startswith(PREFIX)
            for field in body["fields"]}


def test_every_schema_field_is_listed_and_nothing_else():
    fields = schema_fields()
    assert len(fields) > 150
    missing = sorted(fields - set(INVENTORY))
    assert not missing, f"resource.k8s.io/v1 fields nobody handles or explains: {missing}"
    stale = sorted(set(INVENTORY) - fields)
    assert not stale, f"inventory entries for fields the 1.37 schema does not have: {stale}"


@pytest.mark.parametrize("field", sorted(INVENTORY))
def test_entry_is_honest(field):
    entry = INVENTORY[field]
    kinds = [k for k in ("where", "stored", "notModelled") if k in entry]
    assert len(kinds) == 1, f"{field}: exactly one of where, stored, notModelled"
    if "where" in entry:
        text = (ROOT / entry["where"]).read_text()
        token = entry.get("token", field.split(".", 1)[1])
        assert f'"{token}"' in text or f"'{token}'" in text, f"{field}: {entry['where']} does not mention {token!r}"
    else:
        reason = entry.get("stored") or entry.get("notModelled")
        assert isinstance(reason, str) and len(reason) > 20, f"{field}: give the reason"


def test_not_modelled_fields_are_the_ones_docs_list():
    doc = (ROOT / "docs" / "allocator.md").read_text()
    for field, entry in INVENTORY.items():
        if "notModelled" in entry:
            assert field.split(".", 1)[1] in doc, f"{field}: docs/allocator.md's not-modelled list must name it"
