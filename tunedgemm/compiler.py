"""Kernel source + defines -> compiled PyCUDA function, cached on disk and memoised per context.

The disk cache is tunedgemm's own: `kernels/` under the user's cache directory (see
tunedgemm/_userdir.py), mode 0700, passed to PyCUDA's SourceModule as cache_dir; PyCUDA keys
each entry by the source, the options and nvcc's version. A cache directory that is not the
user's own, or that others may write to, is not used (every kernel is then compiled afresh),
and entries in it that are not the user's own or are writable by others are deleted (so
rebuilt), each with a warning: a planted cubin would run as the user's code.
"""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any

from . import _userdir, cuda

_INCLUDE = re.compile(r'^#include "([\w.]+)"\s*$', re.MULTILINE)


def kernels_dir() -> Path:
    """The .cu templates: kernels/ beside the imported package in a checkout, else the package
    tunedgemm.kernels. The checkout comes first: with an editable install of another checkout
    on the path, tunedgemm.kernels resolves there, not to the sources of this one."""
    checkout = Path(__file__).resolve().parent.parent / "kernels"
    if (checkout / "common.cuh").is_file():
        return checkout
    try:
        path = Path(str(resources.files("tunedgemm.kernels")))
        if (path / "common.cuh").is_file():
            return path
    except ModuleNotFoundError:
        pass
    return checkout


@functools.cache
def source_text(name: str) -> str:
    """The template with its local includes inlined, so PyCUDA's disk cache key covers them."""
    return inline_includes(name, kernels_dir())


def inline_includes(name: str, directory: Path) -> str:
    """The template `name` in directory with its local includes inlined (uncached)."""
    text = (directory / name).read_text().replace("#pragma once\n", "")
    return _INCLUDE.sub(lambda m: inline_includes(m.group(1), directory), text)


def target_arch(source: str) -> str:
    """nvcc's target for a template on the GPU this thread works for: the GPU's architecture
    plus the suffix the template's family declares (sm_90a for wgmma)."""
    return cuda.arch() + arch_suffix(source)


def arch_suffix(source: str) -> str:
    from .families import of_source

    family = of_source(source)
    return family.arch_suffix if family is not None else ""


def options(defines: Mapping[str, Any]) -> list[str]:
    return [f"-D{k}={v}" for k, v in sorted(defines.items())] + ["-lineinfo"]


# Keyed by context as well, so a second context (or a reset one) compiles its own copy;
# pycuda's own disk cache (keyed by source, options and nvcc version) makes repeats cheap.
_memo: dict[tuple[Any, ...], Any] = {}


def module(source: str, defines: Mapping[str, Any]) -> Any:
    from pycuda.compiler import SourceModule

    key = (id(cuda.context()), source, tuple(sorted(defines.items())))
    mod = _memo.get(key)
    if mod is None:
        mod = SourceModule(source_text(source), options=options(defines), no_extern_c=True,
                           arch=target_arch(source), cache_dir=cache_dir())  # fmt: skip
        _memo[key] = mod
    return mod


@functools.cache
def cache_dir() -> str | bool:
    """The kernel cache directory, checked once per process; False (PyCUDA: no disk cache)
    where it cannot be trusted."""
    path = _userdir.private_dir(_userdir.base() / "kernels")
    if path is None:
        return False
    remove_untrusted_entries(path)
    return str(path)


def remove_untrusted_entries(path: Path, uid: int | None = None) -> list[str]:
    """Delete the entries of a cache directory that are not this user's own or that others
    may write to, with one warning; returns why each went."""
    reasons = []
    for entry in path.iterdir():
        try:
            reason = _userdir.untrusted_reason(entry, uid)
            if reason is not None:
                entry.unlink()
                reasons.append(reason)
        except OSError as exc:  # gone meanwhile, or not ours to delete: say so
            reasons.append(f"{entry}: {exc}")
    if reasons:
        warnings.warn(f"tunedgemm: kernel cache entries removed (they will be rebuilt): "
                      f"{'; '.join(reasons[:3])}{' ...' if len(reasons) > 3 else ''}",
                      RuntimeWarning, stacklevel=2)  # fmt: skip
    return reasons


def function(source: str, defines: Mapping[str, Any], name: str) -> Any:
    return module(source, defines).get_function(name)


@functools.lru_cache(maxsize=1024)
def _cubin(source: str, defines: tuple[tuple[str, Any], ...], arch: str) -> bytes:
    from pycuda.compiler import compile as compile_cubin

    # The same compilation SourceModule makes (and its disk cache entry), kept as bytes.
    return bytes(compile_cubin(source_text(source), options=options(dict(defines)),
                               no_extern_c=True, arch=arch, cache_dir=cache_dir()))  # fmt: skip


_raw: dict[tuple[Any, ...], int] = {}


def raw_function(source: str, defines: Mapping[str, Any], name: str, smem_bytes: int = 0) -> int:
    """The CUfunction handle of `name`, for launches on any stream (tunedgemm/_driver.py):
    compiled by PyCUDA as `module` compiles, loaded once per context."""
    from . import _driver

    ctx = cuda.context()
    frozen = tuple(sorted(defines.items()))
    key = (id(ctx), source, frozen, name)
    handle = _raw.get(key)
    if handle is None:
        cubin = _cubin(source, frozen, target_arch(source))
        handle = _driver.load_function(cubin, name, smem_bytes)
        _raw[key] = handle
    return handle


def precompile(configs: Iterable[Any], dtype: str, trans_a: bool, trans_b: bool, aligned: bool,
               jobs: int = 16) -> None:  # fmt: skip
    """Compile these configs' variants with nvcc running in parallel (into PyCUDA's disk cache
    and this process's memo). A failure here shows again when the config is launched."""
    from . import launch

    def one(config: Any) -> None:
        p = launch.plan(config, dtype, trans_a, trans_b, aligned)
        with contextlib.suppress(Exception):
            _cubin(p.source, p.defines, target_arch(p.source))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, configs))


def precompile_raw(jobs: Iterable[tuple[str, Mapping[str, Any]]], workers: int = 16) -> None:
    """Compile (source, defines) pairs for the current GPU with nvcc running in parallel, into
    the caches `raw_function` reads; the architecture is asked for here, in the calling
    thread (see cuda._autoprimary). A failure here shows again when the function is loaded."""
    targets = [(source, tuple(sorted(defines.items())), target_arch(source))
               for source, defines in jobs]  # fmt: skip

    def one(target: tuple[str, tuple[tuple[str, Any], ...], str]) -> None:
        with contextlib.suppress(Exception):
            _cubin(*target)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        list(pool.map(one, targets))
