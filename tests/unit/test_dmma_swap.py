"""dmma SWAP_AB (kernels/dgemm_mma.cu): recorded configs keep the plain mma, the search space
leaves the swap out, only m16n8k8 configs that store from their fragments may swap, autotuning
times it as a twin of those, and the tilings whose registers ptxas checked (dmma.PTXAS_CHECKED,
cuBLAS's small-k arrangement) compile within the cap and without spills in every variant."""

from __future__ import annotations

import itertools
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import assert_no_spills, compile_report

from tunedgemm import launch, plans
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import IEEE, MAX_REGS_PER_THREAD, KernelConfig

FAMILY = FAMILIES["dmma"]
DEFAULT = FAMILY.default_config("float64").as_dict()  # MMA_K 4
# The table's commonest m16n8k8 tiling: 64 x 64 blocks of eight 32 x 16 warp tiles.
K8 = {"BM": 64, "BN": 64, "WM": 32, "WN": 16, "MMA_K": 8, "STAGES": 4, "MIN_BLOCKS": 2,
      "ADVANCE": 1}


def _config(**changes: int) -> KernelConfig:
    return KernelConfig.make("dmma", {**DEFAULT, **changes})


def test_swap_is_declared_with_recorded_value_zero_and_left_out_of_the_space():
    (tunable,) = [t for t in FAMILY.tunables if t.name == "SWAP_AB"]
    assert (tunable.values, tunable.absent, dmma.SWAP_AB_ON) == ((0,), 0, (1,))
    recorded = FAMILY.recorded({k: v for k, v in DEFAULT.items() if k != "SWAP_AB"})
    assert recorded["SWAP_AB"] == 0
    assert all(c["SWAP_AB"] == 0 for c in FAMILY.space("float64", IEEE))


def test_only_m16n8k8_configs_with_the_direct_epilogue_swap():
    assert not FAMILY.violations(_config(**K8, SWAP_AB=1), "float64")
    for changes in ({"MMA_K": 4}, {"MMA_K": 16}, {"EPILOGUE": 1}):
        assert any("SWAP_AB" in v for v in FAMILY.violations(
            _config(**{**K8, **changes}, SWAP_AB=1), "float64"))  # fmt: skip


def test_swap_reaches_the_kernel_as_a_define():
    plain, swapped = _config(**K8), _config(**K8, SWAP_AB=1)
    assert ("SWAP_AB", 0) in launch.plan(plain, "float64", False, False, True).defines
    assert ("SWAP_AB", 1) in launch.plan(swapped, "float64", True, True, False).defines


def test_autotuning_times_the_swap_as_a_twin_of_m16n8k8_configs_only():
    k8 = _config(**K8)
    assert _config(**K8, SWAP_AB=1) in plans.with_twins((k8,), "float64")
    k4 = FAMILY.default_config("float64")
    assert all(t["SWAP_AB"] == 0 for t in plans.with_twins((k4,), "float64"))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", dmma.PTXAS_CHECKED)
def test_ptxas_checked_tilings_fit_the_cap_without_spills_in_every_variant(tile, tmp_path):
    """What PTXAS_CHECKED vouches for, where _regs_estimate says more than the cap."""
    def report(variant: tuple[int, int, int, int]) -> str:
        ta, tb, aligned, swap = variant
        config = _config(**{**tile, "SWAP_AB": swap})
        defines = {**FAMILY.defines(config, "float64"), "DTYPE": 1, "TRANS_A": ta,
                   "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
        where = tmp_path / f"{ta}{tb}{aligned}{swap}"
        where.mkdir()
        return compile_report("dgemm_mma.cu", defines, where)

    variants = list(itertools.product((0, 1), (0, 1), (0, 1), (0, 1)))
    with ThreadPoolExecutor(2) as pool:
        for variant, text in zip(variants, pool.map(report, variants), strict=True):
            assert_no_spills(text, str(variant))
            (used,) = map(int, re.findall(r"Used (\d+) registers", text))
            assert used <= MAX_REGS_PER_THREAD, (variant, used)
