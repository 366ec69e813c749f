"""Raster twins (issue 15): autotuning times the first own candidate's main-loop twin with the
blocks taking C's tiles in each other declared order (GROUP_M), which leaves every tile's sums
as they were, except for stream-K schedules, whose split points follow that order."""

from __future__ import annotations

import pytest

from tunedgemm import cuda, plans, table
from tunedgemm.families import FAMILIES, dmma, simt
from tunedgemm.params import IEEE, KernelConfig

SMS = 132


def _key(m: int, n: int, k: int, dtype: str) -> plans.GemmKey:
    return plans.GemmKey(dtype, IEEE, m, n, k, False, False, m, k, m, True)


@pytest.mark.parametrize("name,dtype", [("dmma", "float64"), ("simt", "float32")])
def test_every_raster_twin_is_the_loop_twin_in_a_declared_order(name, dtype):
    family = FAMILIES[name]
    loop = {"dmma": {"ADVANCE": 1}, "simt": simt.LOOP_TWIN}[name]
    orders = {t.name: t.values for t in family.tunables}["GROUP_M"]
    assert family.raster_twins
    for changes in family.raster_twins:
        assert set(changes) == {*loop, "GROUP_M"} and changes["GROUP_M"] in orders
        assert all(changes[k] == v for k, v in loop.items())


def test_a_candidate_gets_its_loop_twin_in_every_declared_order():
    default = FAMILIES["dmma"].default_config("float64")  # GROUP_M = 8
    other = KernelConfig.make("dmma", {**default.as_dict(), "STAGES": 4})
    twin = {**default.as_dict(), "ADVANCE": 1}
    timed = plans.with_raster_twins((default,), "float64")
    # (The one at its own order is its plain main-loop twin, which with_twins times too;
    # own_candidates times it once.)
    assert timed == (default, *(KernelConfig.make("dmma", {**twin, "GROUP_M": g}) for g in (1, 8)))
    assert plans.with_raster_twins((table.CUBLAS,), "float64") == (table.CUBLAS,)
    assert len(plans.with_raster_twins((default, other), "float64")) == 6


def test_stream_k_schedules_get_none():
    default = FAMILIES["simt"].default_config("float32").as_dict()
    streamed = KernelConfig.make("simt", {**default, **simt.STREAM_K_CHANGES, "STREAM_K": 1})
    assert plans.with_raster_twins((streamed,), "float32") == (streamed,)


def test_own_candidates_time_the_first_ones_raster_twins(monkeypatch):
    monkeypatch.setattr(cuda, "sm_count", lambda: SMS)
    default = FAMILIES["simt"].default_config("float32")  # GROUP_M = 16
    second = KernelConfig.make("simt", {**default.as_dict(), "STAGES": 2})
    timed = plans.own_candidates((default, second), _key(4096, 4096, 256, "float32"))
    # (in canonical form, where LANE_PAIRS is inert)
    canonical = FAMILIES["simt"].canonical
    twin = KernelConfig.make("simt", {**default.as_dict(), **simt.LOOP_TWIN, "GROUP_M": 1})
    grid = canonical(twin)
    assert grid in timed
    assert canonical(KernelConfig.make("simt", {**second.as_dict(), **simt.LOOP_TWIN,
                                                "GROUP_M": 1})) not in timed  # fmt: skip
    monkeypatch.setattr(plans, "RASTERS_OF", 0)
    assert grid not in plans.own_candidates((default, second), _key(4096, 4096, 256, "float32"))


def test_dmma_raster_twins_keep_the_cursors_main_loop():
    assert all(t["ADVANCE"] in dmma.ADVANCE_ON for t in dmma.RASTER_TWINS)
