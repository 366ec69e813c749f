"""Precision modes: the same product in IEEE arithmetic, 3xTF32, TF32 and by Ozaki emulation.

On a GPU each mode runs as docs/precision.md describes, and plan.explain() says what ran (for
"ozaki": the emulation, or IEEE arithmetic where that was faster or the guard fell back).
Without a GPU every mode computes in IEEE arithmetic on NumPy, which is at least as accurate.
"""

import warnings

import numpy as np

import tunedgemm

warnings.filterwarnings("default", category=tunedgemm.NumpyFallbackWarning)

rng = np.random.default_rng(0)
a = rng.uniform(-1, 1, (256, 1024))
b = rng.uniform(-1, 1, (1024, 192))
wide_a, wide_b = a.astype(np.longdouble), b.astype(np.longdouble)
exact = wide_a @ wide_b  # long double: a reference for float64 products too
scale = np.abs(wide_a) @ np.abs(wide_b)

for dtype, modes in ((np.float32, ("ieee", "3xtf32", "tf32", "ozaki")),
                     (np.float64, ("ieee", "ozaki"))):  # fmt: skip
    x, y = a.astype(dtype), b.astype(dtype)
    for mode in modes:
        c = tunedgemm.matmul(x, y, precision=mode)
        error = float(np.median(np.abs(c - exact) / scale))
        print(f"{np.dtype(dtype).name} {mode:>7}: median |C - AB| / (|A||B|) = {error:.1e}")

# A mode for a block of code, and what a plan of device arrays would run (on a GPU):
with tunedgemm.precision("3xtf32"):
    print("default mode in this block:", tunedgemm.get_precision())
print(tunedgemm.explain(8192, 8192, 8192, "float64", precision="ozaki"))
