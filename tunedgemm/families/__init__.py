"""Registry of kernel families, each declared once in its own module beside this one."""

from __future__ import annotations

from ..params import KernelConfig, KernelFamily
from . import dmma, simt, tiled

FAMILIES: dict[str, KernelFamily] = {f.name: f for f in (tiled.FAMILY, simt.FAMILY, dmma.FAMILY)}


def family_of(config: KernelConfig) -> KernelFamily:
    try:
        return FAMILIES[config.family]
    except KeyError:
        raise ValueError(f"unknown kernel family {config.family!r}") from None
