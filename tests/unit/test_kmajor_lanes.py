"""simt KMAJOR_LANES (kernels/kmajor_lanes.cuh) and REG_TRANSPOSE 2-4: recorded configs and the
search space keep the old lane layout and both-or-neither staging, TN's twins the old lanes
and the longer side's operand staged or none; the header's geometry, built
for the host (tests/kmajor_lanes_check.cpp), copies every element of every k-major tile once,
walks its cursor onto every element and stores in the least shared wavefronts the bytes need,
where the old layout takes two to four times that at BK 16 and 32; the heaviest kernels
compile without spills under their register caps."""

from __future__ import annotations

import itertools
import shutil
import sys
from pathlib import Path

import pytest
from helpers import assert_compile_within

from tunedgemm import launch
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import IEEE, KernelConfig, register_cap

FAMILY = FAMILIES["simt"]
DEFAULT = FAMILY.default_config("float32").as_dict()  # 128 x 128 x 8, 8 x 8 a thread
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")


def _config(**changes: int) -> KernelConfig:
    return KernelConfig.make("simt", {**DEFAULT, **changes})


def test_recorded_configs_and_the_space_keep_the_old_copies():
    tunables = {t.name: t for t in FAMILY.tunables}
    assert (tunables["KMAJOR_LANES"].values, tunables["KMAJOR_LANES"].absent) == ((0,), 0)
    assert tunables["REG_TRANSPOSE"].values == (0,)
    recorded = FAMILY.recorded({k: v for k, v in DEFAULT.items() if k != "KMAJOR_LANES"})
    assert recorded["KMAJOR_LANES"] == 0
    assert all(c["KMAJOR_LANES"] == 0 and c["REG_TRANSPOSE"] in (0, 1)
               for c in FAMILY.space("float32", IEEE))  # fmt: skip
    for twin in simt.LAYOUT_TWINS[(True, False)]:
        assert "KMAJOR_LANES" not in twin
        assert twin["REG_TRANSPOSE"] in (0, simt.REG_TRANSPOSE_LONGER_SIDE)


def test_the_family_allows_the_new_values_and_no_others():
    for lanes, reg in itertools.product((0, *simt.KMAJOR_LANES_ON),
                                        (0, 1, *simt.REG_TRANSPOSE_ONE_OPERAND,
                                         simt.REG_TRANSPOSE_LONGER_SIDE)):  # fmt: skip
        assert not FAMILY.violations(_config(KMAJOR_LANES=lanes, REG_TRANSPOSE=reg), "float32")
    assert FAMILY.violations(_config(KMAJOR_LANES=2), "float32")
    assert FAMILY.violations(_config(REG_TRANSPOSE=5), "float32")


def test_the_tunables_reach_the_kernel_as_defines():
    defines = launch.plan(_config(KMAJOR_LANES=1, REG_TRANSPOSE=2), "float32", True, False,
                          True).defines  # fmt: skip
    assert ("KMAJOR_LANES", 1) in defines and ("REG_TRANSPOSE", 2) in defines


def _bank_rows(tmp_path: Path) -> list[dict[str, int]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import kmajor_banks

    return kmajor_banks.bank_table(tmp_path)


@needs_gxx
def test_the_lane_layout_covers_walks_and_stores_in_the_least_wavefronts(tmp_path):
    rows = _bank_rows(tmp_path)
    # every BK x block size, each with the tile heights and vector widths it splits evenly
    assert {(r["BK"], r["THREADS"]) for r in rows} == set(
        itertools.product((8, 16, 32), (64, 128, 256, 512)))
    assert {r["W"] for r in rows} == {1, 4}
    for r in rows:
        assert r["covered"] and r["walked"], r
        assert r["new"] == r["ideal"] <= r["old"], r
    # what it is for: k-rows 8 apart shared banks in the old layout
    worst = {bk: max(r["old"] / r["ideal"] for r in rows if r["BK"] == bk) for bk in (8, 16, 32)}
    assert worst == {8: 1, 16: 2, 32: 4}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_the_heaviest_kernels_compile_without_spills(tmp_path):
    """TN with both operands through registers is the heaviest variant; the round tile (three
    blocks an SM) staging one operand, the other from cursors, has the least room."""
    round_tile = {**DEFAULT, **simt.ROUND_TILES[0], **simt.LOOP_TWIN, "KMAJOR_LANES": 1}
    groups = [[_config(**simt.LOOP_TWIN, KMAJOR_LANES=1, REG_TRANSPOSE=1)],
              [KernelConfig.make("simt", {**round_tile, "REG_TRANSPOSE": r, "ASYNC_CURSOR": 1})
               for r in simt.REG_TRANSPOSE_ONE_OPERAND]]  # fmt: skip
    for i, configs in enumerate(groups):
        for config in configs:
            assert not FAMILY.violations(config, "float32"), config
        cap = register_cap(FAMILY.threads(configs[0].as_dict()), configs[0]["MIN_BLOCKS"])
        (tmp_path / str(i)).mkdir()
        assert_compile_within([(c, 1, 0, 1) for c in configs], "float32", cap, tmp_path / str(i))
