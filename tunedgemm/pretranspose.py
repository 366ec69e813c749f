"""TN and TT products as A transposed into a workspace, then an own NN or NT kernel: a
candidate that autotuning times.

At TN both operands are k-contiguous, so simt's kernel stages both through registers to
transpose them into shared memory (REG_TRANSPOSE=1), where NN stages one and NT none; TT
stages A. The same large tiles ran 5-9% slower at TN than at NN, and TT's 5-8% slower than
NT's (gpu_session.sh tn-large, H200, 2026-12-02 06:00 and 06:14 UTC, launch level, best
split, us: 256 x 128 at 4096^3 TN 2774, NN 2615, TT 2735, NT 2578). Transposing A (m x k)
costs about 8 m k bytes of memory traffic (float32), against 2 m n k flops for the
product: about 5% of the product's time at n of 1000, less above. So for large enough
products with A transposed (FROM_N, FROM_FLOPS) autotuning also times, for each of the first
NN_CONFIGS own configs that the table offers at the same shape with A not transposed (their
twins first), the product as:

1. ``transpose`` (kernels/transpose.cu): op(A) = A^T into a column-major m x k workspace whose
   leading dimension keeps 16-byte rows, from the scratch pool;
2. the config's launches on (workspace, B, C), as a plan runs them, B as it was.

float32 only (DTYPES): dmma's kernel keeps either operand orientation in shared memory as it
comes (k-contiguous and mn-contiguous rows: kernels/dgemm_mma.cu), and at three
float64 TN shapes (3297x2367x1173, 7110x1102x3327, 4096^3) autotuning picked no transposed
runner (probe_pretranspose.py, H200, 2026-12-02 06:10 UTC); the runner itself takes either.
The bits are that kernel's on A^T (tests/gpu/test_pretranspose_gpu.py), the same from run to
run. Where the workspace does not fit, the family's default config runs the product
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
NN_CONFIGS = 2  # of the table's own candidates with A not transposed (one compile more each)
MODES, DTYPES = ("ieee",), ("float32",)
ALIGN_BYTES = 16


def candidates(key: Any) -> tuple[TransposedA, ...]:
    """The transposed runners autotuning may time for a plan's key: TN or TT, one product in
    IEEE float32 (DTYPES), aligned operands (the inner kernels' 16-byte copies), at least
    FROM_N columns and FROM_FLOPS of work."""
    if not key.trans_a or key.batch != 1 or key.precision not in MODES:
        return ()
    if key.dtype not in DTYPES or not key.aligned:
        return ()
    if key.n < FROM_N or 2.0 * key.m * key.n * key.k < FROM_FLOPS:
        return ()
    from . import selection

    inner = inner_key(key)
    choice = selection.choose(key.dtype, key.m, key.n, key.k, False, key.trans_b, warn=False)
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


def inner_key(key: Any) -> Any:
    """The product the transposed runner launches (NN or NT): the key with A^T in the
    workspace."""
    import dataclasses

    return dataclasses.replace(key, trans_a=False, lda=workspace_ld(key))


class TransposedA:
    """run(a, b, c, alpha, beta, stream) of one TN or TT product: A^T into a pooled workspace,
    then the config's launches as NN or NT (runs_itself: autotuning and plans call it as it
    is)."""

    runs_itself = True
    __slots__ = ("_direct", "_grid", "_inner", "_ldw", "_transpose", "_workspace_bytes",
                 "config", "fallback", "key")  # fmt: skip

    def __init__(self, key: Any, config: KernelConfig, fallback: KernelConfig) -> None:
        self.key, self.config, self.fallback = key, config, fallback
        self._inner: Any = None
        self._transpose: Any = None
        self._direct: Any = None

    def compile_jobs(self) -> tuple[tuple[KernelConfig, bool, bool], ...]:
        """(config, trans_a, trans_b) of the own kernels it launches, for a parallel
        precompile."""
        return ((self.config, False, self.key.trans_b),)

    def _ready(self) -> None:
        from . import plans

        defines = {"ELEM_T": "double" if self.key.dtype == "float64" else "float"}
        function = compiler.raw_function(SOURCE, defines, "transpose")
        self._transpose = _driver.Launcher(function, "iiPiPi", (TILE, ROWS, 1), 0)
        self._inner = plans.launcher(inner_key(self.key), self.config)
        # The same every call: the workspace, and the transpose's grid over A (k x m).
        key = self.key
        self._ldw = workspace_ld(key)
        self._workspace_bytes = np.dtype(key.dtype).itemsize * self._ldw * key.k
        self._grid = (-(-key.k // TILE), min(-(-key.m // TILE), GRID_Y_MAX), 1)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        if self._inner is None:
            self._ready()
        key = self.key
        buffer = cuda.allocate_if_free(self._workspace_bytes)
        if buffer is None:  # the workspace does not fit now
            self._run_directly(a, b, c, alpha, beta, stream)
            return
        try:
            # A is stored k x m (lda); its transpose, m x k, goes to the workspace.
            self._transpose.launch(self._grid, stream,
                                   (key.k, key.m, a, key.lda, int(buffer), self._ldw))  # fmt: skip
            self._inner(int(buffer), b, c, alpha, beta, stream)
        finally:  # back to the pool once the stream has passed what was queued
            cuda.release_after([buffer], stream)

    def _run_directly(self, a: int, b: int, c: int, alpha: float, beta: float,
                      stream: int) -> None:  # fmt: skip
        """The product by the family's default config, for a call whose workspace finds no
        device memory (warned once)."""
        from . import plans, table

        table.warn_once(f"a product through a transposed A needs {workspace_ld(self.key)} "
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
        return f"A transposed, then {'NT' if self.key.trans_b else 'NN'} {self.config}"

    __repr__ = __str__
