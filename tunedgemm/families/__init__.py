"""Registry of kernel families, each declared once in its own module beside this one."""

from __future__ import annotations

from ..params import IEEE, KernelConfig, KernelFamily
from . import dmma, simt, tf32, tf32_wgmma, tiled

FAMILIES: dict[str, KernelFamily] = {
    f.name: f
    for f in (tiled.FAMILY, simt.FAMILY, dmma.FAMILY, tf32.FAMILY, tf32_wgmma.FAMILY)
}


def serving(dtype: str, precision: str = IEEE) -> list[KernelFamily]:
    """The families that compute dtype in this precision mode (default: IEEE arithmetic)."""
    return [f for f in FAMILIES.values() if f.serves(dtype, precision)]


def family_of(config: KernelConfig) -> KernelFamily:
    try:
        return FAMILIES[config.family]
    except KeyError:
        raise ValueError(f"unknown kernel family {config.family!r}") from None
