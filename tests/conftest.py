"""Hardware skips in one place, the backend fixture, and which tunedgemm the tests import.

Shared helpers (assert_gemm, uniform, ...) live in tests/helpers.py."""

from __future__ import annotations

import os
import sys

# SciPy's BLAS is the tests' oracle of reference-BLAS rules at the edges (k == 0, alpha == 0:
# A and B unread). OpenBLAS 0.3.30 picks its SkylakeX kernels on AVX-512 CPUs (the 2-core
# AMD EPYC CI machine of 2026-11-25), and those compute alpha * A * B there anyway: NaN where
# reference BLAS gives 0, -0 for +0, and floating-point flags NumPy reports as warnings.
# tunedgemm follows the reference rules on every CPU; the oracle is held to kernels that do.
# (Read when NumPy and SciPy load their OpenBLAS, so before either is imported.)
if "numpy" not in sys.modules:
    os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")

import numpy as np
import pytest
from helpers import gpu_available, table_configs


def pytest_report_header(config: pytest.Config) -> str:
    """Which tunedgemm the tests import: the installed one (editable or not), or a source
    tree in front of it (then they test the tree, not what is installed)."""
    from tunedgemm import _install
    from tunedgemm.info import small_host_route

    return f"tunedgemm: {_install.find().describe()}; small host route {small_host_route()}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if gpu_available():
        return
    from tunedgemm import cuda

    skip = pytest.mark.skip(reason=f"no usable GPU: {cuda.status()[1]}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _precompiled(request: pytest.FixtureRequest) -> None:
    """With a GPU: compile every variant (transposes x alignment) of the family defaults and,
    where tests/gpu/test_shipped_table.py runs, of the configs it checks, in parallel, before
    the GPU tests run; otherwise each test compiles the kernels it first meets, one nvcc run
    at a time. TUNEDGEMM_TEST_PRECOMPILE=0 skips it (a run of a few GPU tests, on a fresh
    machine). (The table's 400-odd configs are 3,000-odd compiles: the other GPU tests do not
    wait for them.)"""
    import os

    if os.environ.get("TUNEDGEMM_TEST_PRECOMPILE") == "0":
        return
    if not any("gpu" in item.keywords for item in request.session.items) or not gpu_available():
        return
    import itertools

    from tunedgemm.compiler import precompile
    from tunedgemm.families import FAMILIES

    by_dtype: dict[str, list] = {}
    if any(item.nodeid.startswith("tests/gpu/test_shipped_table.py")
           for item in request.session.items):  # fmt: skip
        for dtype, config in table_configs():
            by_dtype.setdefault(dtype, []).append(config)
    for family in FAMILIES.values():
        for dtype in family.dtypes:
            by_dtype.setdefault(dtype, []).append(family.default_config(dtype))
    for dtype, configs in by_dtype.items():
        for ta, tb, aligned in itertools.product((False, True), repeat=3):
            precompile(sorted(set(configs)), dtype, ta, tb, aligned, jobs=os.cpu_count() or 4)


@pytest.fixture(autouse=True)
def _small_route_decides_afresh() -> None:
    """The small host route keeps the crossover sizes it first looked up; tests that pretend
    another GPU state or crossover must not meet another test's."""
    from tunedgemm import _small_host

    _small_host.forget()


@pytest.fixture(params=["numpy", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once per backend, forcing it through TUNEDGEMM_BACKEND. On the GPU, cuBLAS
    is kept out of the choices so that the whole call path runs tunedgemm's own kernels."""
    monkeypatch.setenv("TUNEDGEMM_BACKEND", request.param)
    monkeypatch.setenv("TUNEDGEMM_CUBLAS", "0")
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    """Fresh random inputs each run (the seed is printed on failure by pytest's -ra)."""
    return np.random.default_rng()


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 256 on problems of a few hundred, so every path of the host pipeline runs fast
    (GPU tests of the pipeline and of faults in it)."""
    from tunedgemm import pipeline

    monkeypatch.setattr(pipeline, "SINGLE_TILE_BYTES", 0)
    monkeypatch.setattr(pipeline, "PANEL", 256)
    monkeypatch.setattr(pipeline, "SPREAD_FROM", {})  # (several GPUs at any size)
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    monkeypatch.setenv("TUNEDGEMM_CUBLAS", "0")
