"""dmma SPLITK_FUSED on the CPU: the family's constraint, the fused twins autotuning times
beside the table's split-K candidates, and the bound on one launch's tile flags."""

from __future__ import annotations

import pytest

from tunedgemm import launch, plans, table
from tunedgemm.families import FAMILIES, dmma
from tunedgemm.params import KernelConfig

FAMILY = FAMILIES["dmma"]
BASE = FAMILY.default_config("float64").as_dict()


def _config(**changes: int) -> KernelConfig:
    return KernelConfig.make("dmma", {**BASE, **changes})


def test_fused_split_k_needs_split_k_and_the_direct_epilogue():
    fused = dmma.SPLITK_FUSED_ON[0]
    assert FAMILY.violations(_config(SPLIT_K=2, SPLITK_FUSED=fused), "float64") == []
    assert FAMILY.violations(_config(SPLIT_K=1, SPLITK_FUSED=fused), "float64")
    assert FAMILY.violations(_config(SPLIT_K=2, EPILOGUE=1, SPLITK_FUSED=fused), "float64")


def test_recorded_configs_run_the_reduce_launch():
    assert FAMILY.recorded({k: v for k, v in BASE.items() if k != "SPLITK_FUSED"}) == _config()
    assert _config().as_dict()["SPLITK_FUSED"] == 0


def test_autotuning_times_each_dmma_split_k_candidate_with_its_fused_twin():
    split2, split4, whole = _config(SPLIT_K=2), _config(SPLIT_K=4), _config()
    simt = FAMILIES["simt"].default_config("float32")
    candidates = (split2, table.CUBLAS, whole, simt, split4, split2)
    timed = plans.with_twins(candidates, "float64")
    assert timed[: len(candidates)] == candidates  # the table's order first, untouched
    fused = [c for c in timed[len(candidates):] if c.as_dict()["SPLITK_FUSED"]]
    # Each split one's fused twin, with the copies of load_tile and with ADVANCE's cursors.
    assert fused == [_config(SPLIT_K=2, SPLITK_FUSED=1),
                     _config(SPLIT_K=2, SPLITK_FUSED=1, ADVANCE=1),
                     _config(SPLIT_K=4, SPLITK_FUSED=1),
                     _config(SPLIT_K=4, SPLITK_FUSED=1, ADVANCE=1)]  # fmt: skip
    assert not any(c.as_dict()["SPLITK_FUSED"]
                   for c in plans.with_twins((whole,), "float64"))  # fmt: skip


def test_one_fused_launch_has_at_most_the_flags_of_a_stream():
    with pytest.raises(ValueError, match="SPLITK_FUSED=0"):
        launch.splitk_flags(0, launch.SPLITK_FLAG_TILES + 1)
