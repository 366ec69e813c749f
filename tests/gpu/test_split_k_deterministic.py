"""Split-K is deterministic (issue 15): every split-K config the shipped table can choose (and
the tf32 family's with each declared split, and the small family's k split across a block's
thread groups) gives bit-equal results on two runs of the same inputs, is accurate against
float64 with C poisoned by NaN beforehand, and a plan shared by threads on streams of their
own gives each the bits of a call made alone. Zero products with a negative alpha come out
+0, as SciPy's BLAS gives them:

    python -m pytest -q -m gpu tests/gpu/test_split_k_deterministic.py
"""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
from helpers import assert_bit_equal_and_accurate, table_configs

from tunedgemm import checks, gpu_backend, plans
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

# Small m x n with long k (split-K's shapes), odd edges, and k too short for every slice to
# get a k-tile (empty slices must still write their zeros).
SHAPES = [(37, 45, 1037), (64, 96, 2048), (33, 29, 20), (130, 7, 515), (322, 57, 5243)]


# The wider splits autotuning adds where a grid leaves SMs idle (plans.with_wave_filling_splits),
# on each family's default, with its twins.
WIDE_SPLITS = (8, plans.MAX_SPLIT_K)
# And a whole-round one, not a power of two (plans.with_whole_round_splits: 7 slices of 36
# tiles fill 264 block slots).
ROUND_SPLIT = 7


def _power_of_two(config: KernelConfig) -> bool:
    split = config.as_dict().get("SPLIT_K", 1)
    return split & (split - 1) == 0


def _split_configs() -> list[tuple[str, KernelConfig]]:
    found = [(d, c) for d, c in table_configs() if c.as_dict().get("SPLIT_K", 1) > 1]
    tf32 = FAMILIES["tf32"]
    for split in (2, 4):
        base = tf32.default_config("float32").as_dict()
        found.append(("float32", KernelConfig.make("tf32", {**base, "SPLIT_K": split})))
    for name, dtype in (("simt", "float32"), ("dmma", "float64"), ("tf32", "float32"),
                        ("tf32_wgmma", "float32")):  # fmt: skip
        family = FAMILIES[name]
        for split in (*WIDE_SPLITS, ROUND_SPLIT):
            wide = KernelConfig.make(name, {**family.default_config(dtype).as_dict(),
                                            "SPLIT_K": split})  # fmt: skip
            found += [(dtype, c) for c in plans.with_twins((wide,), dtype)]
    # The round tiles (plans.with_round_tiles: dmma's and simt's 128 x 64 blocks, simt's
    # two-warp 64 x 64) at whole-round splits that are not powers of two.
    for name, dtype in (("dmma", "float64"), ("simt", "float32")):
        family = FAMILIES[name]
        for tile in family.round_tiles:
            for split in (3, ROUND_SPLIT):
                params = {**family.default_config(dtype).as_dict(), **tile, "SPLIT_K": split}
                found.append((dtype, KernelConfig.make(name, params)))
    # The small family splits k across a block's thread groups, summed in a fixed order.
    small = FAMILIES["small"]
    for dtype in small.dtypes:
        found.append((dtype, small.default_config(dtype)))
        found += [(dtype, c) for c in small.space(dtype) if c["KSPLIT"] == 8][:1]
    return found


_ALL = _split_configs()
CONFIGS = [c for c in _ALL if _power_of_two(c[1])]
# Splits that are not powers of two (the table's, from autotuning's whole-round splits, the
# round tiles' and ROUND_SPLIT's), in a test of their own: a short GPU session can run them alone.
ROUND_CONFIGS = [c for c in _ALL if not _power_of_two(c[1])]


def _tolerance(config: KernelConfig, k: int, dtype: np.dtype) -> float:
    if config.family in ("tf32", "tf32_wgmma"):  # modes that round operands (docs/precision.md)
        return checks.tf32_tolerance(k)
    return checks.tolerance(k, dtype)


@pytest.mark.parametrize("dtype,config", CONFIGS, ids=str)
def test_split_k_is_bit_equal_run_to_run_and_accurate(dtype, config):
    _check_bit_equal_and_accurate(dtype, config)


@pytest.mark.parametrize("dtype,config", ROUND_CONFIGS, ids=str)
def test_whole_round_splits_are_bit_equal_run_to_run_and_accurate(dtype, config):
    _check_bit_equal_and_accurate(dtype, config)


def _check_bit_equal_and_accurate(dtype: str, config: KernelConfig) -> None:
    from tunedgemm.tuning import problems

    rng = np.random.default_rng()
    transposes = itertools.cycle(itertools.product((False, True), repeat=2))
    for (m, n, k), (ta, tb), padded in itertools.product(SHAPES, [next(transposes)],
                                                         (False, True)):  # fmt: skip
        problem = problems.make(m, n, k, dtype, ta, tb, rng, padded=padded)
        assert_bit_equal_and_accurate(problem, config, rng, _tolerance(config, k, problem.dtype))


@pytest.mark.parametrize("dtype,config", [CONFIGS[0], CONFIGS[-1],
                                          *[c for c in CONFIGS if c[0] == "float64"][:1]],
                         ids=str)  # fmt: skip
def test_a_split_k_plan_shared_by_threads_on_their_own_streams(dtype, config):
    """The plan's workspace is one per stream: 4 threads, each on its own stream with its own
    operands, run one plan at once, and each gets the bits its operands give alone."""
    import pycuda.driver as drv

    from tunedgemm import cuda
    from tunedgemm.tuning import problems

    cuda.context()
    m, n, k = 70, 90, 3000
    rng = np.random.default_rng()
    work = [problems.make(m, n, k, dtype, False, True, rng) for _ in range(4)]
    form = work[0].form
    key = plans.GemmKey.of(form, np.dtype(dtype).name, "ieee")
    assert all(plans.GemmKey.of(p.form, np.dtype(dtype).name, "ieee") == key for p in work)
    run = plans.launcher(key, config)

    def once(p, stream) -> np.ndarray:
        p.poison_c()
        run(p.form.a, p.form.b, p.form.c, 1.25, 0.0, stream)
        drv.Context.synchronize()
        return p.c()

    alone = [once(p, 0) for p in work]
    results: dict[int, list[bytes]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(len(work))

    def worker(i: int) -> None:
        try:
            cuda.ensure_current(cuda.context())
            stream = drv.Stream()
            p = work[i]
            start.wait()
            got = []
            for _ in range(5):
                p.poison_c()
                run(p.form.a, p.form.b, p.form.c, 1.25, 0.0, stream.handle)
                stream.synchronize()
                got.append(p.c().tobytes())
            results[i] = got
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    for i, p in enumerate(work):
        assert all(got == alone[i].tobytes() for got in results[i])
        exact, scale = checks.float64_reference(1.25, p.op_a, p.op_b, 0.0, None)
        assert checks.scaled_error(alone[i], exact, scale) <= _tolerance(config, k, p.dtype)


@pytest.mark.parametrize("dtype,config", [
    ("float32", FAMILIES["simt"].default_config("float32")), CONFIGS[0],
    ("float64", FAMILIES["dmma"].default_config("float64")),
    *[c for c in CONFIGS if c[0] == "float64"][:1],
    ("float32", FAMILIES["tiled"].default_config("float32")), CONFIGS[-1]], ids=str)  # fmt: skip
def test_zero_products_with_negative_alpha_are_plus_zero(dtype, config):
    """dgemm(-1.0, zeros, ones) is +0.0 in SciPy (C = 0 + alpha * sum): so on the GPU too,
    aligned and not, split-K or not; with beta != 0, -0 * ... + beta * c is left as it is."""
    import pycuda.driver as drv

    from tunedgemm.tuning import problems

    for padded in (False, True):
        problem = problems.make(70, 33, 300, dtype, False, False, padded=padded)
        drv.memcpy_htod(problem.form.a, np.zeros(problem.form.lda * 300, dtype))
        problem.poison_c()
        gpu_backend.run(problem.form, problem.dtype, -1.0, 0.0, config)
        out = problem.c()
        assert (out == 0).all() and not np.signbit(out).any(), f"-0 in the result ({padded=})"
