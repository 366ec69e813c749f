"""Kernel source + defines -> compiled PyCUDA function, cached on disk and memoised per context."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from . import cuda

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
    text = (kernels_dir() / name).read_text().replace("#pragma once\n", "")
    return _INCLUDE.sub(lambda m: source_text(m.group(1)), text)


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
        mod = SourceModule(
            source_text(source), options=options(defines), no_extern_c=True, arch=cuda.arch()
        )
        _memo[key] = mod
    return mod


def function(source: str, defines: Mapping[str, Any], name: str) -> Any:
    return module(source, defines).get_function(name)
