"""The split-K reduction's grid (launch.Plan.reduce_grid): a thread per 16 bytes of a column,
or a thread per element where that grid has fewer blocks than the GPU has SMs."""

from __future__ import annotations

import pytest

from tunedgemm import launch
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

SMS = 132


def _plan(dtype: str = "float32", aligned: bool = True, split: int = 64) -> launch.Plan:
    name = "simt" if dtype == "float32" else "dmma"
    base = FAMILIES[name].default_config(dtype).as_dict()
    return launch.plan(KernelConfig.make(name, {**base, "SPLIT_K": split}), dtype, False,
                       False, aligned)  # fmt: skip


def _blocks(threads: int) -> tuple[int, int, int]:
    return (-(-threads // launch.REDUCE_THREADS), 1, 1)


@pytest.mark.parametrize(("dtype", "vector"), [("float32", 4), ("float64", 2)])
def test_small_products_take_a_thread_per_element(dtype, vector):
    plan = _plan(dtype)
    assert plan.reduce_vector == vector
    assert plan.reduce_grid(67, 43, SMS) == _blocks(67 * 43)  # 3 (float32) blocks of 16 bytes
    assert plan.reduce_grid(67, 43, 0) == _blocks(17 * 43 if vector == 4 else 34 * 43)  # no SMs


def test_grids_that_fill_the_sms_keep_16_bytes_a_thread():
    plan = _plan()
    m = n = 2048  # 4,096 blocks of 16 bytes
    assert plan.reduce_grid(m, n, SMS) == _blocks(m * n // 4)
    edge = 4 * launch.REDUCE_THREADS * SMS  # exactly one block an SM
    assert plan.reduce_grid(edge, 1, SMS) == (SMS, 1, 1)
    fewer = 4 * launch.REDUCE_THREADS * (SMS - 1)  # one block fewer
    assert plan.reduce_grid(fewer, 1, SMS) == _blocks(fewer)


def test_unaligned_plans_are_one_element_a_thread_either_way():
    plan = _plan(aligned=False)
    assert plan.reduce_vector == 1
    assert plan.reduce_grid(67, 43, SMS) == plan.reduce_grid(67, 43, 0) == _blocks(67 * 43)


def test_switched_off_the_grid_is_the_16_byte_one(monkeypatch):
    monkeypatch.setattr(launch, "REDUCE_ONE_EACH", False)
    assert _plan().reduce_grid(67, 43, SMS) == _blocks(17 * 43)


@pytest.mark.parametrize(("dtype", "aligned", "vector"),
                         [("float32", True, 4), ("float64", True, 2), ("float32", False, 1)])
def test_templates_outside_the_families_reduce_with_the_same_vector(dtype, aligned, vector):
    """raw_plan (the panel kernel's) and plan agree on splitk_reduce's REDUCE_VEC."""
    raw = launch.raw_plan("gemm_gemv.cu", {"SPLIT_K": 2}, dtype, aligned, (256, 1, 1), (4, 32), 2)
    assert raw.reduce_vector == _plan(dtype, aligned).reduce_vector == vector
