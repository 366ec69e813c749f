"""api.matmul's host-array GPU branch (tunedgemm/_matmul.py) with the device product stood in
by NumPy: what it returns has np.matmul's type and shape, for every operand rank."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import uniform

from tunedgemm import _matmul, backend, gpu_backend, pinned


@pytest.fixture
def gpu_branch(monkeypatch):
    """Every product goes down the GPU branch, computed by NumPy into the problem's output."""

    def gemm_into(problem, precision=None):
        a, b = problem.a, problem.b
        np.copyto(problem.out, np.matmul(a.astype(np.float64), b.astype(np.float64)),
                  casting="unsafe")  # fmt: skip

    monkeypatch.setattr(backend, "for_call", lambda *args, **kwargs: "gpu")
    monkeypatch.setattr(gpu_backend, "gemm_into", gemm_into)
    monkeypatch.setattr(pinned, "result_array", lambda *args, **kwargs: None)


@pytest.mark.parametrize("a_shape,b_shape", [((7,), (7,)), ((5, 7), (7,)), ((7,), (7, 3)),
                                             ((5, 7), (7, 3)), ((2, 5, 7), (7,)),
                                             ((7,), (2, 7, 3)), ((2, 1, 5, 7), (3, 7, 4))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_result_type_and_shape_as_np_matmul(gpu_branch, rng, a_shape, b_shape, dtype):
    a, b = uniform(rng, a_shape, dtype), uniform(rng, b_shape, dtype)
    got = _matmul.matmul(a, b)
    want = np.matmul(a, b)
    assert type(got) is type(want) and np.shape(got) == want.shape
    assert np.asarray(got).dtype == want.dtype
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert np.allclose(got, exact, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)
