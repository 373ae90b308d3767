"""MIG, read-only, against a simulated NVML device with three instances; slice expectations from the
published A100 figures (the 2020 gpu-burn article on habr: gpu-burn FP32 16,700 Gflop/s on the full A100, per
slice 7 x 2,400
(1g.5gb), 3 x 4,500 (2g.10gb), 2 x 6,700 (3g.20gb); tensor cores 81,500 and 7 x 15,100)."""

from __future__ import annotations

import pytest

from llmbench.hardware import mig
from llmbench.harness.doctor import mig_checks
from tests.fake_nvml import FakeNvml


def test_lists_three_instances() -> None:
    got = mig.all_instances(FakeNvml(mig=True))
    assert [d["profile"] for d in got] == ["3g.20gb", "2g.10gb", "1g.5gb"]
    assert [d["sm_count"] for d in got] == [42, 28, 14]
    assert got[2] == {"gpu": 0, "profile": "1g.5gb", "uuid": "MIG-fake-2", "memory_gib": 4.8, "sm_count": 14}


def test_nothing_without_mig_or_nvml() -> None:
    assert mig.all_instances(FakeNvml(mig=False)) == []
    assert mig_checks(FakeNvml(mig=False)) == []


def test_doctor_lists_them_and_says_it_changes_nothing() -> None:
    (check,) = mig_checks(FakeNvml(mig=True))
    assert check.name == "mig" and "3 MIG instance(s)" in check.detail and "MIG-fake-0" in check.detail
    assert "never enables or changes" in check.detail


def test_profile_share() -> None:
    assert mig.profile_share("3g.20gb") == {"compute": pytest.approx(3 / 7), "memory": 0.5}
    with pytest.raises(ValueError, match="3g20"):
        mig.profile_share("3g20")


@pytest.mark.parametrize("profile, measured", [("1g.5gb", 2_400), ("2g.10gb", 4_500), ("3g.20gb", 6_700)])
def test_seed_fp32_slices_against_the_full_gpu_share(profile: str, measured: float) -> None:
    share = mig.profile_share(profile)
    expected = mig.slice_figure(16_700, share)
    assert expected == pytest.approx(16_700 * int(profile[0]) / 7)
    # the seed's slices reach 93-101% of their compute share of the full A100's FP32 figure
    assert 0.9 < measured / expected < 1.02


def test_seed_tensor_slice_beats_its_share() -> None:
    # 1g.5gb tensor-core gpu-burn 15,100 against 81,500 / 7 = 11,643: the full GPU's figure is not
    # its slices' sum (7 x 15,100 = 105,700 > 81,500), so a slice share is an expectation only
    expected = mig.slice_figure(81_500, mig.profile_share("1g.5gb"))
    assert 15_100 / expected == pytest.approx(1.297, abs=1e-3)
    assert mig.slice_figure(100.0, mig.profile_share("1g.5gb"), "memory") == pytest.approx(12.5)
