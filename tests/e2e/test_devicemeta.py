"""The `metadata` expectation holds device metadata files to the KEP-5304 protocol and to the scenario's
keys, and fails (never vacuously passes) when either is not met."""

from __future__ import annotations

import json

from driver.e2e.devicemeta import check
from driver.state.metadata import container_path
from driver.e2e.observe import Observation, check_step
from driver.e2e.scenario import Step
from driver.state.metadata import encode

DRIVER = "fake-dra.example.com"


def body(name="c", request="net", devices=None, pod_claim=None) -> dict:
    out = {"metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
           "requests": [{"name": request, "devices": devices if devices is not None else [vf()]}]}
    if pod_claim:
        out["podClaimName"] = pod_claim
    return out


def vf(name="nic-0-vf-0", net=True) -> dict:
    dev = {"driver": DRIVER, "pool": "n1", "name": name, "attributes": {"type": {"string": "vf"}}}
    if net:
        dev["networkData"] = {"interfaceName": "ens3f0v0", "hardwareAddress": "0e:42:00:c0:00:00"}
    return dev


def files(b: dict, generation: int = 1, path: str | None = None) -> dict[str, str]:
    request = b["requests"][0]["name"].split("/")[0]
    where = path or container_path(DRIVER, b["metadata"]["name"], request, b.get("podClaimName"))
    return {where: encode(b, generation).decode()}


def test_a_good_file_passes_every_key() -> None:
    ok, seen = check({"files": 1, "devices": 1, "type": "vf", "network": True, "generation": 1}, files(body()))
    assert ok, seen
    assert "nic-0-vf-0" in seen


def test_template_path_and_subrequest() -> None:
    b = body(name="pod-x-abc12", request="net/fast", pod_claim="net")
    (path,) = files(b)
    assert path == f"/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/net/net/{DRIVER}-metadata.json"
    assert check({}, files(b))[0]


def test_each_key_can_fail() -> None:
    good = files(body())
    for want in ({"files": 2}, {"devices": 2}, {"type": "mig"}, {"network": False}, {"generation": 2}):
        assert not check(want, good)[0], want
    assert not check({"network": True}, files(body(devices=[vf(net=False)])))[0]
    assert not check({"type": "vf"}, files(body(devices=[])))[0], "no device is no pass"


def test_not_observed_fails() -> None:
    assert check({}, None) == (False, "(not observed)")


def test_protocol_violations_fail_even_without_keys() -> None:
    b = body()
    (path, text) = next(iter(files(b).items()))
    objects = [json.loads(line) for line in text.splitlines()]
    swapped = "\n".join(json.dumps(o) for o in reversed(objects))
    assert "versions" in check({}, {path: swapped})[1]
    objects[1]["requests"] = []
    assert "differ in content" in check({}, {path: "\n".join(json.dumps(o) for o in objects)})[1]
    assert "not a JSON stream" in check({}, {path: text[:-30]})[1]
    assert "empty" in check({}, {path: ""})[1]
    wrong = files(b, path=container_path(DRIVER, "other-claim", "net"))
    ok, seen = check({}, wrong)
    assert not ok and "belongs at" in seen
    assert "generation 0 is not a positive integer" in check({}, files(b, generation=0))[1]


def test_wired_into_check_step() -> None:
    step = Step(1, "pod", {"name": "p"}, {"metadata": {"devices": 1}})
    (c,) = check_step(step, Observation(metadata=files(body())), {})
    assert (c.what, c.ok) == ("device metadata", True)
    (c,) = check_step(step, Observation(), {})
    assert not c.ok
