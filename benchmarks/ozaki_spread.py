"""Ozaki scheme II on inputs with spread exponents, in the NumPy reference (a development aid
for issue 17's IEEE fallback; needs no GPU).

Usage: python benchmarks/ozaki_spread.py

For uniform(-1, 1) inputs and inputs whose exponents spread over 2^-r..2^r (r = 10, 30), at
three shapes and the default moduli count and 2 and 4 more, prints the emulated product's
median and 99.9th-percentile error over NumPy's own product's (|C - AB| / (|A| |B|) against a
long-double reference; above 1: worse than native), first for the scheme alone
(guard=False), then with the accuracy guard (``tunedgemm.ozaki.unreliable``: elements whose
estimated truncation error passes a quarter unit of (|A| |B|)_ij recomputed in a wider
format), and the share of elements the guard recomputed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHAPES = ((256, 256, 16), (200, 190, 1000), (128, 128, 4096))


def errors(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    exact = np.asarray(a, np.longdouble) @ np.asarray(b, np.longdouble)
    scale = np.abs(np.asarray(a, np.longdouble)) @ np.abs(np.asarray(b, np.longdouble))
    return np.asarray(np.abs(np.asarray(c, np.longdouble) - exact) / np.maximum(scale, 1e-300),
                      np.float64)  # fmt: skip


def operands(kind: str, rng: np.random.Generator, m: int, n: int, k: int, dtype: type):
    a, b = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    if kind != "uniform":
        r = int(kind.removeprefix("spread"))
        a = a * np.exp2(rng.integers(-r, r + 1, (m, k)))
        b = b * np.exp2(rng.integers(-r, r + 1, (k, n)))
    return a.astype(dtype), b.astype(dtype)


def main() -> int:
    from tunedgemm import ozaki

    rng = np.random.default_rng(0)
    print(f"{'dtype':8} {'inputs':9} {'m x n x k':>14} {'moduli':>6} {'bare median':>11} "
          f"{'p99.9':>9} {'guarded median':>14} {'p99.9':>6} {'recomputed':>10}")  # fmt: skip
    for dtype in (np.float64, np.float32):
        base = ozaki.default_count(np.dtype(dtype))
        for kind in ("uniform", "spread10", "spread30"):
            for m, n, k in SHAPES:
                a, b = operands(kind, rng, m, n, k, dtype)
                native = errors(a, b, (a @ b).astype(dtype))
                for count in (base, base + 2, base + 4):
                    bare = errors(a, b, ozaki.gemm(a, b, count, guard=False).result)
                    guarded = ozaki.gemm(a, b, count)
                    mine = errors(a, b, guarded.result)
                    ratios = [np.quantile(x, q) / np.quantile(native, q)
                              for x in (bare, mine) for q in (0.5, 0.999)]  # fmt: skip
                    print(f"{dtype.__name__:8} {kind:9} {f'{m}x{n}x{k}':>14} {count:6d} "
                          f"{ratios[0]:11.2f} {ratios[1]:9.3g} {ratios[2]:14.2f} "
                          f"{ratios[3]:6.2f} {guarded.recomputed / (m * n):10.1%}",
                          flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
