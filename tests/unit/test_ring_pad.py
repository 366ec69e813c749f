"""dmma RING_PAD (kernels/dgemm_mma.cu): recorded configs keep the padded ring, the search space
leaves the unpadded one out, its shared memory is the tiles' alone, it needs 16-double rows
(BK a multiple of 16), the medium tiles run it and autotuning times it as a twin; the heaviest
tilings' unpadded twins compile within their register caps and without spills."""

from __future__ import annotations

import itertools
import shutil
import sys
from pathlib import Path

import pytest
from helpers import assert_compile_within

from tunedgemm import launch, plans
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import IEEE, KernelConfig, register_cap

FAMILY = FAMILIES["dmma"]
DEFAULT = FAMILY.default_config("float64").as_dict()  # 128 x 128, BK 16, 3 stages


def _config(**changes: int) -> KernelConfig:
    return KernelConfig.make("dmma", {**DEFAULT, **changes})


def test_recorded_configs_are_padded_and_the_space_holds_no_other():
    (tunable,) = [t for t in FAMILY.tunables if t.name == "RING_PAD"]
    assert (tunable.values, tunable.absent) == ((1,), 1)
    assert FAMILY.recorded({k: v for k, v in DEFAULT.items() if k != "RING_PAD"})["RING_PAD"] == 1
    assert all(c["RING_PAD"] == 1 for c in FAMILY.space("float64", IEEE))


def test_the_unpadded_ring_holds_the_tiles_alone():
    # padded: each operand's larger layout, [128][16 + 4] against [16][128 + 16] doubles
    padded, unpadded = (FAMILY.smem_bytes({**DEFAULT, "RING_PAD": p}, 8) for p in (1, 0))
    assert padded == 3 * 2 * 128 * 20 * 8
    assert unpadded == 3 * (128 + 128) * 16 * 8
    # cuBLAS's 64 x 64 tile at four stages, three blocks an SM: only unpadded
    medium = {**DEFAULT, **dmma.MEDIUM_TILES[0], "STAGES": 4}
    assert not FAMILY.violations(KernelConfig.make("dmma", medium), "float64")
    assert FAMILY.violations(KernelConfig.make("dmma", {**medium, "RING_PAD": 1}), "float64")


def test_unpadded_rows_need_bk_a_multiple_of_16():
    assert not FAMILY.violations(_config(RING_PAD=0, BK=32, ADVANCE=1), "float64")
    assert any("RING_PAD" in v for v in FAMILY.violations(_config(RING_PAD=0, BK=8), "float64"))


def test_the_ring_reaches_the_kernel_as_a_define():
    assert ("RING_PAD", 1) in launch.plan(_config(), "float64", False, False, True).defines
    unpadded = launch.plan(_config(RING_PAD=0), "float64", True, False, False).defines
    assert ("RING_PAD", 0) in unpadded


def test_medium_tiles_run_it_and_autotuning_times_it_as_a_twin():
    assert all(tile["RING_PAD"] == 0 for tile in dmma.MEDIUM_TILES)
    twin = _config(**dmma.RING_TWIN)
    assert twin in plans.with_twins((_config(),), "float64")
    assert twin.as_dict()["ADVANCE"] == 1


def test_the_public_probe_can_put_the_padded_family_back():
    """probe_ring_pad --public's "before" swaps FAMILIES' dmma item (every lookup reads the
    mapping) through probe_host_ties' "module.NAME[key]" settings, and puts it back."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import probe_host_ties
    import probe_ring_pad

    before = {"families.FAMILIES[dmma]": probe_ring_pad.padded_family()}
    now = probe_host_ties.current(before)
    assert now["families.FAMILIES[dmma]"] is FAMILY
    try:
        probe_host_ties.apply(before)
        family = FAMILIES["dmma"]
        assert all(tile["RING_PAD"] == 1 for tile in family.medium_tiles)
        assert dmma.RING_TWIN not in family.twins
    finally:
        probe_host_ties.apply(now)
    assert FAMILIES["dmma"] is FAMILY


# The tilings with the most registers that autotuning may give an unpadded twin: the
# default, cuBLAS's small-k tile unsplit (dmma.PTXAS_CHECKED, 246-254 of 255 padded), and the
# two round tiles. Each k-contiguous operand read unpadded keeps four fragment offsets, not one.
HEAVY = (
    {"ADVANCE": 1},
    {**dmma.PTXAS_CHECKED[0]},
    *dmma.ROUND_TILES,
)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("tile", HEAVY, ids=lambda t: f"{t.get('BM', 128)}x{t.get('BN', 128)}")
def test_unpadded_twins_of_the_heaviest_tilings_compile_without_spills(tile, tmp_path):
    config = _config(**{**tile, **dmma.RING_TWIN})
    cap = register_cap(FAMILY.threads(config.as_dict()), config.as_dict()["MIN_BLOCKS"])
    variants = itertools.product((0, 1), repeat=3)
    assert_compile_within([(config, *v) for v in variants], "float64", cap, tmp_path)
