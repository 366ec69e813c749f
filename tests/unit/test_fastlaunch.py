"""The C launch calls (tunedgemm/_fastlaunch.c) against stand-ins for cuLaunchKernel and
cublasLtMatmul made with ctypes: what reaches the driver is what the ctypes path passes."""

from __future__ import annotations

import ctypes
import struct

import pytest

fast = pytest.importorskip("tunedgemm._fastlaunch")

_P, _U = ctypes.c_void_p, ctypes.c_uint
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, _P, _U, _U, _U, _U, _U, _U, _U, _P,
                          ctypes.POINTER(_P), _P)  # fmt: skip
LT = ctypes.CFUNCTYPE(ctypes.c_int, *([_P] * 14), ctypes.c_size_t, _P)


def _address(function) -> int:
    return ctypes.cast(function, _P).value


def _gemm_kernel_seen(codes: str, values: tuple, grid=(3, 4, 2), stream=0xABC) -> dict:
    seen: dict = {}

    def launch(function, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        seen.update(function=function, grid=(gx, gy, gz), block=(bx, by, bz), smem=smem,
                    stream=stream, extra=extra)  # fmt: skip
        formats = ["=" + code.replace("P", "Q") for code in codes]
        seen["values"] = tuple(
            struct.unpack(f, ctypes.string_at(params[i], struct.calcsize(f)))[0]
            for i, f in enumerate(formats)
        )
        return 7

    callback = LAUNCH(launch)
    kernel = fast.Kernel(_address(callback), 0x1234, (128, 2, 1), 4096, codes)
    seen["code"] = kernel(grid, stream, values)
    return seen


def test_kernel_arguments_reach_the_driver_at_their_values():
    codes = "iiifPiPifPi"
    values = (37, 45, 67, 1.5, 1 << 40, 39, (1 << 40) + 512, 67, -0.25, 1 << 41, 37)
    seen = _gemm_kernel_seen(codes, values)
    assert seen["code"] == 7  # the driver's own return code comes back
    assert seen["function"] == 0x1234 and seen["block"] == (128, 2, 1) and seen["smem"] == 4096
    assert seen["grid"] == (3, 4, 2) and seen["stream"] == 0xABC and seen["extra"] is None
    assert seen["values"] == values


def test_kernel_double_scalars_and_legacy_stream():
    values = (1, 2, 3, 0.1, 16, 1, 32, 1, 1e-300, 48, 1)
    seen = _gemm_kernel_seen("iiidPiPidPi", values, stream=0)
    assert seen["values"] == values  # doubles exact
    assert seen["stream"] is None


def test_kernel_unsigned_and_64_bit_integers():
    values = (4_000_000_000, -(1 << 40), 1 << 63, 7)
    assert _gemm_kernel_seen("IqQi", values)["values"] == values


def test_kernel_refuses_bad_calls():
    callback = LAUNCH(lambda *args: 0)
    kernel = fast.Kernel(_address(callback), 1, (32, 1, 1), 0, "iP")
    with pytest.raises(TypeError):
        kernel((1, 1, 1), 0, (1,))  # too few values
    with pytest.raises(OverflowError):
        kernel((1, 1, 1), 0, (1 << 40, 16))  # beyond int32
    with pytest.raises(TypeError):
        kernel((1, 1, 1), 0, (1, "address"))
    with pytest.raises(ValueError):
        fast.Kernel(_address(callback), 1, (32, 1, 1), 0, "x")


class _Index:
    """An allocation object as PyCUDA's: an address through __index__."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


@pytest.mark.parametrize("is_double", [False, True])
def test_lt_matmul_passes_layouts_scalars_and_c_as_d(is_double):
    seen: dict = {}
    real = ctypes.c_double if is_double else ctypes.c_float

    def matmul(handle, desc, alpha, a, al, b, bl, beta, c, cl, d, dl, algo, ws, size, stream):
        seen.update(handle=handle, desc=desc, a=a, al=al, b=b, bl=bl, c=c, cl=cl, d=d, dl=dl,
                    algo=algo, ws=ws, size=size, stream=stream,
                    alpha=real.from_address(alpha).value, beta=real.from_address(beta).value)
        return 0  # fmt: skip

    callback = LT(matmul)
    lt = fast.LtMatmul(_address(callback), 11, 12, 13, 14, 15, 16, 4096, is_double)
    status = lt(1 << 40, _Index(1 << 41), 1 << 42, 0.1, 2.0, 1 << 43, 99)
    assert status == 0
    assert (seen["handle"], seen["desc"], seen["al"], seen["bl"], seen["cl"], seen["dl"],
            seen["algo"]) == (11, 12, 13, 14, 15, 15, 16)  # fmt: skip
    assert (seen["a"], seen["b"], seen["c"], seen["d"]) == (1 << 40, 1 << 41, 1 << 42, 1 << 42)
    assert (seen["ws"], seen["size"], seen["stream"]) == (1 << 43, 4096, 99)
    assert seen["alpha"] == real(0.1).value and seen["beta"] == 2.0
