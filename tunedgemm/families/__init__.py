"""Registry of kernel families, each declared once in its own module beside this one."""

from __future__ import annotations

from ..params import IEEE, KernelConfig, KernelFamily, Params
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


def recorded_config(family: str, params: Params) -> KernelConfig:
    """A config read from a table or checkpoint, its family's later tunables completed
    (KernelFamily.recorded); an unknown family's as written (its check says what is wrong)."""
    known = FAMILIES.get(family)
    return known.recorded(params) if known is not None else KernelConfig.make(family, params)
