"""TN and TT products with an operand transposed into a workspace first, then an own kernel
of the layout that gives: candidates that autotuning times.

At TN both operands are k-contiguous, so simt's kernel transposes both into shared memory,
each through registers (REG_TRANSPOSE=1, both; 4, the block tile's longer side) or by 4-byte
cp.async, where NN and TT stage one and NT none.
The same large tiles ran 5-9% slower at TN than at NN, and TT's 5-8% slower than NT's
(gpu_session.sh tn-large, H200, 2026-12-02 06:00 and 06:14 UTC, launch level, best split,
us: 256 x 128 at 4096^3 TN 2774, NN 2615, TT 2735, NT 2578). Transposing an operand costs
about 8 bytes an element of memory traffic (float32), against 2 m n k flops for the product:
A (m x k) about 5% of the product's time at n of 1000, B (k x n) the same at m of 1000. So
for large enough products (FROM_FLOPS) autotuning also times, for each of the first
NN_CONFIGS own configs that the table offers at the inner layout and shape (their twins
first), the product as:

1. ``transpose`` (kernels/transpose.cu) of the operand into a column-major workspace whose
   leading dimension keeps 16-byte rows, from the scratch pool: op(A) = A^T (m x k) where
   n >= FROM_N, TN -> NN and TT -> NT (TransposedA); B^T (n x k) where m >= FROM_M, TN -> TT
   (TransposedB: at TN's large-m shapes TT's own kernels ran up to 8% faster than TN's,
   gpu_session.sh layout-routes, H200, 2026-12-04 17:07 UTC; through the call, transpose
   and all, 12998x584x5749 ran 2% faster in the pass where autotuning picked it,
   probe_pretranspose.py 21:07 UTC; TT -> TN would stage both);
2. the config's launches on the workspace and the other operand as it was, as a plan runs
   them.

float32 only (DTYPES): dmma's kernel keeps either operand orientation in shared memory as it
comes (k-contiguous and mn-contiguous rows: kernels/dgemm_mma.cu), and at three
float64 TN shapes (3297x2367x1173, 7110x1102x3327, 4096^3) autotuning picked no transposed
runner (probe_pretranspose.py, H200, 2026-12-02 06:10 UTC); the runners themselves take
either. The bits are that kernel's on the transposed operand
(tests/gpu/test_pretranspose_gpu.py), the same from run to run. Where the workspace does not
fit, the family's default config runs the product directly (warned once).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _driver, compiler, cuda
from .params import KernelConfig

SOURCE = "transpose.cu"
TILE, ROWS = 32, 8  # the kernel's tile and block rows (TILE x ROWS threads)
GRID_Y_MAX = 65535
# Where autotuning times the transposed candidates: the product's flops at least FROM_FLOPS,
# and the dimension of C over which the transpose's cost is spread, n for A and m for B, at
# least FROM_N and FROM_M. FROM_N was 1024 until A's runner, timed from 512, ran
# 6906x530x1593 TN 4.3% faster (335.7 -> 321.3 us) and left 3000x700x2000 and
# 12998x584x5749 within 1% (probe_pretranspose.py --from-n 512, H200, 2026-12-04 21:07 UTC);
# at 256 it had been picked at none of five shapes (2026-12-02).
FROM_N, FROM_M, FROM_FLOPS = 512, 1024, 2e9
NN_CONFIGS = 2  # of the table's own candidates at the inner layout (one compile more each)
MODES, DTYPES = ("ieee",), ("float32",)
ALIGN_BYTES = 16


def candidates(key: Any) -> tuple[Transposed, ...]:
    """The transposed runners autotuning may time for a plan's key: TN or TT (B too at TN),
    one product in IEEE float32 (DTYPES), aligned operands (the inner kernels' 16-byte
    copies), at least FROM_FLOPS of work and FROM_N columns (A) or FROM_M rows (B)."""
    if not key.trans_a or key.batch != 1 or key.precision not in MODES:
        return ()
    if key.dtype not in DTYPES or not key.aligned or 2.0 * key.m * key.n * key.k < FROM_FLOPS:
        return ()
    found: tuple[Transposed, ...] = ()
    if key.n >= FROM_N:
        found += _runners(TransposedA, key)
    if not key.trans_b and key.m >= FROM_M:
        found += _runners(TransposedB, key)
    return found


def _runners(kind: type[Transposed], key: Any) -> tuple[Transposed, ...]:
    """kind's runners on the first NN_CONFIGS own configs the table offers at the inner
    layout and the key's shape, each as its fastest twin."""
    from . import plans, selection

    inner = inner_key(key, kind.OPERAND)
    choice = selection.choose(key.dtype, key.m, key.n, key.k, inner.trans_a, inner.trans_b,
                              warn=False)  # fmt: skip
    own = [c for c in choice.candidates or (choice.config,) if isinstance(c, KernelConfig)]
    configs = [plans.fastest_twin(c, inner) for c in own[:NN_CONFIGS]]
    fallback = selection.default_config(key.dtype)
    return tuple(kind(key, c, fallback) for c in dict.fromkeys(configs))


def _transposed_rows(key: Any, operand: str) -> int:
    """The rows of the operand's transpose in the workspace: m for A, n for B."""
    return key.m if operand == "a" else key.n


def workspace_ld(key: Any, operand: str = "a") -> int:
    """The workspace's leading dimension: the transpose's rows (m for A, n for B), rounded
    up to keep rows 16-byte aligned."""
    per = ALIGN_BYTES // np.dtype(key.dtype).itemsize
    return -(-_transposed_rows(key, operand) // per) * per


def inner_key(key: Any, operand: str = "a") -> Any:
    """The product the transposed runner launches: the key with A^T in the workspace (NN or
    NT), or with B^T there (TT)."""
    import dataclasses

    if operand == "a":
        return dataclasses.replace(key, trans_a=False, lda=workspace_ld(key, "a"))
    return dataclasses.replace(key, trans_b=True, ldb=workspace_ld(key, "b"))


class Transposed:
    """run(a, b, c, alpha, beta, stream) of one product with OPERAND ("a" or "b") transposed
    into a pooled workspace first, then the config's launches in the inner layout
    (runs_itself: autotuning and plans call it as it is)."""

    runs_itself = True
    OPERAND = ""
    __slots__ = ("_direct", "_grid", "_inner", "_ldw", "_transpose", "_workspace_bytes",
                 "config", "fallback", "key")  # fmt: skip

    def __init__(self, key: Any, config: KernelConfig, fallback: KernelConfig) -> None:
        self.key, self.config, self.fallback = key, config, fallback
        self._inner: Any = None
        self._transpose: Any = None
        self._direct: Any = None

    def inner(self) -> Any:
        """The key of the product launched on the workspace."""
        return inner_key(self.key, self.OPERAND)

    def compile_jobs(self) -> tuple[tuple[KernelConfig, bool, bool], ...]:
        """(config, trans_a, trans_b) of the own kernels it launches, for a parallel
        precompile."""
        inner = self.inner()
        return ((self.config, inner.trans_a, inner.trans_b),)

    def _ready(self) -> None:
        from . import plans

        defines = {"ELEM_T": "double" if self.key.dtype == "float64" else "float"}
        function = compiler.raw_function(SOURCE, defines, "transpose")
        self._transpose = _driver.Launcher(function, "iiPiPi", (TILE, ROWS, 1), 0)
        self._inner = plans.launcher(self.inner(), self.config)
        # The same every call: the workspace, and the transpose's grid over the operand as
        # stored (k x rows).
        key, rows = self.key, _transposed_rows(self.key, self.OPERAND)
        self._ldw = workspace_ld(key, self.OPERAND)
        self._workspace_bytes = np.dtype(key.dtype).itemsize * self._ldw * key.k
        self._grid = (-(-key.k // TILE), min(-(-rows // TILE), GRID_Y_MAX), 1)

    def __call__(self, a: int, b: int, c: int, alpha: float, beta: float, stream: int) -> None:
        if self._inner is None:
            self._ready()
        key = self.key
        buffer = cuda.allocate_if_free(self._workspace_bytes)
        if buffer is None:  # the workspace does not fit now
            self._run_directly(a, b, c, alpha, beta, stream)
            return
        try:
            # The operand is stored k x rows (its leading dimension); its transpose, rows x k,
            # goes to the workspace.
            rows = _transposed_rows(key, self.OPERAND)
            source, ld = (a, key.lda) if self.OPERAND == "a" else (b, key.ldb)
            self._transpose.launch(self._grid, stream,
                                   (key.k, rows, source, ld, int(buffer), self._ldw))  # fmt: skip
            if self.OPERAND == "a":
                self._inner(int(buffer), b, c, alpha, beta, stream)
            else:
                self._inner(a, int(buffer), c, alpha, beta, stream)
        finally:  # back to the pool once the stream has passed what was queued
            cuda.release_after([buffer], stream)

    def _run_directly(self, a: int, b: int, c: int, alpha: float, beta: float,
                      stream: int) -> None:  # fmt: skip
        """The product by the family's default config, for a call whose workspace finds no
        device memory (warned once)."""
        from . import plans, table

        size = f"{workspace_ld(self.key, self.OPERAND)} x {self.key.k}"
        table.warn_once(f"a product through a transposed {self.OPERAND.upper()} needs {size} "
                        f"elements of device memory, which is short: {self.fallback} ran it "
                        "directly")  # fmt: skip
        if self._direct is None:
            self._direct = plans.launcher(self.key, self.fallback)
        self._direct(a, b, c, alpha, beta, stream)

    def _identity(self) -> tuple[Any, ...]:
        return (self.OPERAND, self.key, self.config, self.fallback)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Transposed) and self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def __str__(self) -> str:
        inner = self.inner()
        layout = f"{'T' if inner.trans_a else 'N'}{'T' if inner.trans_b else 'N'}"
        return f"{self.OPERAND.upper()} transposed, then {layout} {self.config}"

    __repr__ = __str__


class TransposedA(Transposed):
    """A^T into the workspace, then NN (from TN) or NT (from TT)."""

    OPERAND = "a"
    __slots__ = ()


class TransposedB(Transposed):
    """B^T into the workspace, then TT (from TN)."""

    OPERAND = "b"
    __slots__ = ()
