"""Which TN and TT products autotuning also times with an operand transposed first, then an own
kernel of the inner layout (tunedgemm/pretranspose.py: A -> NN or NT, B -> TT), and the
runners' geometry; their kernel compiles."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

from tunedgemm import plans, pretranspose, selection
from tunedgemm.params import KernelConfig


def _key(m: int, n: int, k: int, pair: str = "TN", dtype: str = "float32", **changes):
    ta, tb = pair[0] == "T", pair[1] == "T"
    key = plans.GemmKey(dtype, "ieee", m, n, k, ta, tb, k if ta else m, n if tb else k, m, True)
    return dataclasses.replace(key, **changes)


@pytest.mark.parametrize("pair,kind,inner", [
    ("TN", pretranspose.TransposedA, "NN"), ("TT", pretranspose.TransposedA, "NT"),
    ("TN", pretranspose.TransposedB, "TT"),
])  # fmt: skip
def test_large_products_get_runners_on_the_inner_layouts_first_own_configs(pair, kind, inner):
    dtype = "float32"
    key = _key(4096, 4096, 4096, pair, dtype=dtype)
    found = [r for r in pretranspose.candidates(key) if type(r) is kind]
    assert 1 <= len(found) <= pretranspose.NN_CONFIGS
    inner_key = pretranspose.inner_key(key, kind.OPERAND)
    assert (inner_key.trans_a, inner_key.trans_b) == (inner[0] == "T", inner[1] == "T")
    choice = selection.choose(dtype, 4096, 4096, 4096, inner_key.trans_a, inner_key.trans_b,
                              warn=False)  # fmt: skip
    own = [c for c in choice.candidates or (choice.config,) if isinstance(c, KernelConfig)]
    assert [r.config for r in found] == list(dict.fromkeys(
        plans.fastest_twin(c, inner_key) for c in own[: pretranspose.NN_CONFIGS]))
    assert all(r.runs_itself and r.key == key for r in found)
    assert all(str(r).startswith(f"{kind.OPERAND.upper()} transposed, then {inner} ")
               for r in found)  # fmt: skip
    assert all(r.compile_jobs() == ((r.config, inner_key.trans_a, inner_key.trans_b),)
               for r in found)  # fmt: skip


def test_a_tt_product_gets_no_transposed_b():
    """TT with B transposed would be TN, which stages both operands."""
    found = pretranspose.candidates(_key(4096, 4096, 4096, "TT"))
    assert found and all(type(r) is pretranspose.TransposedA for r in found)


@pytest.mark.parametrize("m,n,kinds", [
    (4096, pretranspose.FROM_N - 1, {pretranspose.TransposedB}),  # too few columns for A's
    (pretranspose.FROM_M - 1, 4096, {pretranspose.TransposedA}),  # too few rows for B's
])  # fmt: skip
def test_each_operand_has_its_own_gate(m, n, kinds):
    assert {type(r) for r in pretranspose.candidates(_key(m, n, 4096))} == kinds


@pytest.mark.parametrize("key", [
    _key(4096, 4096, 4096, "NN"), _key(4096, 4096, 4096, "NT"),
    _key(4096, 4096, 4096, aligned=False),  # (the NN kernels' 16-byte copies)
    _key(4096, 4096, 4096, batch=2),
    _key(4096, 4096, 4096, dtype="float64"),  # (dmma's TN loop: none picked where timed)
    _key(4096, 4096, 4096, precision="3xtf32"),
    _key(pretranspose.FROM_M - 1, pretranspose.FROM_N - 1, 4096),  # too few to spread it over
    _key(1024, 1024, 512),  # 1.07e9 flops: under FROM_FLOPS
])  # fmt: skip
def test_no_runners_elsewhere(key):
    assert pretranspose.candidates(key) == ()


@pytest.mark.parametrize("m,dtype,ld", [(1000, "float32", 1000), (1001, "float32", 1004),
                                         (1001, "float64", 1002), (3, "float64", 4)])
@pytest.mark.parametrize("pair", ["TN", "TT"])
def test_the_workspace_keeps_16_byte_rows_and_the_inner_key_reads_it(m, dtype, ld, pair):
    key = _key(m, 2048, 4096, pair, dtype=dtype)
    assert pretranspose.workspace_ld(key) == ld
    inner = pretranspose.inner_key(key)
    assert (inner.trans_a, inner.trans_b, inner.lda) == (False, key.trans_b, ld)
    assert (inner.m, inner.n, inner.k, inner.ldb, inner.ldc) == (m, 2048, 4096, key.ldb, key.ldc)


@pytest.mark.parametrize("n,dtype,ld", [(1000, "float32", 1000), (1001, "float32", 1004),
                                         (1001, "float64", 1002), (3, "float64", 4)])
def test_b_s_workspace_keeps_16_byte_rows_and_the_tt_key_reads_it(n, dtype, ld):
    key = _key(2048, n, 4096, "TN", dtype=dtype)
    assert pretranspose.workspace_ld(key, "b") == ld
    inner = pretranspose.inner_key(key, "b")
    assert (inner.trans_a, inner.trans_b, inner.ldb) == (True, True, ld)
    assert (inner.m, inner.n, inner.k, inner.lda, inner.ldc) == (2048, n, 4096, key.lda, key.ldc)


def test_runners_compare_by_what_they_run_and_name_their_kernels():
    key = _key(4096, 4096, 4096)
    config, fallback = selection.default_config("float32"), selection.default_config("float32")
    one, two = (pretranspose.TransposedA(key, config, fallback) for _ in range(2))
    assert one == two and hash(one) == hash(two) and len({one, two}) == 1
    assert one != pretranspose.TransposedA(_key(4096, 4096, 2048), config, fallback)
    assert one.compile_jobs() == ((config, False, False),)
    other = pretranspose.TransposedB(key, config, fallback)
    assert other != one and len({one, other}) == 2
    assert other.compile_jobs() == ((config, True, True),)


def test_plans_time_them_with_the_tables_candidates_and_launch_them_as_they_are():
    key = _key(4096, 4096, 4096)
    found = pretranspose.candidates(key)
    assert found and set(found) <= set(plans._composed(key))
    assert plans.launcher(key, found[0]) is found[0]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("element", ["float", "double"])
def test_the_transpose_kernel_compiles_without_spills(element, tmp_path):
    from helpers import assert_no_spills, compile_report

    report = compile_report(pretranspose.SOURCE, {"ELEM_T": element}, tmp_path)
    assert "transpose" in report
    assert_no_spills(report, element)


def test_where_the_workspace_does_not_fit_the_default_config_runs_the_product_directly(
        monkeypatch):  # fmt: skip
    from tunedgemm import cuda, table

    key = _key(4096, 4096, 4096)
    config, fallback = selection.default_config("float32"), selection.default_config("float32")
    runner = pretranspose.TransposedA(key, config, fallback)
    # (its launchers built without a GPU: neither runs here)
    monkeypatch.setattr(pretranspose.compiler, "raw_function", lambda *args: 0)
    monkeypatch.setattr(pretranspose._driver, "Launcher", lambda *args: object())
    launched = []

    def launcher(k, c):
        return lambda *args: launched.append((k, c, args))

    monkeypatch.setattr(cuda, "allocate_if_free", lambda nbytes: None)
    monkeypatch.setattr(plans, "launcher", launcher)
    with pytest.warns(table.TableWarning, match="ran it directly"):
        runner(1, 2, 3, 1.0, 0.0, 0)
    assert launched == [(key, fallback, (1, 2, 3, 1.0, 0.0, 0))]


def test_allocate_if_free_gives_none_for_want_of_memory_and_raises_other_faults(monkeypatch):
    from tunedgemm import cuda

    class MemoryError(Exception):  # (named as pycuda.driver's)
        pass

    def short(nbytes):
        raise MemoryError("out of memory")

    monkeypatch.setattr(cuda, "allocate", short)
    assert cuda.allocate_if_free(1 << 30) is None

    def broken(nbytes):
        raise RuntimeError("context lost")

    monkeypatch.setattr(cuda, "allocate", broken)
    with pytest.raises(RuntimeError, match="context lost"):
        cuda.allocate_if_free(1)


def test_gpu_backend_runs_a_composed_runner_given_as_the_config():
    """What a plan ran may be handed back as the config (as verify and demo do): a composed
    runner runs itself on the form's addresses."""
    from tunedgemm import gpu_backend
    from tunedgemm._layout import BlasForm

    class Runner:
        runs_itself = True

        def __init__(self):
            self.calls = []

        def __call__(self, *args):
            self.calls.append(args)

    form = BlasForm(True, False, 64, 64, 64, 16, 64, 32, 64, 48, 64, 4)
    runner = Runner()
    assert gpu_backend.run(form, np.dtype(np.float32), 2.0, 0.5, runner) is runner
    assert runner.calls == [(16, 32, 48, 2.0, 0.5, 0)]
