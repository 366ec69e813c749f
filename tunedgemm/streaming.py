"""2-D host copies with streaming stores (tunedgemm/_streamcopy.c), or NumPy's where not."""

from __future__ import annotations

from typing import Any

import numpy as np

_native: list[Any] = []  # [the extension module, or None where it is not built]


def _extension() -> Any:
    if not _native:
        try:
            from . import _streamcopy
        except ImportError:
            _streamcopy = None  # type: ignore[assignment]
        _native.append(_streamcopy)
    return _native[0]


def available() -> bool:
    return _extension() is not None


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[...] = src: with streaming stores where both are 2-D, of one shape and dtype, with
    lines along the same axis (unit stride there), and the extension is built; otherwise
    np.copyto. The two must not overlap."""
    native = _extension()
    if native is not None and dst.ndim == 2 and dst.shape == src.shape and dst.dtype == src.dtype:
        size = dst.itemsize
        for inner in (1, 0):
            if dst.strides[inner] == size and src.strides[inner] == size:
                outer = 1 - inner
                line = dst.shape[inner] * size
                native.copy_2d(dst.ctypes.data, dst.strides[outer], src.ctypes.data,
                               src.strides[outer], line, dst.shape[outer])  # fmt: skip
                return
    np.copyto(dst, src)
