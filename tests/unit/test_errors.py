"""Bad input gets a ValueError or TypeError naming the argument; caller's arrays stay unchanged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import assert_gemm

import tunedgemm as tg
from tunedgemm import settings


@pytest.fixture
def arrays():
    rng = np.random.default_rng()
    return {
        "a": rng.uniform(-1, 1, (4, 5)).astype(np.float32),
        "b": rng.uniform(-1, 1, (5, 3)).astype(np.float32),
        "c": np.asfortranarray(rng.uniform(-1, 1, (4, 3)).astype(np.float32)),
    }


CASES = [
    (dict(b="bT"), ValueError, "align"),
    (dict(c="cT"), ValueError, "c has shape"),
    (dict(a="1d"), ValueError, "a must be 2-D"),
    (dict(b="3d"), ValueError, "b must be 2-D"),
    (dict(a=None), TypeError, "a must be an array"),
    (dict(b="complex"), TypeError, "b has dtype complex"),
    (dict(a="strings"), TypeError, "a has dtype"),
    (dict(alpha="x"), TypeError, "alpha"),
    (dict(alpha=None), TypeError, "alpha"),
    (dict(beta=1j), TypeError, "beta"),
    (dict(trans_a=3), ValueError, "trans_a"),
    (dict(trans_b=-1), ValueError, "trans_b"),
    (dict(trans_a="T"), TypeError, "trans_a"),
    (dict(trans_a=1.5), TypeError, "trans_a"),
    (dict(trans_b=None), TypeError, "trans_b"),
    (dict(alpha=np.ones(2)), TypeError, "alpha"),
    (dict(alpha=10**400), ValueError, "alpha"),
    (dict(overwrite_c="0"), TypeError, "overwrite_c"),
    (dict(overwrite_c=1.0), TypeError, "overwrite_c"),
]


@pytest.mark.parametrize("change,error,match", CASES)
def test_bad_input(arrays, change, error, match):
    before = {k: v.copy() for k, v in arrays.items()}
    special = {
        "bT": arrays["b"].T,
        "cT": arrays["c"].T,
        "1d": arrays["a"][0],
        "3d": arrays["b"][None],
        "complex": arrays["b"].astype(complex),
        "strings": np.array([["x"] * 5] * 4),
    }
    args = {
        "alpha": 1.0,
        "a": arrays["a"],
        "b": arrays["b"],
        "beta": 0.5,
        "c": arrays["c"],
        "trans_a": 0,
        "trans_b": 0,
        "overwrite_c": 1,
    }
    for key, value in change.items():
        args[key] = (
            special.get(value, value) if isinstance(value, str) and value in special else value
        )
    with pytest.raises(error, match=match):
        tg.sgemm(**args)
    for key, value in arrays.items():
        np.testing.assert_array_equal(value, before[key])


def test_matmul_errors():
    a = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="inner dimensions"):
        tg.matmul(a, a)
    with pytest.raises(ValueError, match="at least one dimension"):
        tg.matmul(np.float32(2), a)
    with pytest.raises(ValueError, match="broadcast"):
        tg.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(TypeError, match="None"):
        tg.matmul(None, a)
    out = np.zeros((3, 3), np.int32)
    with pytest.raises(TypeError, match="cast"):
        tg.matmul(a, a.T, out=out)
    assert not out.any()


def test_bad_backend_variable(monkeypatch, arrays):
    """An invalid setting warns (once), naming the variable, and its default (auto) applies:
    the call still gives the right result."""
    monkeypatch.setattr(settings, "_warned", set())  # warnings given earlier do not count
    monkeypatch.setattr(settings, "_parsed", {})
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "tpu")
    a, b = arrays["a"], arrays["b"]
    with pytest.warns(settings.SettingWarning, match="TUNEDGEMM_BACKEND='tpu'"):
        result = tg.sgemm(1.0, a, b)
    assert_gemm(result, 1.0, a, b, 0.0, None, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", settings.SettingWarning)  # once, not on every call
        tg.sgemm(1.0, a, b)
