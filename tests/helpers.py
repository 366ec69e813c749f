"""Shared helpers of the test suite: hardware probe, random inputs, the float64 reference check.

A plain module (tests/ is on sys.path through pytest's `pythonpath` setting), so that test
modules import it by name under --import-mode=importlib, where conftest.py is not importable."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from pathlib import Path
from typing import ClassVar

import numpy as np

# gpu_tests_sharded.py names each shard in this variable.
SHARD_ENV = "TUNEDGEMM_TEST_SHARD"


def precompiles_modules() -> bool:
    """Whether a GPU test module compiles all its kernels in parallel before its first test:
    not in one of gpu_tests_sharded.py's shards, which may hold a slice of a module. There each
    shard would compile the whole module's kernels, all at once: in 12 shards,
    test_twins_gpu.py and test_simt_async_cursor_gpu.py had run 43 of 146 tests after 200 s
    (seven shards none), and 54 in 110 s without those precompiles (H200, 2026-12-03). A shard
    compiles what its tests launch, as they meet it; the shards are the parallelism."""
    return os.environ.get(SHARD_ENV) is None


def gpu_available() -> bool:
    from tunedgemm import cuda

    return cuda.status()[0]


def table_configs() -> list[tuple[str, object]]:
    """(dtype, config) for every own config the shipped table can choose: each entry's best
    and its runners-up, which the wave model may pick at shapes between entries. A precision
    mode's entries ("float32@3xtf32/NN") give their dtype; the config carries the mode."""
    from tunedgemm import table

    current = table.load(table.shipped_path())
    found = set()
    for device in current.devices:
        for key, entries in device.entries.items():
            dtype = key.split("/")[0].split("@")[0]
            found |= {(dtype, config) for e in entries for config, _ in e.top}
    every = sorted(found, key=str)
    # TUNEDGEMM_TABLE_SAMPLE=N: N of them spread evenly over that order, for a short session
    # on the GPU machine (all of them are 3,000-odd compiles; the tuner verified each choice).
    wanted = int(os.environ.get("TUNEDGEMM_TABLE_SAMPLE") or 0)
    if 0 < wanted < len(every):
        return [every[i * len(every) // wanted] for i in range(wanted)]
    return every


def assert_config_result(out, alpha, a, b, beta, c, dtype, config, what: str) -> None:
    """out is right for the config's arithmetic: its precision mode's bound for the tf32
    families' configs, the dtype's IEEE tolerance for every other."""
    from tunedgemm.families import FAMILIES

    family = FAMILIES[config.family]
    mode = family.precision_of(config.as_dict()) if family.precision_of else "ieee"
    if mode in ("tf32", "3xtf32"):
        assert_tf32_mode(out, mode, alpha, a, b, beta, c, what, frobenius=False)
    else:
        assert_gemm(out, alpha, a, b, beta, c, dtype)


def uniform(rng: np.random.Generator, shape: tuple[int, ...], dtype, order: str = "C"):
    """Uniform(-1, 1) values: never zeros, signs mixed so cancellation is exercised."""
    return np.asarray(rng.uniform(-1, 1, shape), dtype=dtype, order=order)


def assert_gemm(out, alpha, a, b, beta, c, dtype) -> None:
    from tunedgemm import checks

    ok, error, tol = checks.check(out, alpha, a, b, beta, c, np.dtype(dtype))
    assert ok, f"scaled error {error:.3e} > tolerance {tol:.3e}"


def numpy_backend_for_module():
    """TUNEDGEMM_BACKEND=numpy for a module's tests, set before any cluster starts so that
    process workers inherit it (a module-scoped fixture yields from this)."""
    import pytest

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TUNEDGEMM_BACKEND", "numpy")
        yield


def dask_client(n_workers: int, processes: bool):
    """Yields a distributed Client on a LocalCluster of one-thread workers, closed after (the
    dashboard on any free port, so that two clusters at once do not compete for one)."""
    import distributed

    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=processes, dashboard_address=":0")  # fmt: skip
    with cluster, distributed.Client(cluster) as client:
        yield client


class FakeContext:
    """Stands in for pycuda.driver.Context: a context stack per thread, as PyCUDA keeps (in C++
    thread-local storage, which outlives a thread's Python state: here, keyed by thread id)."""

    stacks: ClassVar[dict[int, list]] = {}

    def __init__(self, handle):
        self.handle = handle

    @classmethod
    def stack(cls):
        return cls.stacks.setdefault(threading.get_ident(), [])

    def push(self):
        self.stack().append(self)

    @classmethod
    def pop(cls):
        cls.stack().pop()

    @classmethod
    def get_current(cls):
        return cls.stack()[-1] if cls.stack() else None


def float32_against_cublas(config, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """C = A B by a float32 kernel config (or a plan's runner: run(a, b, c, alpha, beta,
    stream) on raw addresses) and by cuBLAS SGEMM on the same device operands, C filled with
    NaN before each, so unwritten elements show (GPU tests only)."""
    import pycuda.driver as drv

    from tunedgemm import gpu_backend, launch, reference
    from tunedgemm._layout import blas_form

    keep: list = []
    da = gpu_backend.upload(np.asfortranarray(a), keep)
    db = gpu_backend.upload(np.asfortranarray(b), keep)
    dc = gpu_backend.scratch((a.shape[0], b.shape[1]), np.dtype(np.float32), keep)
    form = blas_form(da, db, dc)
    outs = []
    if callable(config):
        ours = lambda: config(form.a, form.b, form.c, 1.0, 0.0, 0)  # noqa: E731
    else:
        ours = lambda: launch.gemm(form, np.dtype(np.float32), 1.0, 0.0, config)  # noqa: E731
    for call in (ours, lambda: reference.gemm(form, np.dtype(np.float32), 1.0, 0.0)):
        drv.memcpy_htod(dc.ptr, np.full(a.shape[0] * b.shape[1], np.nan, np.float32))
        call()
        out = np.empty((a.shape[0], b.shape[1]), np.float32, order="F")
        drv.memcpy_dtoh(out.ravel(order="K"), dc.ptr)
        outs.append(out)
    return outs[0], outs[1]


def special_operands(rng: np.random.Generator, m: int, n: int, k: int):
    """Uniform float32 A (m x k) and B (k x n) with Inf, -Inf, NaN and zeros sprinkled in A,
    and Inf, -Inf, zeros and a subnormal in B (25 of each side)."""
    a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
    b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
    for x, values in ((a, [np.inf, -np.inf, np.nan, 0.0]), (b, [np.inf, -np.inf, 0.0, 1e-39])):
        x[rng.integers(0, x.shape[0], 25), rng.integers(0, x.shape[1], 25)] = rng.choice(
            np.array(values, np.float32), 25
        )
    return a, b


def assert_ieee_pattern(ours: np.ndarray, ieee: np.ndarray) -> None:
    """ours has exactly IEEE's (cuBLAS SGEMM's) NaN, Inf and -Inf elements."""
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(ieee))
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(ieee))
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(ieee))


def spread_float32(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Random signs and mantissas, exponents uniform over 2^-20..2^20."""
    return (rng.uniform(1, 2, shape) * rng.choice([-1.0, 1.0], shape)
            * 2.0 ** rng.integers(-20, 21, shape)).astype(np.float32)  # fmt: skip


def assert_error_within_2x(ours: np.ndarray, peer: np.ndarray, a: np.ndarray,
                           b: np.ndarray) -> None:  # fmt: skip
    """The median and the 99.9th percentile of |C - exact| / (|A| |B|) elementwise of ours
    are no worse than 2x the peer's (cuBLAS SGEMM's) on the same operands."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact, scale = a64 @ b64, np.abs(a64) @ np.abs(b64)
    stats = {}
    for name, out in (("ours", ours), ("cublas", peer)):
        assert np.isfinite(out).all(), f"{name}: unwritten or non-finite elements"
        rel = np.abs(out - exact) / scale
        stats[name] = (float(np.median(rel)), float(np.percentile(rel, 99.9)))
    ours_s, cublas_s = stats["ours"], stats["cublas"]
    assert ours_s[0] <= 2 * cublas_s[0], f"median {ours_s[0]:.3g} vs cuBLAS {cublas_s[0]:.3g}"
    assert ours_s[1] <= 2 * cublas_s[1], f"p99.9 {ours_s[1]:.3g} vs cuBLAS {cublas_s[1]:.3g}"


def assert_tf32_mode(out, mode: str, alpha: float, a: np.ndarray, b: np.ndarray, beta: float,
                     c, what: str, frobenius: bool = True) -> None:  # fmt: skip
    """out meets its precision mode's bound: float32's tolerance in "3xtf32", the TF32 bound
    in "tf32" (and, with frobenius, for big products with beta = 0, the Frobenius one)."""
    from tunedgemm import checks

    assert np.isfinite(out).all(), f"{what}: unwritten, NaN or Inf elements"
    if mode == "3xtf32":
        ok, error, tol = checks.check(out, alpha, a, b, beta, c, np.float32)
        assert ok, f"{what}: scaled error {error:.3e} > float32 tolerance {tol:.3e}"
        return
    exact, scale = checks.float64_reference(alpha, a, b, beta, c)
    error = checks.scaled_error(out, exact, scale)
    tol = checks.tf32_tolerance(a.shape[1])
    assert error <= tol, f"{what}: scaled error {error:.3e} > tf32 bound {tol:.3e}"
    if frobenius and out.size >= 1000 and beta == 0.0:
        norm = np.linalg.norm(out - exact) / np.linalg.norm(exact)
        assert norm <= checks.TF32_FROBENIUS, f"{what}: Frobenius error {norm:.3e}"


def compile_report(source: str, defines: dict, tmp_path: Path) -> str:
    """nvcc -cubin for sm_90 (plus the family's suffix) of a template with these defines,
    into tmp_path/kernel.cubin; ptxas's -v report (asserts that it compiled)."""
    from tunedgemm.compiler import arch_suffix, options, source_text

    src = tmp_path / "kernel.cu"
    src.write_text(source_text(source))
    result = subprocess.run(
        [
            "nvcc",
            "-cubin",
            f"-arch=sm_90{arch_suffix(source)}",
            "-Xptxas",
            "-v",
            *options(defines),
            "-o",
            str(tmp_path / "kernel.cubin"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def preprocessed(source: Path, defines: dict) -> str:
    """nvcc -E of a kernel source file with these defines, line markers and spacing aside:
    equal texts compile to the same kernel."""
    from tunedgemm.compiler import options

    done = subprocess.run(["nvcc", "-E", "-arch=sm_90", *options(defines), str(source)],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if done.returncode:
        raise RuntimeError(done.stderr)
    lines = (line for line in done.stdout.splitlines() if not line.startswith("#"))
    return re.sub(r"\s+", " ", " ".join(lines)).strip()


def assert_no_spills(report: str, label: str = "") -> None:
    """Every function of a ptxas -v report has no stack frame and no spills."""
    spills = re.findall(
        r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill", report
    )
    assert spills, report
    assert all(v == ("0", "0", "0") for v in spills), f"{label}\n{report}"


def assert_compile_within(jobs, dtype: str, cap: int, tmp_path: Path) -> None:
    """Each (config, trans_a, trans_b, aligned) of `jobs` compiled (two at a time, each in its
    own directory under tmp_path) without spills, in at most `cap` registers."""
    from concurrent.futures import ThreadPoolExecutor

    from tunedgemm.families import family_of
    from tunedgemm.launch import _defines

    def report(i_job) -> str:
        i, (config, ta, tb, aligned) = i_job
        where = tmp_path / str(i)
        where.mkdir()
        defines = _defines(config, dtype, bool(ta), bool(tb), bool(aligned))
        return compile_report(family_of(config).source, defines, where)

    jobs = list(jobs)
    with ThreadPoolExecutor(2) as pool:
        for job, text in zip(jobs, pool.map(report, enumerate(jobs)), strict=True):
            assert_no_spills(text, str(job))
            used = max(map(int, re.findall(r"Used (\d+) registers", text)))
            assert used <= cap, (job, used)


def compile_stream_k(config, dtype: str, variants, tmp_path: Path) -> list[Path]:
    """A stream-K config's template for each (trans_a, trans_b, aligned) variant into its own
    directory under tmp_path (kernel.cubin): asserts that it compiles streamk_gemm and
    streamk_fixup, no data-parallel gemm, and that nothing spills. The directories."""
    from concurrent.futures import ThreadPoolExecutor

    from tunedgemm.families import family_of
    from tunedgemm.launch import _defines

    jobs = []
    for index, (ta, tb, aligned) in enumerate(variants):
        (tmp_path / str(index)).mkdir(parents=True)
        jobs.append((_defines(config, dtype, bool(ta), bool(tb), bool(aligned)),
                     tmp_path / str(index)))  # fmt: skip
    source = family_of(config).source
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda job: compile_report(source, *job), jobs))
    for (defines, _), report in zip(jobs, reports, strict=True):
        assert "Compiling entry function 'streamk_gemm'" in report, report
        assert "Compiling entry function 'streamk_fixup'" in report, report
        assert "Compiling entry function 'gemm'" not in report, report
        assert_no_spills(report, f"{config} {defines}")
    return [work for _, work in jobs]


def run_twice(problem, config, alpha: float, beta: float, c0, launch=None):
    """Two launches of `config` on a tuner fixture problem (tunedgemm.tuning.problems), or two
    calls of launch(alpha, beta) where given, C poisoned with NaN (beta == 0) or reset to c0
    before each: the two results, for run-to-run bit-equality."""
    from tunedgemm import gpu_backend

    outs = []
    for _ in range(2):
        if c0 is None:
            problem.poison_c()
        else:
            problem.set_c(c0)
        if launch is None:
            gpu_backend.run(problem.form, problem.dtype, alpha, beta, config)
        else:
            launch(alpha, beta)
        outs.append(problem.c())
    return outs


def composed_runs(problem, runner, alpha: float, beta: float, c0, ways=(False, True)):
    """C after each run of a composed runner (plans._composed: runs_itself) on a tuner fixture
    problem, C poisoned with NaN (beta == 0) or reset to c0 before each: called directly, as
    autotuning calls it (False in `ways`), or through gpu_backend.run, as verify does (True)."""
    from tunedgemm import gpu_backend

    f, outs = problem.form, []
    for through_backend in ways:
        problem.poison_c() if c0 is None else problem.set_c(c0)
        if through_backend:
            assert gpu_backend.run(f, problem.dtype, alpha, beta, runner) is runner
        else:
            runner(f.a, f.b, f.c, alpha, beta, 0)
        outs.append(problem.c())
    return outs


def every_layout(m: int, n: int, k: int, dtype, rng):
    """Tuner fixture problems (tunedgemm.tuning.problems) of m x n x k in every transpose pair,
    with unpadded and with padded leading dimensions."""
    import itertools

    from tunedgemm.tuning import problems

    for (ta, tb), padded in itertools.product(itertools.product((False, True), repeat=2),
                                              (False, True)):  # fmt: skip
        yield problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)


def assert_stream_k_schedules(pure, hybrid, dtype: str) -> None:
    """The stream-K GPU tests' shapes exercise split tiles and the fixup on this GPU, not only
    whole tiles: `pure` (one block an SM) splits 3072x96x3072's tiles over every SM and the
    launcher asks for the workspace its schedule needs (two slots of a block tile each);
    `hybrid` runs data-parallel waves at 3000x3000x600, then splits the rest."""
    from tunedgemm import cuda, launch
    from tunedgemm.tuning import problems

    sms = cuda.sm_count()
    sched = launch.plan(pure, dtype, False, False, True).schedule(3072, 96, 3072, sms)
    assert sched.split_tiles() and sched.ctas == sms
    problem = problems.make(3072, 96, 3072, dtype, padded=True)
    tile = pure.as_dict()["BM"] * pure.as_dict()["BN"]
    assert launch.workspace_bytes(pure, problem.dtype, problem.form) == \
        2 * sched.ctas * tile * np.dtype(dtype).itemsize  # fmt: skip
    mixed = launch.plan(hybrid, dtype, False, False, True).schedule(3000, 3000, 600, sms)
    assert 0 < mixed.dp < mixed.tiles and mixed.split_tiles(), mixed


def assert_whole_tiles_match_data_parallel(config_of, dtype: str) -> None:
    """Where the stream-K blocks divide the tile count the schedule is all data-parallel, and a
    whole tile runs the data-parallel kernel's arithmetic in its k order: config_of(1) gives
    config_of(0)'s bits (1536 x 1408: 132 tiles of 128 x 128; skipped unless that is whole
    waves on this GPU)."""
    import pytest

    from tunedgemm import cuda, gpu_backend, launch
    from tunedgemm.tuning import problems

    m, n, k = 1536, 1408, 300
    sched = launch.plan(config_of(1), dtype, False, False, True).schedule(m, n, k,
                                                                        cuda.sm_count())
    if sched.dp != sched.tiles:
        pytest.skip(f"{cuda.sm_count()} SMs: {sched.tiles} tiles are not whole waves")
    problem = problems.make(m, n, k, dtype, padded=True)
    outs = []
    for stream_k in (0, 1):
        problem.poison_c()
        gpu_backend.run(problem.form, problem.dtype, 1.0, 0.0, config_of(stream_k))
        outs.append(problem.c())
    assert np.isfinite(outs[0]).all() and outs[0].tobytes() == outs[1].tobytes()


def assert_bit_equal_and_accurate(problem, config, rng, tolerance: float | None = None) -> None:
    """Two launches of `config` on a tuner fixture problem for alpha, beta = (1, 0), C poisoned
    with NaN, and (-0.75, 0.5), C drawn from rng: every element written, the two bit-equal,
    and within `tolerance` of float64 (default checks.tolerance at the problem's k)."""
    from tunedgemm import checks

    form = problem.form
    m, n, k = form.m, form.n, form.k
    bound = checks.tolerance(max(k, 1), problem.dtype) if tolerance is None else tolerance
    for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
        c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(problem.dtype)
        first, second = run_twice(problem, config, alpha, beta, c0)
        where = f"{(m, n, k, form.trans_a, form.trans_b, form.aligned(), alpha, beta)}"
        assert np.isfinite(first).all(), f"unwritten elements at {where}"
        assert first.tobytes() == second.tobytes(), f"not bit-equal at {where}"
        exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
        error = checks.scaled_error(first, exact, scale)
        assert error <= bound, f"error {error} at {where}"


def whole_c(problem) -> np.ndarray:
    """C's buffer of a tuner fixture problem (tunedgemm.tuning.problems), ldc x n, padding
    rows included."""
    import pycuda.driver as drv

    form = problem.form
    whole = np.empty((form.ldc, form.n), problem.dtype, order="F")
    drv.memcpy_dtoh(whole.ravel(order="K"), form.c)
    return whole


def precompile_variants(configs, dtype, pairs) -> None:
    """Compile the configs' kernels for these transpose pairs, aligned and not, with nvcc
    running in parallel: one at a time, a test of a few configs in every layout spent most of
    a minute in nvcc on a fresh GPU machine."""
    import itertools
    import os
    from concurrent.futures import ThreadPoolExecutor

    from tunedgemm import compiler

    if not precompiles_modules():
        return
    name = np.dtype(dtype).name   # (callers pass np.float32, a dtype or its name)
    jobs = list(itertools.product(dict.fromkeys(configs), dict.fromkeys(pairs), (False, True)))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        list(pool.map(lambda job: compiler.precompile([job[0]], name, *job[1], job[2], jobs=1),
                      jobs))  # fmt: skip


def assert_configs_agree(configs, dtype, m: int, n: int, k: int, label: str = "",
                         layouts=None) -> None:  # fmt: skip
    """Configs that must give the same bits (a tunable's variants, a family's twins), each
    on fresh operands (all four transposes, padded and not, or the ((trans_a, trans_b),
    padded) `layouts` given; beta 0 and not, C poisoned by NaN first): every element of C
    written and none of the rows between m and ldc, bit-equal to the first config's result,
    and that result within the float64 reference's k-scaled tolerance."""
    import itertools

    from tunedgemm import checks, gpu_backend
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    if layouts is None:
        layouts = itertools.product(itertools.product((False, True), repeat=2), (False, True))
    layouts = list(layouts)
    precompile_variants(configs, dtype, [pair for pair, _ in layouts])
    for (ta, tb), padded in layouts:
        problem = problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)
        for alpha, beta in ((1.0, 0.0), (-0.75, 0.5)):
            c0 = None if beta == 0 else rng.uniform(-1, 1, (m, n)).astype(dtype)
            where = f"{label}{(m, n, k, ta, tb, padded, problem.form.aligned(), alpha, beta)}"
            outs = []
            for config in configs:
                problem.poison_c()
                if c0 is not None:
                    problem.set_c(c0)  # padding rows stay NaN
                gpu_backend.run(problem.form, problem.dtype, alpha, beta, config)
                whole = whole_c(problem)
                assert np.isnan(whole[m:]).all(), f"{config} wrote past row m at {where}"
                outs.append(whole[:m])
                assert np.isfinite(outs[-1]).all(), f"unwritten elements, {config} at {where}"
                assert outs[-1].tobytes() == outs[0].tobytes(), (
                    f"{config} not bit-equal to {configs[0]} at {where}")  # fmt: skip
            exact, scale = checks.float64_reference(alpha, problem.op_a, problem.op_b, beta, c0)
            error = checks.scaled_error(outs[0], exact, scale)
            assert error <= checks.tolerance(max(k, 1), problem.dtype), f"error {error} at {where}"


def shipped_configs(family_name: str) -> set:
    """Every config of one family in the shipped table, read as the family reads a recorded
    config (tunables added since at their recorded values)."""
    import json

    from tunedgemm import table
    from tunedgemm.families import FAMILIES

    family = FAMILIES[family_name]
    found = set()

    def walk(x: object) -> None:
        if isinstance(x, dict):
            if x.get("family") == family_name and isinstance(x.get("params"), dict):
                found.add(family.recorded(x["params"]))
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads(Path(table.shipped_path()).read_text())["devices"])
    return found


# A 64 x 64 simt config with 4 k-slices: what the table chooses at small m x n with long k.
SMALL_SIMT = {"BM": 64, "BN": 64, "BK": 32, "WM": 32, "WN": 32, "TM": 8, "TN": 4, "STAGES": 3,
              "GROUP_M": 16, "SPLIT_K": 4, "MIN_BLOCKS": 2}  # fmt: skip


def small_simt(**changes: int):
    """SMALL_SIMT with changes, read as the simt family reads a recorded config."""
    from tunedgemm.families import FAMILIES

    return FAMILIES["simt"].recorded({**SMALL_SIMT, **changes})


def nn_key(m: int, n: int, k: int, dtype: str = "float32"):
    """The plan key of an NN product with unpadded leading dimensions, 16-byte aligned."""
    from tunedgemm import plans

    return plans.GemmKey(dtype, "ieee", m, n, k, False, False, m, k, m, True)


def assert_timed_beside_the_first(rule, first, key, count: int, sms: int) -> None:
    """A plans.with_* rule's `count` configs for the first own candidate are among what
    autotuning times for the key (own_candidates), and nothing is added without an own one."""
    from tunedgemm import plans, table

    found = rule((first,), key, sms)
    assert len(found) == count
    assert set(found) <= set(plans.own_candidates((table.CUBLAS, first), key))
    assert plans.own_candidates((table.CUBLAS,), key) == (table.CUBLAS,)
