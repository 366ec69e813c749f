"""c passed as a or b too (in place, overwrite_c=1): BLAS must not write an operand it still
reads, so every host route gives the product of the operands as they were before the call."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import uniform

import tunedgemm
from tunedgemm import _host_blas

scipy_blas = pytest.importorskip("scipy.linalg.blas")


@pytest.fixture(params=["blas", "numpy"])
def host_blas(request):
    _host_blas.use_scipy(request.param == "blas")
    yield
    _host_blas.use_scipy(True)


@pytest.mark.filterwarnings("ignore::tunedgemm.NumpyFallbackWarning")
@pytest.mark.parametrize("n", [8, 300])
@pytest.mark.parametrize("order", ["F", "C"])
@pytest.mark.parametrize("alias", ["a", "b"])
@pytest.mark.parametrize("name,dtype", [("sgemm", np.float32), ("dgemm", np.float64)])
def test_c_that_is_also_an_operand(host_blas, rng, n, order, alias, name, dtype):
    a, b = uniform(rng, (n, n), dtype, order), uniform(rng, (n, n), dtype, order)
    c = a if alias == "a" else b
    a0, b0 = a.astype(np.float64), b.astype(np.float64)
    expected = 1.5 * (a0 @ b0) + 0.5 * (a0 if alias == "a" else b0)
    got = getattr(tunedgemm, name)(1.5, a, b, beta=0.5, c=c, overwrite_c=1)
    tol = (1e-5 if dtype == np.float32 else 1e-13) * n
    assert np.max(np.abs(got - expected)) <= tol * np.max(np.abs(expected))


@pytest.mark.parametrize("alias", ["a", "b"])
def test_the_wrappers_refuse_an_out_that_is_an_operand(rng, alias):
    """scipy.linalg.blas's wrappers (the route without the C extension) leave such a call to
    NumPy, as the C route does."""
    into = _host_blas._through_wrappers({np.dtype(np.float64): scipy_blas.dgemm})
    a, b = uniform(rng, (64, 64), np.float64, "F"), uniform(rng, (64, 64), np.float64, "F")
    out = a if alias == "a" else b
    before = out.copy()
    assert into(1.0, a, b, 1.0, out, 0, 0) is False
    assert np.array_equal(out, before)
    assert into(1.0, a, b, 1.0, np.asfortranarray(np.zeros((64, 64))), 0, 0) is True
