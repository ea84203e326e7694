"""kube-apiserver's and kube-scheduler's limits on DRA selectors, as `apply`, `allocate` and
`schedule` apply them (issue 29, MED 5): refused when written, stopped before they run.

The probes of the issue (7 nested all() took 13 s on one device, 9 nested ran past 20 s, 6
nested map() took 280-461 MB) are built here over literal lists and over the device's own
attributes. "Stopped" is checked by replacing the compiled program with one that fails the test
if it is ever run: a stopped selector costs neither time nor memory.
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from driver.celexpr import (
    COST_LIMIT_EXCEEDED,
    MAX_COST,
    MAX_EXPRESSION_BYTES,
    CelRuntimeError,
    check_selector_limits,
    compile_selector,
    device_variable,
)
from driver.cli import main
from driver.errors import InputError

from .casefile import FIXTURES

WHERE = "ResourceClaim default/c: spec.devices.requests[0].exactly.selectors[0].cel.expression"
TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
GPU = 'device.attributes["gpu.example.com"]'


def nested(depth: int, over: str = TEN, method: str = "all") -> str:
    inner = "v0 == v0" if method == "all" else "v0"
    for i in reversed(range(depth)):
        inner = f"{over}.{method}(v{i}, {inner})"
    return inner if method == "all" else f"{inner}.size() > 0"


PROBES = {
    "7 nested all() over a list": nested(7),
    "9 nested all() over a list": nested(9),
    "6 nested map() over a list": nested(6, method="map"),
    "7 nested all() over the device's attributes": nested(7, GPU),
    "6 nested map() over the device's attributes": nested(6, GPU, "map"),
}


class NeverRun:
    """A compiled program that fails the test if the selector is evaluated at all."""

    def execute(self, ctx):
        raise AssertionError("the selector was evaluated; it should have been stopped before running")


def device(attributes: int = 4, value: str = "x", driver: str = "gpu.example.com") -> dict:
    return device_variable(driver, {"name": "d", "attributes": {f"a{i}": {"string": value} for i in range(attributes)},
                                    "capacity": {"memory": {"value": "40Gi"}}})


def guarded(expression: str):
    return dataclasses.replace(compile_selector(expression, "t"), program=NeverRun(), fast=None, fast_raw=None)


# ---- at write: kube-apiserver's validateCELSelector -------------------------------------------

def test_length_limit_is_bytes_and_exact():
    # validation_resourceclaim_test.go "CEL-length": a selector of exactly the limit passes, one byte more fails.
    base = 'device.driver == ""'
    at_limit = base.replace('""', '"' + "x" * (MAX_EXPRESSION_BYTES - len(base)) + '"')
    check_selector_limits(at_limit, WHERE)
    with pytest.raises(InputError) as err:
        check_selector_limits(at_limit.replace('"x', '"xx', 1), WHERE)
    assert str(err.value) == f"{WHERE}: Too long: may not be more than 10240 bytes (got 10241)"
    multibyte = base.replace('""', '"' + "é" * ((MAX_EXPRESSION_BYTES - len(base)) // 2 + 1) + '"')
    assert len(multibyte) < MAX_EXPRESSION_BYTES < len(multibyte.encode())
    with pytest.raises(InputError, match="Too long"):
        check_selector_limits(multibyte, WHERE)


def test_too_long_is_refused_before_compiling():
    with pytest.raises(InputError, match="Too long"):
        check_selector_limits("(" * (MAX_EXPRESSION_BYTES + 1), WHERE)


@pytest.mark.parametrize("probe", PROBES, ids=list(PROBES))
def test_each_probe_is_refused_at_write_with_upstreams_wording(probe):
    with pytest.raises(InputError) as err:
        check_selector_limits(PROBES[probe], WHERE)
    message = str(err.value)
    assert message.startswith(f"{WHERE}: Forbidden: too complex, exceeds cost limit (estimated worst-case cost ")
    assert message.endswith(f"limit {MAX_COST:,})")


def test_compile_errors_come_before_the_cost():
    with pytest.raises(InputError, match="compilation failed"):
        check_selector_limits(nested(7) + " &&", WHERE)


def test_ordinary_selectors_pass():
    for expression in [f'{GPU}.type == "mig" && {GPU}.cores > 4', f"{GPU}.all(k, {GPU}[k] != '')",
                       'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("10Gi"))', nested(3)]:
        check_selector_limits(expression, WHERE)


def test_cost_just_under_the_limit_passes_and_over_it_fails():
    # Five nested all() over ten items cost 755,551; six cost 7,555,551.
    check_selector_limits(nested(5), WHERE)
    with pytest.raises(InputError, match="7,555,551"):
        check_selector_limits(nested(6), WHERE)


# ---- at run time: kube-scheduler's cost limit ---------------------------------------------------

@pytest.mark.parametrize("probe", PROBES, ids=list(PROBES))
def test_each_probe_is_stopped_before_it_runs(probe):
    with pytest.raises(CelRuntimeError) as err:
        guarded(PROBES[probe]).matches(device(attributes=32))
    assert str(err.value) == COST_LIMIT_EXCEEDED


def test_the_runtime_bound_follows_the_devices_own_sizes():
    # Over the device's attributes, four levels cost 32^4 iterations on the largest device the API
    # allows (refused at write) but only 2^4 on a device with two attributes: cel-go's metered
    # evaluation finishes there, and so does ours.
    expression = nested(4, GPU)
    assert compile_selector(expression, "t").costs.admission > MAX_COST
    assert compile_selector(expression, "t").matches(device(attributes=2)) is True
    with pytest.raises(CelRuntimeError, match=COST_LIMIT_EXCEEDED):
        guarded(expression).matches(device(attributes=32))


def test_a_device_beyond_the_apis_limits_cannot_blow_up_a_selector_that_passed_at_write():
    expression = f"{GPU}.all(a, {GPU}.all(b, {GPU}[a] == {GPU}[b]))"
    check_selector_limits(expression, WHERE)  # 32 x 32 items at most on a device the API accepts
    assert compile_selector(expression, "t").matches(device(attributes=32)) is True
    with pytest.raises(CelRuntimeError, match=COST_LIMIT_EXCEEDED):
        guarded(expression).matches(device(attributes=2000))  # a hand-written slice, never through the API


def test_what_our_evaluator_copies_counts_at_run_time():
    # kube-apiserver accepts this (cel-go builds map() results in place); our evaluator copies the
    # growing list at every item (5,000 items took 4 s), so the runtime limit stops it.
    expression = "[" + ",".join(["0"] * 5000) + "].map(x, x).size() > 0"
    check_selector_limits(expression, WHERE)
    with pytest.raises(CelRuntimeError, match=COST_LIMIT_EXCEEDED):
        guarded(expression).matches(device())
    assert compile_selector("[" + ",".join(["0"] * 50) + "].map(x, x).size() == 50", "t").matches(device()) is True


def test_long_driver_names_and_values_count():
    expression = 'device.driver + device.driver + device.driver + device.driver != ""'
    assert compile_selector(expression, "t").matches(device()) is True
    assert compile_selector(expression, "t").matches(device(driver="d" * 63)) is True
    with pytest.raises(CelRuntimeError, match=COST_LIMIT_EXCEEDED):
        guarded(f"{GPU}.all(k, {GPU}[k].matches({GPU}[k]))").matches(device(attributes=32, value="v" * 5000))


def test_more_code_points_than_cel_go_parses_is_a_compile_error():
    # Not a limit of kube-apiserver's (10 KiB is) but of cel-go's parser, so kube-scheduler too.
    text = 'device.driver == "' + "x" * 100_000 + '"'
    with pytest.raises(InputError, match=r"expression code point size exceeds limit: size: 100019, limit 100000"):
        compile_selector(text, WHERE)
    compile_selector('device.driver == "' + "x" * 99_000 + '"', WHERE)


def test_deeper_nesting_than_cel_go_parses_is_a_compile_error():
    with pytest.raises(InputError, match="compilation failed: max recursion depth exceeded"):
        compile_selector("device.driver.size()" + " + 1" * 300 + " > 0", WHERE)


# ---- through the commands -----------------------------------------------------------------------

def claim_doc(expression: str, name: str = "probe") -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": expression}}]}}]}}}


@pytest.mark.parametrize("probe", PROBES, ids=list(PROBES))
def test_apply_refuses_each_probe(probe, tmp_path, capsys):
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim_doc(PROBES[probe])))
    assert main(["apply", "--store", str(tmp_path / "store"), "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert "spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit" in err
    assert "Traceback" not in err
    assert not (tmp_path / "store" / "resourceclaims").exists() or not list((tmp_path / "store").rglob("probe*"))


def rich_fixture(tmp_path, attributes: int = 12) -> str:
    """The kep5963 node with `attributes` attributes on every device (a demo GPU publishes ~10)."""
    docs = list(yaml.safe_load_all((FIXTURES / "kep5963-mig-vgpu.yaml").read_text()))
    for doc in docs:
        for dev in (doc.get("spec") or {}).get("devices") or ():
            dev["attributes"] = {**dev.get("attributes", {}), **{f"a{i}": {"int": i} for i in range(attributes)}}
    path = tmp_path / "slices.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


@pytest.mark.parametrize("probe", PROBES, ids=list(PROBES))
def test_allocate_stops_each_probe_with_upstreams_wording(probe, tmp_path, capsys):
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim_doc(PROBES[probe])))
    code = main(["allocate", "--node-name", "node-1", rich_fixture(tmp_path), str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert "claim default/probe: selector #0 on device gpu.example.com/" in err
    assert f"CEL runtime error: {COST_LIMIT_EXCEEDED}" in err


def test_allocate_evaluates_a_nested_selector_the_device_keeps_cheap(tmp_path, capsys):
    # Seven levels over a device's attributes: stopped on devices with a dozen attributes (above),
    # evaluated on devices with two, where cel-go's metered evaluation finishes too.
    path = tmp_path / "claim.yaml"
    path.write_text(yaml.safe_dump(claim_doc(nested(7, GPU))))
    code = main(["allocate", "--node-name", "node-1", rich_fixture(tmp_path, attributes=1), str(path)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert next(yaml.safe_load_all(out))["status"]["allocation"]["devices"]["results"][0]["device"]


# ---- the store's admission (what `fake-dra apply` writes) --------------------------------------

def apply_file(tmp_path, doc: dict, capsys) -> tuple[int, str]:
    path = tmp_path / "obj.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = main(["apply", "--store", str(tmp_path / "store"), "-f", str(path)])
    return code, capsys.readouterr().err


def class_doc(expression: str, labels: dict | None = None) -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "expensive", **({"labels": labels} if labels else {})},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def test_a_device_class_is_checked_on_every_write(tmp_path, capsys):
    # ValidateDeviceClassUpdate validates the selectors again, changed or not.
    from driver.store import ObjectStore

    ObjectStore(tmp_path / "store").create("deviceclasses", class_doc(nested(7)))  # planted, never admitted
    code, err = apply_file(tmp_path, class_doc(nested(7), labels={"team": "a"}), capsys)
    assert code == 2
    assert "DeviceClass expensive: spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit" in err


def test_a_claim_is_checked_when_created_not_when_its_labels_change(tmp_path, capsys):
    # A claim's spec is immutable: ValidateResourceClaimUpdate checks only that it did not change.
    from driver.store import ObjectStore

    ObjectStore(tmp_path / "store").create("resourceclaims", claim_doc(nested(7)))
    labelled = claim_doc(nested(7))
    labelled["metadata"]["labels"] = {"team": "a"}
    code, err = apply_file(tmp_path, labelled, capsys)
    assert code == 0, err
    code, err = apply_file(tmp_path, claim_doc(nested(7), name="fresh"), capsys)
    assert code == 2 and "ResourceClaim default/fresh: spec.devices.requests[0].exactly.selectors[0]" in err


def test_a_claim_template_is_checked_when_created(tmp_path, capsys):
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                "metadata": {"name": "t", "namespace": "default"}, "spec": {"spec": claim_doc(nested(6, method="map"))["spec"]}}
    code, err = apply_file(tmp_path, template, capsys)
    assert code == 2
    assert ("ResourceClaimTemplate default/t: spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: "
            "Forbidden: too complex, exceeds cost limit") in err


def test_a_first_available_subrequest_is_checked(tmp_path, capsys):
    doc = claim_doc("true")
    doc["spec"]["devices"]["requests"] = [{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression": nested(9)}}]}]}]
    code, err = apply_file(tmp_path, doc, capsys)
    assert code == 2 and "spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression: Forbidden" in err
