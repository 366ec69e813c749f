"""The GPU backend: operands to the device in a BLAS layout, kernel choice, launch, result back."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from . import cuda, launch, plans, reference, selection, streams, table
from ._args import GemmProblem, Matrix, dtype_name
from ._layout import BlasForm, DeviceMatrix, blas_form
from .params import KernelConfig
from .precision import IEEE


def upload(arr: np.ndarray, keep: list[Any]) -> DeviceMatrix:
    """Copy a host matrix to the device as it lies in memory (C or F order), no transposes."""
    import pycuda.driver as drv

    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        arr = np.asfortranarray(arr)
    buf = cuda.allocate(arr.nbytes)
    keep.append(buf)
    if arr.nbytes:
        drv.memcpy_htod(int(buf), arr.ravel(order="K"))
    strides = tuple(s // arr.itemsize for s in arr.strides)
    return DeviceMatrix(int(buf), arr.shape, strides, arr.dtype, buf)  # type: ignore[arg-type]


def scratch(shape: tuple[int, int], dtype: np.dtype, keep: list[Any]) -> DeviceMatrix:
    """A column-major device buffer that lives as long as `keep`."""
    buf = cuda.allocate(shape[0] * shape[1] * np.dtype(dtype).itemsize)
    keep.append(buf)
    return DeviceMatrix(int(buf), shape, (1, max(1, shape[0])), np.dtype(dtype), buf)


def on_device(mat: Matrix, dtype: np.dtype, keep: list[Any], stream: Any = None) -> DeviceMatrix:
    """The operand on the device, in dtype and with a unit-stride dimension."""
    if isinstance(mat, np.ndarray):
        return upload(mat.astype(dtype, copy=False), keep)
    if mat.dtype == dtype and mat.layout() is not None:
        return mat
    dense = scratch(mat.shape, dtype, keep)
    launch.copy(mat, dense, stream)
    return dense


def gemm_into(problem: GemmProblem, config: KernelConfig | None = None, stream: Any = None,
              precision: str = IEEE) -> None:  # fmt: skip
    """Compute problem.out on the GPU. Host problems go through the pinned, overlapped
    pipeline and are complete on return; device problems are queued on `stream` (the
    caller's, bridged if foreign; default: the legacy default stream)."""
    cuda.context()
    m, n, k = problem.shape
    if m == 0 or n == 0:
        return
    operands = (problem.a, problem.b, problem.out)
    if all(isinstance(x, np.ndarray) for x in operands) and problem.alpha != 0.0 and k > 0:
        from . import pipeline

        pipeline.gemm(problem, tile_launcher(problem.dtype, config, precision))
        return
    _check_devices(problem)
    producers = _producer_streams(problem)
    if stream is None and not producers:
        # The legacy default stream, after nothing: no bridging to set up or hand back.
        _gemm_on_device(problem, config, None, precision)
        return
    call = streams.for_call(stream)
    call.after(producers)
    try:
        _gemm_on_device(problem, config, call.pycuda, precision)
    finally:
        call.finish()


def tile_launcher(dtype: np.dtype, config: KernelConfig | None = None,
                  precision: str = IEEE) -> TileLauncher:  # fmt: skip
    """The host pipeline's launcher, decided through the plans (or with `config`)."""
    return TileLauncher(np.dtype(dtype), config, precision)


class TileLauncher:
    """launch(form, alpha, beta, stream) runs one tile's product of a host call;
    reserve(form, stream, reads_c), called for each tile shape (and beta != 0 or not) before
    the first tile, allocates what those launches will need, so that running out of device
    memory stops the call before any tile reaches the caller's c."""

    def __init__(self, dtype: np.dtype, config: KernelConfig | None, precision: str) -> None:
        self.dtype, self.config, self.precision = dtype, config, precision
        # An explicit split-K config's workspace per GPU (the pipeline's worker threads each
        # run one GPU's tiles, in turn on one stream): never a buffer of another GPU's.
        self.workspaces: dict[int, Any] = {}

    def __call__(self, form: BlasForm, alpha: float, beta: float, stream: Any) -> None:
        workspace = 0
        if isinstance(self.config, KernelConfig):
            buffer = self.workspaces.get(cuda.current_ordinal())
            if buffer is not None and \
                    buffer.size >= launch.workspace_bytes(self.config, self.dtype, form):
                workspace = int(buffer)  # fmt: skip
        # The pipeline calls this from a worker thread per GPU: plans of that GPU's cache.
        run(form, self.dtype, alpha, beta, self.config, stream, self.precision, workspace,
            plans.cache_here())

    def reserve(self, form: BlasForm, stream: Any, reads_c: bool = False) -> None:
        from ._driver import stream_handle

        if self.config is None:  # the plan of launches at beta != 0 (reads_c) or at 0
            plans.current()
            handle = stream_handle(stream)
            key = plans.GemmKey.of(form, dtype_name(self.dtype), self.precision,
                                   reads_c=reads_c)  # fmt: skip
            plans.device_plan(key, form, handle, plans.cache_here()).reserve(handle)
        elif isinstance(self.config, KernelConfig):
            nbytes = launch.workspace_bytes(self.config, self.dtype, form)
            gpu = cuda.current_ordinal()
            held = self.workspaces.get(gpu)
            if nbytes > (0 if held is None else held.size):
                self.workspaces[gpu] = cuda.allocate(nbytes)


def _check_devices(problem: GemmProblem) -> None:
    """Device operands must lie on the GPU tunedgemm runs on (where more than one is seen):
    a clear error, not a launch that reads another GPU's memory."""
    if cuda.device_count() < 2:
        return
    from ._driver import device_of

    mine = cuda.ordinal()
    for name, x in (("a", problem.a), ("b", problem.b), ("c", problem.out),
                    ("c", problem.c_init)):  # fmt: skip
        if isinstance(x, DeviceMatrix) and x.shape[0] * x.shape[1] > 0:
            where = device_of(x.ptr)
            if where is not None and where != mine:
                raise ValueError(
                    f"{name} lies on GPU {where}, but tunedgemm runs on GPU {mine} in this "
                    "process (device arrays of one call must all lie on that GPU; "
                    "set CUDA_DEVICE or CUDA_VISIBLE_DEVICES to choose it)"
                )


def _producer_streams(problem: GemmProblem) -> set[int]:
    """The streams the device operands' producers named (none: all on the default stream)."""
    named = set()
    for x in (problem.a, problem.b, problem.out, problem.c_init):
        if isinstance(x, DeviceMatrix) and x.stream is not None:
            named.add(x.stream)
    return named


def _gemm_on_device(problem: GemmProblem, config: KernelConfig | None, stream: Any,
                    precision: str = IEEE) -> None:  # fmt: skip
    """The direct path: operands to the device as they are, one launch, result back."""
    dtype = problem.dtype
    keep: list[Any] = []
    a = on_device(problem.a, dtype, keep, stream)
    b = on_device(problem.b, dtype, keep, stream)
    host_out = problem.out if isinstance(problem.out, np.ndarray) else None
    if host_out is not None:
        # Uploaded only when its values are used; otherwise just a buffer of its layout.
        c = upload(host_out, keep) if problem.beta != 0.0 else _buffer_like(host_out, keep)
    else:
        assert isinstance(problem.out, DeviceMatrix)
        c = problem.out
        if problem.c_init is not None:
            launch.copy(problem.c_init, c, stream)
    target = c if c.layout() is not None else scratch(c.shape, dtype, keep)
    if target is not c and problem.beta != 0.0:
        launch.copy(c, target, stream)
    form = blas_form(a, b, target)
    run(form, dtype, problem.alpha, problem.beta, config, stream, precision)
    if target is not c:
        launch.copy(target, c, stream)
    if host_out is not None:
        import pycuda.driver as drv

        staged = np.empty(c.shape, dtype, order="F" if c.strides[0] == 1 else "C")
        if stream is not None:
            stream.synchronize()
        drv.memcpy_dtoh(staged.ravel(order="K"), c.ptr)
        np.copyto(host_out, staged)
    elif keep:
        # Scratch goes back to the pool for reuse once the work queued so far has run (an
        # event on the stream; the host does not wait).
        cuda.release_after(keep, stream)


def run(
    form: BlasForm,
    dtype: np.dtype,
    alpha: float,
    beta: float,
    config: Any = None,
    stream: Any = None,
    precision: str = IEEE,
    workspace: int = 0,
    plan_cache: Any = None,
) -> Any:
    """Run one column-major call with the given config (or cuBLAS, or a composed runner of
    the form's key: plans._composed), or with what the plan of its key chose
    (tunedgemm/plans.py; from `plan_cache`, default the process GPU's). Returns what ran: a
    KernelConfig, table.CUBLAS or a composed runner. `workspace`: for a given split-K config
    (launch.gemm)."""
    from ._driver import stream_handle

    if alpha == 0.0 or form.k == 0:
        # BLAS: with alpha == 0 (or k == 0) A and B are not read (NaN there, or an infinite
        # alpha times an empty sum, must not reach C): C = beta C.
        form, alpha = dataclasses.replace(form, k=0), 0.0
    dtype = np.dtype(dtype)
    handle = stream_handle(stream)
    if config is None:
        plans.current()
        cache = plans.device_plans if plan_cache is None else plan_cache
        key = plans.GemmKey.of(form, dtype_name(dtype), precision, reads_c=beta != 0.0)
        plan = plans.device_plan(key, form, handle, cache)
        plan.run(form.a, form.b, form.c, alpha, beta, handle)
        return plan.choice
    if getattr(config, "runs_itself", False):  # made for this form's key
        config(form.a, form.b, form.c, alpha, beta, handle)
        return config
    if config == table.CUBLAS:
        ok, why = reference.status()
        if ok:
            reference.gemm(form, dtype, alpha, beta, stream, precision)
            return config
        table.warn_once(f"the table chose cuBLAS, which is unavailable ({why}); own kernel used")
        config = selection.default_config(dtype_name(dtype), precision)
    assert isinstance(config, KernelConfig)
    launch.gemm(form, dtype, alpha, beta, config, stream, workspace)
    return config


def _buffer_like(arr: np.ndarray, keep: list[Any]) -> DeviceMatrix:
    buf = cuda.allocate(arr.nbytes)
    keep.append(buf)
    order_f = arr.flags.f_contiguous or not arr.flags.c_contiguous
    rows, cols = arr.shape
    strides = (1, max(1, rows)) if order_f else (max(1, cols), 1)
    return DeviceMatrix(int(buf), (rows, cols), strides, arr.dtype, buf)
