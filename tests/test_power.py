"""Power-limit control against a simulated NVML device: order, restore on every kind of end, refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from llmbench.hardware.power import (
    PowerController,
    PowerLimitError,
    power_limit,
    restore_leftover,
    startup_restore,
    watts_for_fraction,
)
from tests.fake_nvml import FakeNvml

ROOT = Path(__file__).resolve().parent.parent


def test_limits_read_in_watts(tmp_path: Path) -> None:
    lim = PowerController("h0", FakeNvml(), tmp_path / "s.json").limits()
    assert (lim.current_w, lim.default_w, lim.min_w, lim.max_w) == (700, 700, 200, 700)


def test_sweep_sets_limits_in_order_and_restores(tmp_path: Path) -> None:
    nv, state = FakeNvml(), tmp_path / "s.json"
    seen = []
    for w in (300, 450, 600):
        with power_limit(w, "h0", nv, state):
            seen.append(nv.current_mw)
            assert state.exists()  # written before the change
        assert nv.current_mw == 700_000
    assert seen == [300_000, 450_000, 600_000]
    assert nv.log == [300_000, 700_000, 450_000, 700_000, 600_000, 700_000]
    assert not state.exists()


def test_restored_after_a_failing_case(tmp_path: Path) -> None:
    nv, state = FakeNvml(), tmp_path / "s.json"
    with pytest.raises(ZeroDivisionError), power_limit(400, "h0", nv, state):
        assert nv.current_mw == 400_000
        _ = 1 / 0
    assert nv.current_mw == 700_000 and not state.exists()


@pytest.mark.parametrize("kw, words", [({"root": False}, "needs root"), ({"refuse": True}, "refused")])
def test_refusal_changes_nothing(tmp_path: Path, kw: dict[str, bool], words: str) -> None:
    nv, state = FakeNvml(**kw), tmp_path / "s.json"
    with pytest.raises(PowerLimitError, match=words), power_limit(400, "h0", nv, state):
        pytest.fail("the block must not run")
    assert nv.current_mw == 700_000 and nv.log == [] and not state.exists()


def test_out_of_range_names_the_range(tmp_path: Path) -> None:
    nv = FakeNvml()
    with pytest.raises(PowerLimitError, match=r"power_limit_w=900 .*\[200, 700\]"):
        PowerController("h0", nv, tmp_path / "s.json").set_limit(900)
    assert nv.log == []


# The child holds the limit in short sleeps, as a case's work would: CPython runs a signal's handler between
# bytecodes, so a SIGTERM that lands after the print and before one long sleep's system call began waited out
# the whole sleep (seen in CI on a loaded machine: a 30 s wait for a 60 s sleep; about 1 in 300 here under load).
CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from llmbench.hardware.power import power_limit
    from tests.fake_nvml import FakeNvml
    nv = FakeNvml(Path(sys.argv[1]))
    with power_limit(350, "h0", nv, Path(sys.argv[2])):
        print("holding", flush=True)
        for _ in range(600):
            time.sleep(0.1)
""")


def _holding_child(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    dev, state = tmp_path / "dev.json", tmp_path / "state.json"
    FakeNvml(dev)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(dev), str(state)], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "holding"
    assert FakeNvml(dev).current_mw == 350_000 and state.exists()
    return p, dev, state


@pytest.mark.slow
def test_sigterm_restores(tmp_path: Path) -> None:
    p, dev, state = _holding_child(tmp_path)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == 128 + signal.SIGTERM
    assert FakeNvml(dev).current_mw == 700_000 and not state.exists()


@pytest.mark.slow
def test_killed_case_is_restored_on_next_start(tmp_path: Path) -> None:
    p, dev, state = _holding_child(tmp_path)
    p.kill()
    p.wait(timeout=30)
    time.sleep(0.1)
    nv = FakeNvml(dev)
    assert nv.current_mw == 350_000 and state.exists()  # the kill left it changed
    lines = restore_leftover(nv, state)
    assert nv.current_mw == 700_000 and not state.exists()
    assert len(lines) == 1 and "700 W" in lines[0]


def test_next_power_limit_restores_a_leftover_first(tmp_path: Path) -> None:
    nv, state = FakeNvml(), tmp_path / "s.json"
    state.write_text('{"GPU-fake-0": {"original_mw": 650000, "pid": 999999999}}')  # a dead process
    nv.nvmlDeviceSetPowerManagementLimit("h0", 300_000)
    with power_limit(500, "h0", nv, state):
        pass
    assert nv.log == [300_000, 650_000, 500_000, 650_000]


def test_watts_for_fraction_interpolates() -> None:
    # speed 50 at 200 W, 80 at 300 W, 100 at 400 W (best), 100 at 480 W
    pts = [(480, 100.0), (200, 50.0), (300, 80.0), (400, 100.0)]
    got = watts_for_fraction(pts)
    assert got[0.8] == pytest.approx(300)
    assert got[0.9] == pytest.approx(350)  # halfway from 80 to 100
    assert got[0.95] == pytest.approx(375)
    assert watts_for_fraction(pts, (0.4,))[0.4] == 200  # reached at the lowest limit measured
    assert watts_for_fraction([], (0.8,)) == {0.8: None}


def test_startup_restore_reports_and_never_raises(tmp_path: Path) -> None:
    state = tmp_path / "s.json"
    assert startup_restore(FakeNvml(), state) == []  # nothing left: nothing done
    state.write_text('{"GPU-fake-0": {"original_mw": 650000, "pid": 999999999}}')
    lines = startup_restore(FakeNvml(root=False), state)
    assert len(lines) == 1 and "could not be restored" in lines[0] and state.exists()
    nv = FakeNvml()
    assert "650 W" in startup_restore(nv, state)[0] and nv.current_mw == 650_000 and not state.exists()
