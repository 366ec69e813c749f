"""Registry of kernel families, each declared once in its own module beside this one."""

from __future__ import annotations

from ..params import IEEE, KernelConfig, KernelFamily
from . import dmma, int8, int8_wgmma, simt, small, tf32, tf32_wgmma, tiled

FAMILIES: dict[str, KernelFamily] = {
    f.name: f
    for f in (tiled.FAMILY, simt.FAMILY, dmma.FAMILY, small.FAMILY, tf32.FAMILY, tf32_wgmma.FAMILY)
}
# The batched INT8 GEMMs of the Ozaki scheme II: their own ABI (kernels/igemm.cuh), launched
# by tunedgemm/ozaki_device.py only, so neither the tuner nor the tables see them.
OZAKI_FAMILIES: dict[str, KernelFamily] = {f.name: f for f in (int8.FAMILY, int8_wgmma.FAMILY)}


def serving(dtype: str, precision: str = IEEE) -> list[KernelFamily]:
    """The families that compute dtype in this precision mode (default: IEEE arithmetic)."""
    return [f for f in FAMILIES.values() if f.serves(dtype, precision)]


def family_of(config: KernelConfig) -> KernelFamily:
    try:
        return FAMILIES[config.family]
    except KeyError:
        raise ValueError(f"unknown kernel family {config.family!r}") from None


def ozaki_family_of(config: KernelConfig) -> KernelFamily:
    try:
        return OZAKI_FAMILIES[config.family]
    except KeyError:
        raise ValueError(f"{config.family!r} is not an Ozaki INT8 family") from None


def of_source(source: str) -> KernelFamily | None:
    """The family (of either registry) whose template is `source`."""
    return next((f for f in (*FAMILIES.values(), *OZAKI_FAMILIES.values())
                 if f.source == source), None)  # fmt: skip
