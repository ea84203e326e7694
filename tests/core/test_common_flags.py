"""Shared flag helpers: durations and in-cluster detection name the flag they reject."""

import pytest

from driver.commands import common
from driver.errors import InputError


@pytest.mark.parametrize("value,seconds", [("5", 5.0), ("0.5", 0.5), (3, 3.0)])
def test_positive_seconds(value, seconds):
    assert common.positive_seconds(value, "--health-interval") == seconds


@pytest.mark.parametrize("value,needle", [("0", "--grace-period: must be positive"),
                                          ("-1", "--grace-period: must be positive"),
                                          ("soon", "--grace-period: expected seconds"),
                                          (None, "--grace-period: expected seconds"),
                                          # float() takes these: nan busy-looped a core per health
                                          # stream, inf removed the drain bound (issue 18, item 10)
                                          ("nan", "--grace-period: expected a finite number of seconds"),
                                          ("inf", "--grace-period: expected a finite number of seconds"),
                                          ("-inf", "--grace-period: expected a finite number of seconds"),
                                          ("Infinity", "--grace-period: expected a finite number of seconds")])
def test_positive_seconds_rejects(value, needle):
    with pytest.raises(InputError, match=needle):
        common.positive_seconds(value, "--grace-period")


def test_in_cluster_needs_service_host(monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert common.in_cluster() is False


def test_run_rejects_a_bad_interval_before_starting(tmp_path, capsys):
    from driver.cli import main

    code = main(["run", "--sysfs-root", str(tmp_path), "--node-name", "n1", "--store", str(tmp_path / "s"),
                 "--kubelet-plugins-dir", str(tmp_path / "p"), "--kubelet-registry-dir", str(tmp_path / "r"),
                 "--cdi-root", str(tmp_path / "c"), "--health-interval", "0"])
    assert code == 2
    assert "--health-interval: must be positive" in capsys.readouterr().err


@pytest.mark.parametrize("flag,value", [("--health-interval", "nan"), ("--grace-period", "inf"),
                                        ("--api-deadline", "NaN"), ("--publish-interval", "inf")])
def test_run_refuses_nan_and_inf_before_starting(tmp_path, capsys, flag, value):
    from driver.cli import main

    code = main(["run", "--sysfs-root", str(tmp_path), "--node-name", "n1", "--store", str(tmp_path / "s"),
                 "--kubelet-plugins-dir", str(tmp_path / "p"), "--kubelet-registry-dir", str(tmp_path / "r"),
                 "--cdi-root", str(tmp_path / "c"), flag, value])
    err = capsys.readouterr().err
    assert code == 2 and f"{flag}: expected a finite number of seconds, got {value!r}" in err
    assert "Traceback" not in err and not (tmp_path / "p").exists()
