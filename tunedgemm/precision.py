"""The dtypes tunedgemm computes in and the precision modes of their products, declared once.

A precision mode says what arithmetic a product uses: "ieee" is the dtype's own (the
default, as NumPy and cuBLAS compute); "tf32" rounds float32 operands to TF32 (10-bit
mantissa) on the tensor cores; "3xtf32" splits each float32 operand into two TF32 parts and
keeps float32-level accuracy on the tensor cores; "ozaki" (float32 and float64) emulates the
dtype's own accuracy with INT8 tensor-core products of residues (Ozaki scheme II,
tunedgemm/ozaki.py), and "ozaki-N" does so with N moduli (an expert knob). Users spell it
as PyTorch's `torch.set_float32_matmul_precision` and JAX's `default_matmul_precision` are spelled:

    sgemm(1.0, a, b, precision="3xtf32")      # one call
    with tunedgemm.precision("tf32"): ...     # a block of code (this thread / task)
    tunedgemm.set_precision("3xtf32")         # the process (else TUNEDGEMM_PRECISION)

The setting, context and environment variable are defaults for float32 products; an
explicit `precision=` that does not apply to the call's dtype (tf32 for float64) is a
ValueError. NumPy (small host calls, no GPU) always computes in IEEE arithmetic, which is at
least as accurate as every mode.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import settings


@dataclass(frozen=True)
class DType:
    """A dtype tunedgemm computes in: its name, NumPy dtype, C type and launch codes."""

    name: str
    numpy: np.dtype
    c_type: str
    scalar_code: str  # PyCUDA's prepare code of its scalars
    kernel_code: int  # the DTYPE define of the kernel templates

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize


@dataclass(frozen=True)
class Mode:
    """A precision mode: which dtypes it serves and what it means."""

    name: str
    dtypes: tuple[str, ...]
    help: str


DTYPES: dict[str, DType] = {
    "float32": DType("float32", np.dtype(np.float32), "float", "f", 0),
    "float64": DType("float64", np.dtype(np.float64), "double", "d", 1),
}
IEEE = "ieee"
OZAKI = "ozaki"
MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode(IEEE, ("float32", "float64"), "the dtype's own arithmetic (as NumPy and cuBLAS)"),
        Mode("tf32", ("float32",), "float32 operands rounded to TF32 (10-bit mantissa) on "
             "tensor cores, float32 accumulation"),
        Mode("3xtf32", ("float32",), "float32 operands split into two TF32 parts (3 tensor-core "
             "products), float32-level accuracy"),
        Mode(OZAKI, ("float32", "float64"), "Ozaki scheme II: the dtype's accuracy by INT8 "
             "tensor-core products of residues and the CRT; 'ozaki-N' sets N moduli"),
    )
}

_context: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "tunedgemm_precision", default=None
)
_process: list[str | None] = [None]  # set_precision's value (None: the environment's)


def dtype_info(dtype: np.dtype | str) -> DType:
    """The registry entry of a GEMM dtype; ValueError naming the accepted ones otherwise."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    try:
        return DTYPES[name]
    except KeyError:
        raise ValueError(
            f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}"
        ) from None


def check_mode(mode: str) -> str:
    """mode, checked against the registry (ValueError naming the accepted ones); "ozaki-N"
    comes back as "ozaki-N" with N in 1..ozaki.MAX_COUNT, written without leading zeros."""
    from .ozaki import MAX_COUNT

    if isinstance(mode, str):
        lowered = mode.lower()
        if lowered in MODES:
            return lowered
        prefix, _, count = lowered.partition("-")
        if prefix == OZAKI and count.isdigit() and 1 <= int(count) <= MAX_COUNT:
            return f"{OZAKI}-{int(count)}"
    raise ValueError(f"precision must be one of {', '.join(MODES)} or {OZAKI}-N with N in "
                     f"1..{MAX_COUNT}, got {mode!r}")  # fmt: skip


def base_mode(mode: str) -> str:
    """The registry entry of a checked mode: "ozaki" for "ozaki-N", else mode itself."""
    return OZAKI if mode.startswith(OZAKI + "-") else mode


def moduli_count(mode: str, dtype: str) -> int | None:
    """How many moduli a checked mode uses for dtype (None: not an Ozaki mode)."""
    if base_mode(mode) != OZAKI:
        return None
    if mode == OZAKI:
        from .ozaki import default_count

        return default_count(DTYPES[dtype].numpy)
    return int(mode.partition("-")[2])


def ozaki_summary(mode: str, count: int, fallback: str) -> str:
    """What an Ozaki mode runs, for explain(): the emulation with `count` moduli, and where a
    call goes that it cannot hold (`fallback`, e.g. "IEEE arithmetic: cuBLAS")."""
    return (f"{mode}: Ozaki scheme II with {count} moduli (INT8 tensor-core products of "
            f"residues, CRT); a call with Inf or NaN in A or B, or exponents of A or B spread "
            f"too widely for {count} moduli, runs in {fallback}")  # fmt: skip


def set_precision(mode: str | None) -> None:
    """The process's default precision of float32 products (None: TUNEDGEMM_PRECISION's)."""
    _process[0] = None if mode is None else check_mode(mode)


def get_precision(_get: Any = _context.get, _process: list[str | None] = _process) -> str:
    """The default precision of float32 products here: the innermost `precision()` block,
    else set_precision's, else TUNEDGEMM_PRECISION's, else "ieee"."""
    return _get() or _process[0] or settings.get("TUNEDGEMM_PRECISION")


@contextlib.contextmanager
def precision(mode: str) -> Iterator[None]:
    """Within the block (this thread or asyncio task), float32 products default to mode."""
    token = _context.set(check_mode(mode))
    try:
        yield
    finally:
        _context.reset(token)


def resolve(mode: str | None, dtype: str) -> str:
    """The mode a call of dtype runs in: an explicit mode must serve dtype (ValueError
    otherwise); a default that does not serve dtype (tf32 for float64) leaves it IEEE."""
    if mode is None:
        default = get_precision()
        return default if dtype in MODES[base_mode(default)].dtypes else IEEE
    mode = check_mode(mode)
    if dtype not in MODES[base_mode(mode)].dtypes:
        serving = ", ".join(m for m, d in MODES.items() if dtype in d.dtypes)
        raise ValueError(
            f"precision={mode!r} does not apply to {dtype} (it serves "
            f"{', '.join(MODES[base_mode(mode)].dtypes)}); {dtype} takes: {serving}"
        )
    return mode
