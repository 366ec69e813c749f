"""simt's loop twin (ADVANCE=1, FMA_ORDER=1): recorded configs keep the loop they were timed
with, the search space leaves the twin's values out, and run-time autotuning times each simt
candidate's twin beside it."""

from __future__ import annotations

from helpers import shipped_configs

from tunedgemm import plans, table
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import IEEE, KernelConfig

FAMILY = FAMILIES["simt"]


def test_recorded_configs_run_the_row_by_row_loop():
    default = FAMILY.default_config("float32").as_dict()
    recorded = FAMILY.recorded({k: v for k, v in default.items() if k != "FMA_ORDER"})
    assert recorded.as_dict()["FMA_ORDER"] == 0


def test_the_search_space_leaves_the_serpentine_orders_out():
    assert all(c.as_dict()["FMA_ORDER"] == 0 for c in FAMILY.space("float32", IEEE))


def test_every_shipped_simt_config_has_its_loop_twin():
    configs = shipped_configs("simt")
    assert configs
    for config in configs:
        twin = KernelConfig.make("simt", {**config.as_dict(), **simt.LOOP_TWIN})
        assert not FAMILY.violations(twin, "float32"), (config, FAMILY.violations(twin, "float32"))


def test_autotuning_times_each_simt_candidate_with_its_loop_twin():
    default = FAMILY.default_config("float32")
    other = KernelConfig.make("simt", {**default.as_dict(), "STAGES": 2})
    twin_of = {c: KernelConfig.make("simt", {**c.as_dict(), **simt.LOOP_TWIN})
               for c in (default, other)}  # fmt: skip
    candidates = (default, table.CUBLAS, other)
    timed = plans.with_twins(candidates, "float32")
    assert timed == (*candidates, twin_of[default], twin_of[other])
    # A twin already among the candidates is not timed twice, nor given a twin of its own.
    assert plans.with_twins((twin_of[default], default), "float32") == (twin_of[default], default)
