"""Entries rebuilt from CDI specs (after a corrupt checkpoint) belong to the current boot, so the
next reboot drops them like any other entry instead of keeping their devices reserved forever."""

from __future__ import annotations

import json

from state.conftest import result


def test_rebuilt_entries_carry_the_current_boot_id_and_a_reboot_drops_them(env):
    ref = env.claims.add("c", [result("gpu-0")])
    env.state().prepare([ref])
    (env.state_dir / "checkpoint.json").write_bytes(b"{not json")
    st = env.state()
    assert st.prepared()[ref.uid].boot_id == "boot-1"
    assert json.loads((env.state_dir / "checkpoint.json").read_text())["claims"][ref.uid]["bootID"] == "boot-1"
    env.boot_id = "boot-2"  # reboot with a persistent CDI root: the spec is still there
    st = env.state()
    assert st.prepared() == {} and env.cdi_files() == []
    full = env.claims.add("full", [result("gpu-0")])
    assert st.prepare([full])[full.uid].error == "", "the rebuilt entry must not reserve gpu-0 after a reboot"
