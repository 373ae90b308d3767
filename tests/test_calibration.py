"""What the intervals and the gate deliver, simulated through the functions `compare` uses
(benchmarks/gate_calibration.py) on a small grid of the committed sets' layouts: each cell's "95%" interval
covers the truth about 95% of the time, the summary's at least that, and a suite of 17 unchanged cells
fails the gate at most about 5% of the time. The simulation is seeded: the same figures on every machine."""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest

from tests.conftest import ROOT


@pytest.fixture
def calibration(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    return importlib.import_module("gate_calibration")


@pytest.mark.slow
@pytest.mark.parametrize("layout", [0, 2, 4])  # 1 machine x 2 runs; 3 machines x 2 runs; same machine x 3
def test_intervals_cover_and_the_gate_holds_its_false_alarm_rate(calibration, layout: int) -> None:  # type: ignore[no-untyped-def]
    lay = replace(calibration.layouts(0.03, 0.015)[layout], cases=9)
    got = calibration.calibrate(lay, trials=200)  # the false-alarm rate to about +-1.5%
    assert got["cells_unjudged"] == 0, got
    assert got["cell_coverage"] >= 0.93, got
    assert got["summary_coverage"] >= 0.93, got
    assert got["suite_false_alarms"] <= 0.07, got


def test_one_machine_a_side_borrows_the_family_spread_and_a_family_without_one_gives_no_interval(
        calibration) -> None:  # type: ignore[no-untyped-def]
    """With the family's other runs on one machine each side, nothing says how far machines land: the
    cells of two GPUs measured on one machine each get no 95% interval, and say why."""
    import numpy as np

    lay = replace(calibration.layouts(0.03, 0.015)[0], cases=3, history=(2, 1, 2))
    got = calibration.trial(np.random.default_rng(1), lay)
    assert got["cells"] == [] and got["unjudged"] == 3
