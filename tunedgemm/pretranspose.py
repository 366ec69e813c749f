"""TN products as A transposed into a workspace, then an own NN kernel: a candidate that
autotuning times.

At TN both operands are k-contiguous, so simt's kernel stages both through registers to
transpose them into shared memory (REG_TRANSPOSE=1), where NN stages one. The same large
tiles ran 7-9% slower at TN than at NN (gpu_session.sh tn-large, H200, 2026-12-02 06:00 UTC,
launch level, cuBLAS us / ours: 256 x 128 at 4096^3 2851 against 2653, at 7110x1102x3327 1192
against 1095). Transposing A (m x k) costs about 8 m k bytes of memory traffic, against
2 m n k flops for the product: under 5% of the product's time from n of about 1000. So
for large enough TN products (FROM_N, FROM_FLOPS) autotuning also times, for each of the
first NN_CONFIGS own configs that the table offers at the same shape as NN (their twins
first), the product as:

1. ``transpose`` (kernels/transpose.cu): op(A) = A^T into a column-major m x k workspace whose
   leading dimension keeps 16-byte rows, from the scratch pool;
2. the NN config's launches on (workspace, B, C), as a plan runs them.

The bits are the NN kernel's on A^T (tests/gpu/test_pretranspose_gpu.py), the same from run
to run. Where the workspace does not fit, the family's default config runs the TN product
directly (warned once).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _driver, compiler, cuda
from .params import KernelConfig

SOURCE = "transpose.cu"
TILE, ROWS = 32, 8  # the kernel's tile and block rows (TILE x ROWS threads)
GRID_Y_MAX = 65535
# Where autotuning times the transposed candidates: n (the columns of C, over which the
# transpose's cost is spread) and the product's flops at least these.
FROM_N, FROM_FLOPS = 1024, 2e9
NN_CONFIGS = 2  # of the NN table's own candidates (each one compile more, as NN)
MODES = ("ieee",)
ALIGN_BYTES = 16


def candidates(key: Any) -> tuple[TransposedA, ...]:
    """The transposed runners autotuning may time for a plan's key: TN, one product in IEEE
    float32 or float64, aligned operands (the NN kernels' 16-byte copies), at least FROM_N
    columns and FROM_FLOPS of work."""
    if not (key.trans_a and not key.trans_b) or key.batch != 1 or key.precision not in MODES:
        return ()
    if key.dtype not in ("float32", "float64") or not key.aligned:
        return ()
    if key.n < FROM_N or 2.0 * key.m * key.n * key.k < FROM_FLOPS:
        return ()
    from . import selection

    inner = nn_key(key)
    choice = selection.choose(key.dtype, key.m, key.n, key.k, False, False, warn=False)
    own = [c for c in choice.candidates or (choice.config,) if isinstance(c, KernelConfig)]
    configs = [_fastest_twin(c, inner) for c in own[:NN_CONFIGS]]
    fallback = selection.default_config(key.dtype)
    return tuple(TransposedA(key, c, fallback) for c in dict.fromkeys(configs))


def _fastest_twin(config: KernelConfig, inner: Any) -> KernelConfig:
    """config's first twin (the faster main loop with the same bits) where its family has
    one that its constraints allow, else config."""
    from . import plans

    twins = plans.with_twins((config,), inner.dtype, inner)[1:]
    return twins[0] if twins else config


def workspace_ld(key: Any) -> int:
    """The workspace's leading dimension: m, rounded up to keep rows 16-byte aligned."""
    per = ALIGN_BYTES // np.dtype(key.dtype).itemsize
    return -(-key.m // per) * per


def nn_key(key: Any) -> Any:
    """The NN product the transposed runner launches: the key with A^T in the workspace."""
    import dataclasses

    return dataclasses.replace(key, trans_a=False, lda=workspace_ld(key))


class TransposedA:
    """run(a, b, c, alpha, beta, stream) of one TN product: A^T into a pooled workspace, then
    the NN config's launches (runs_itself: autotuning and plans call it as it is)."""

    runs_itself = True
    __slots__ = ("_direct", "_inner", "_transpose", "config", "fallback", "key")

    def __init__(self, key: Any, config: KernelConfig, fallback: KernelConfig) -> None:
        self.key, self.config, self.fallback = key, config, fallback
        self._inner: Any = None
        self._transpose: Any = None
        self._direct: Any = None

    def compile_jobs(self) -> tuple[tuple[KernelConfig, bool, bool], ...]:
        """(config, trans_a, trans_b) of the own kernels it launches, for a parallel
        precompile."""
        return ((self.config, False, False),)

    def _ready(self) -> None:
        from . import plans

        defines = {"ELEM_T": "double" if self.key.dtype == "float64" else "float"}
        function = compiler.raw_function(SOURCE, defines, "transpose")
        self._transpose = _driver.Launcher(function, "iiPiPi", (TILE, ROWS, 1), 0)
        self._inner = plans.launcher(nn_key(self.key), self.config)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        if self._inner is None:
            self._ready()
        key = self.key
        ldw = workspace_ld(key)
        try:
            buffer = cuda.allocate(np.dtype(key.dtype).itemsize * ldw * key.k)
        except Exception as exc:  # pycuda.driver.MemoryError: the workspace does not fit now
            if type(exc).__name__ != "MemoryError":
                raise
            self._run_directly(a, b, c, alpha, beta, stream)
            return
        try:
            # A is stored k x m (lda); its transpose, m x k, goes to the workspace.
            grid = (-(-key.k // TILE), min(-(-key.m // TILE), GRID_Y_MAX), 1)
            self._transpose.launch(grid, stream, (key.k, key.m, a, key.lda, int(buffer), ldw))
            self._inner(int(buffer), b, c, alpha, beta, stream)
        finally:  # back to the pool once the stream has passed what was queued
            cuda.release_after([buffer], stream)

    def _run_directly(self, a: int, b: int, c: int, alpha: float, beta: float,
                      stream: int) -> None:  # fmt: skip
        """The TN product by the family's default config, for a call whose workspace finds no
        device memory (warned once)."""
        from . import plans, table

        table.warn_once(f"a TN product through a transposed A needs {workspace_ld(self.key)} "
                        f"x {self.key.k} elements of device memory, which is short: "
                        f"{self.fallback} ran it directly")  # fmt: skip
        if self._direct is None:
            self._direct = plans.launcher(self.key, self.fallback)
        self._direct(a, b, c, alpha, beta, stream)

    def _identity(self) -> tuple[Any, ...]:
        return (self.key, self.config, self.fallback)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TransposedA) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        return f"A transposed, then NN {self.config}"

    __repr__ = __str__
