"""tunedgemm as a drop-in for scipy.linalg.blas.sgemm / dgemm and np.matmul."""

import warnings

import numpy as np

import tunedgemm
from tunedgemm import dgemm, matmul, sgemm

# Without a GPU, tunedgemm says once that NumPy computes. Keep that a message even where
# warnings are errors (python -W error): the example runs either way.
warnings.filterwarnings("default", category=tunedgemm.NumpyFallbackWarning)

rng = np.random.default_rng(0)
a = rng.standard_normal((300, 200), dtype=np.float32)
b = rng.standard_normal((250, 200), dtype=np.float32)

x = sgemm(1.0, a, b, trans_b=1)  # a @ b.T
print("sgemm:", x.shape, x.dtype, "max error vs NumPy:", np.abs(x - a @ b.T).max())

c = np.ones((300, 250), order="F")
dgemm(0.5, a, b, beta=2.0, c=c, trans_b=1, overwrite_c=1)  # in place: c = 0.5 a b^T + 2 c
print("dgemm in place:", np.allclose(c, 0.5 * (a.astype(float) @ b.T) + 2.0, atol=1e-4))

batch = matmul(rng.standard_normal((4, 30, 20)), rng.standard_normal((20, 10)))
print("batched matmul:", batch.shape)
print("backend:", tunedgemm.info()["backend"], "-", tunedgemm.info()["backend_reason"])
