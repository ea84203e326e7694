"""kubectl habits on the local store: -l selectors, -o jsonpath, delete --all, apply -f DIR, wide tables."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from core.test_object_commands import claim, cli
from driver.commands._objects import render_table
from driver.errors import InputError
from driver.store import ObjectStore
from driver.store.kinds import resolve
from driver.store.labels import parse_selector


def labelled(name: str, labels: dict[str, str], ns: str | None = None) -> str:
    meta = f"metadata:\n  name: {name}\n" + (f"  namespace: {ns}\n" if ns else "")
    if labels:
        meta += "  labels:\n" + "".join(f"    {k}: '{v}'\n" for k, v in labels.items())
    return claim(name).replace(f"metadata:\n  name: {name}\n", meta)


@pytest.fixture()
def store(tmp_path, capsys):
    docs = [labelled("a", {"team": "ml", "tier": "1"}), labelled("b", {"team": "web"}), labelled("c", {}),
            labelled("d", {"team": "ml"}, ns="other")]
    (tmp_path / "c.yaml").write_text("---\n".join(docs))
    assert cli(capsys, "apply", "-f", str(tmp_path / "c.yaml"), "--store", str(tmp_path / "s"))[0] == 0
    return str(tmp_path / "s")


@pytest.mark.parametrize("selector,names", [
    ("team=ml", ["a"]), ("team==ml", ["a"]), ("team!=ml", ["b", "c"]), ("team in (ml,web)", ["a", "b"]),
    ("team notin (ml)", ["b", "c"]), ("team", ["a", "b"]), ("!team", ["c"]), ("team=ml,tier=1", ["a"]),
    ("tier>0", ["a"]), ("tier<1", []), ("", ["a", "b", "c"]),
])
def test_get_with_a_label_selector(store, capsys, selector, names):
    code, out, _ = cli(capsys, "get", "resourceclaims", "-l", selector, "-o", "name", "--store", store)
    assert code == 0 and [line.split("/")[1] for line in out.splitlines()] == names


@pytest.mark.parametrize("selector,message", [
    ("team in ml", "take values in parentheses"), ("team in (ml", "unbalanced parentheses"),
    ("a=b,,c=d", "empty requirement"), ("Bad Key=1", "cannot parse"), ("-x=1", "key '-x'"),
    ("t=" + "v" * 64, "at most 63 characters"), ("tier>one", "needs an integer"), ("team in ()", "at least one value"),
])
def test_bad_selectors_name_the_flag(selector, message):
    with pytest.raises(InputError, match="--selector") as err:
        parse_selector(selector)
    assert message in str(err.value)


def test_get_jsonpath(store, capsys):
    code, out, _ = cli(capsys, "get", "resourceclaims", "-o", "jsonpath={.items[*].metadata.name}", "--store", store)
    assert (code, out) == (0, "a b c")
    code, out, _ = cli(capsys, "get", "resourceclaims", "-A", "-l", "team=ml", "--store", store,
                       "-o", 'jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{"\\n"}{end}')
    assert out == "default/a\nother/d\n"
    code, out, _ = cli(capsys, "get", "resourceclaim", "a", "-o=jsonpath={.metadata.labels.team}", "--store", store)
    assert out == "ml", "one object by name: the object itself, not a List"
    code, _, err = cli(capsys, "get", "resourceclaims", "-o", "jsonpath={.items[", "--store", store)
    assert code == 2 and "--output" in err and "jsonpath template" in err
    code, _, err = cli(capsys, "get", "resourceclaims", "-o", "jsonpath", "--store", store)
    assert code == 2 and "needs a template" in err


def test_delete_all_and_by_selector(store, capsys):
    code, out, _ = cli(capsys, "delete", "resourceclaims", "-l", "team=ml", "-A", "--store", store)
    assert code == 0 and sorted(out.splitlines()) == ['resourceclaim.resource.k8s.io "a" deleted',
                                                      'resourceclaim.resource.k8s.io "d" deleted']
    code, out, _ = cli(capsys, "delete", "resourceclaims", "--all", "--store", store)
    assert code == 0 and len(out.splitlines()) == 2
    assert ObjectStore(store).list("resourceclaims", all_namespaces=True) == []
    code, out, err = cli(capsys, "delete", "resourceclaims", "--all", "--store", store)
    assert (code, out) == (0, "") and "No resources found" in err
    for argv, message in [(("resourceclaims", "x", "--all"), "not both"), (("resourceclaims", "-A"), "--all-namespaces goes with"),
                          (("resourceclaims", "x", "-R"), "-R/--recursive goes with -f")]:
        code, _, err = cli(capsys, "delete", *argv, "--store", store)
        assert code == 2 and message in err, (argv, err)


def test_apply_a_directory_in_kubectls_order(tmp_path, capsys):
    d = tmp_path / "manifests"
    (d / "b").mkdir(parents=True)
    (d / "z.yaml").write_text(claim("z"))
    (d / "a.json").write_text('{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "j"},'
                              ' "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "c"}}]}}}')
    (d / "b.yml").write_text(claim("y"))
    (d / "notes.txt").write_text("not a manifest")
    (d / "b" / "deep.yaml").write_text(claim("deep"))
    store = str(tmp_path / "s")
    code, out, err = cli(capsys, "apply", "-f", str(d), "--store", store)
    assert code == 0, err
    assert [line.split("/")[1].split()[0] for line in out.splitlines()] == ["j", "y", "z"]
    code, out, _ = cli(capsys, "apply", "-f", str(d), "-R", "--store", store)
    # filepath.Walk order: names sorted per directory, so b/ comes before b.yml.
    assert [line.split("/")[1] for line in out.splitlines()] == ["j unchanged", "deep created", "y unchanged", "z unchanged"]
    code, out, _ = cli(capsys, "delete", "-f", str(d), "-R", "--store", store)
    assert code == 0 and len(out.splitlines()) == 4


def test_wide_slices_never_replace_a_value_by_a_footnote():
    # The DRIVER column once became "[1]" as soon as AGE had four characters.
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    created = (now - timedelta(minutes=9, seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj = {"metadata": {"name": "00000-fake-dra.example.com-node-1", "creationTimestamp": created},
           "spec": {"nodeName": "node-1", "driver": "fake-dra.example.com",
                    "pool": {"name": "node-1", "generation": 1}, "devices": [], "sharedCounters": []}}
    out = render_table(resolve("resourceslices"), [obj], wide=True, now=now)
    row = out.splitlines()[1].split()
    assert row == ["00000-fake-dra.example.com-node-1", "node-1", "fake-dra.example.com", "node-1", "9m5s", "1", "0", "0"]
    assert "[1]" not in out
