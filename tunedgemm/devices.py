"""The GPUs host calls may spread over: TUNEDGEMM_DEVICES, and the GPUs this process sees."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from . import settings

DEVICES_ENV = "TUNEDGEMM_DEVICES"  # "all" (default) or CUDA ordinals such as "0,1"


@dataclass(frozen=True)
class Gpu:
    """A GPU by its CUDA ordinal in this process (after CUDA_VISIBLE_DEVICES renumbers)."""

    index: int
    name: str
    compute_capability: tuple[int, int]

    def __str__(self) -> str:
        major, minor = self.compute_capability
        return f"{self.index}: {self.name} (sm {major}.{minor})"


def requested(text: str | None = None) -> tuple[int, ...] | None:
    """The ordinals TUNEDGEMM_DEVICES (or `text`) names, in its order; None for all GPUs.

    ValueError, naming the variable, for anything but "all" or distinct ordinals >= 0."""
    raw = settings.raw(DEVICES_ENV) if text is None else text
    if raw is None or raw.strip().lower() in ("", "all"):
        return None
    try:
        ordinals = tuple(int(part) for part in raw.split(","))
    except ValueError:
        ordinals = ()
    if not ordinals or min(ordinals) < 0 or len(set(ordinals)) != len(ordinals):
        raise ValueError(
            f"{DEVICES_ENV} must be 'all' or distinct GPU numbers such as 0,1; got {raw!r}"
        )
    return ordinals


@functools.lru_cache(maxsize=1)
def visible() -> tuple[Gpu, ...]:
    """Every GPU the CUDA driver shows this process; none without PyCUDA or a driver."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "":
        return ()
    try:
        import pycuda.driver as drv

        drv.init()
        found = [drv.Device(i) for i in range(drv.Device.count())]
        return tuple(Gpu(i, str(d.name()), tuple(d.compute_capability()))
                     for i, d in enumerate(found))  # fmt: skip
    except Exception:  # PyCUDA missing or broken, no driver: no GPU to spread over
        return ()


def selected() -> tuple[Gpu, ...]:
    """The GPUs host calls use: those TUNEDGEMM_DEVICES names (default all visible ones).

    Without any GPU this is empty whatever the variable says (the calls run on NumPy); with
    GPUs, naming one that is not there is a ValueError naming the variable."""
    wanted = requested()
    gpus = visible()
    if wanted is None or not gpus:
        return gpus
    missing = [i for i in wanted if i >= len(gpus)]
    if missing:
        raise ValueError(
            f"{DEVICES_ENV} names GPU {', '.join(map(str, missing))}, but this process sees "
            f"{len(gpus)} (ordinals 0 to {len(gpus) - 1}, after CUDA_VISIBLE_DEVICES)"
        )
    return tuple(gpus[i] for i in wanted)


def describe() -> str:
    """One line for `info`: the visible GPUs and those host calls would use."""
    gpus = visible()
    if not gpus:
        return "none visible"
    listed = ", ".join(map(str, gpus))
    setting = settings.raw(DEVICES_ENV) or "all"
    try:
        using = ", ".join(str(g.index) for g in selected())
    except ValueError as exc:
        return f"{listed}; {exc}"
    return f"{listed}; {DEVICES_ENV}={setting}: host calls may use {using}"
