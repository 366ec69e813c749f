"""python -m tunedgemm doctor: check what the GPU backend needs, one piece at a time, and say
for each what to do. A report: it exits 0 without a GPU too, naming the backend that runs."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOOLKIT_ENVS = ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH")  # PyCUDA's build reads CUDA_ROOT
DEFAULT_TOOLKIT = Path("/usr/local/cuda")
INSTALL_GPU = 'pip install "tunedgemm[cuda]"  (from a checkout: pip install ".[cuda]")'


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""  # what to do when not ok


def toolkit_root() -> Path | None:
    """The CUDA toolkit's directory: CUDA_ROOT (or CUDA_HOME, CUDA_PATH), else nvcc's parent."""
    for name in TOOLKIT_ENVS:
        if os.environ.get(name):
            return Path(os.environ[name])
    nvcc = shutil.which("nvcc")
    return Path(nvcc).resolve().parent.parent if nvcc else None


def check_toolkit() -> Check:
    nvcc = shutil.which("nvcc")
    root = toolkit_root()
    header = root / "include" / "cuda.h" if root is not None else None
    set_root = [f"{n}={os.environ[n]}" for n in TOOLKIT_ENVS if os.environ.get(n)]
    where = f"nvcc {nvcc or 'not on PATH'}; {', '.join(set_root) or 'CUDA_ROOT not set'}"
    if nvcc and header is not None and header.is_file():
        return Check("CUDA toolkit", True, f"{where}; headers {header}")
    missing = "nvcc" if not nvcc else f"cuda.h (looked in {header})"
    if DEFAULT_TOOLKIT.joinpath("include", "cuda.h").is_file():
        return Check("CUDA toolkit", False, f"{where}; {missing} missing",
                     f"the toolkit is at {DEFAULT_TOOLKIT}: export CUDA_ROOT={DEFAULT_TOOLKIT} "
                     f"and PATH={DEFAULT_TOOLKIT}/bin:$PATH before installing PyCUDA")  # fmt: skip
    return Check("CUDA toolkit", False, f"{where}; {missing} missing",
                 "install the CUDA toolkit (nvcc and headers), put its bin/ on PATH and set "
                 "CUDA_ROOT to it: PyCUDA compiles against cuda.h when it installs, and "
                 "tunedgemm compiles its kernels with nvcc")  # fmt: skip


def load_driver() -> ctypes.CDLL:
    """The CUDA driver library (raises OSError where it is not installed)."""
    return ctypes.CDLL("nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1")


def check_driver() -> Check:
    try:
        driver = load_driver()
    except OSError as exc:
        return Check("CUDA driver", False, f"libcuda not loadable ({exc})",
                     "install the NVIDIA driver (a machine without an NVIDIA GPU has none: "
                     "tunedgemm computes with NumPy there)")  # fmt: skip
    code = driver.cuInit(0)
    if code != 0:
        return Check("CUDA driver", False, f"loaded, but cuInit failed with CUDA error {code}",
                     "check that a GPU is present and visible (nvidia-smi, "
                     "CUDA_VISIBLE_DEVICES) and that the driver matches its kernel module")
    version = ctypes.c_int(0)
    driver.cuDriverGetVersion(ctypes.byref(version))
    return Check("CUDA driver", True,
                 f"cuInit ok, driver API {version.value // 1000}.{version.value % 1000 // 10}")


def check_pycuda() -> Check:
    if importlib.util.find_spec("pycuda") is None:
        return Check("PyCUDA", False, "not installed",
                     f"once the toolkit and driver are in place: {INSTALL_GPU}")
    try:
        import pycuda
        import pycuda.driver  # (the compiled part: fails where the build is broken)
    except Exception as exc:
        return Check("PyCUDA", False, f"installed but not importable ({type(exc).__name__}: "
                     f"{exc})", "reinstall it against this toolkit: pip install --force-reinstall "
                     "--no-binary pycuda pycuda")  # fmt: skip
    return Check("PyCUDA", True, "version " + ".".join(map(str, pycuda.VERSION)))


def check_gpu() -> Check:
    from . import cuda

    ok, reason = cuda.status()
    return Check("GPU", ok, reason, "" if ok else "see the checks above")


def check_cublas() -> Check:
    from . import reference

    if importlib.util.find_spec("skcuda") is None:
        return Check("scikit-cuda (cuBLAS)", False, "not installed",
                     f"{INSTALL_GPU}; without it tunedgemm runs its own kernels only")
    ok, detail = reference.status()
    return Check("scikit-cuda (cuBLAS)", ok, detail,
                 "" if ok else "cuBLAS serves as reference and candidate only: tunedgemm's own "
                 "kernels run without it")  # fmt: skip


def check_extension() -> Check:
    from . import _small_host
    from .info import small_host_route

    fix = ("optional: small host calls cost about 1 us more in Python; reinstall with a C "
           "compiler and Python's headers present")  # fmt: skip
    return Check("C extension", _small_host.NATIVE, small_host_route(),
                 "" if _small_host.NATIVE else fix)


CHECKS: tuple[Callable[[], Check], ...] = (
    check_toolkit, check_driver, check_pycuda, check_gpu, check_cublas, check_extension,
)  # fmt: skip


def run_checks() -> list[Check]:
    results = []
    for check in CHECKS:
        try:
            results.append(check())
        except Exception as exc:  # a probe that breaks is a finding, not a crash
            name = check.__name__.removeprefix("check_")
            results.append(Check(name, False, f"{type(exc).__name__}: {exc}"))
    return results


def doctor() -> int:
    """Print each check and the backend that will run; 0 always (it is a report)."""
    from . import _install, backend

    print(f"tunedgemm from {_install.find().describe()}")
    for found in run_checks():
        print(f"[{'OK' if found.ok else 'missing':>7}] {found.name}: {found.detail}")
        if not found.ok and found.fix:
            print(f"          what to do: {found.fix}")
    try:
        name, why = backend.selected()
    except backend.GpuUnavailableError as exc:
        name, why = "none", str(exc)
    if name == "gpu":
        print(f"backend: GPU ({why})")
    else:
        print(f"backend: NumPy ({why}); results are right, only the speed of the GPU is "
              "missing")  # fmt: skip
    return 0
