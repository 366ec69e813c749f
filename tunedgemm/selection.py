"""Choose the kernel config for one call: a forced family, else the built-in default."""

from __future__ import annotations

import os

import numpy as np

from .families import FAMILIES
from .params import KernelConfig

# Families in order of preference per dtype; the first registered one wins. Issue 4's
# tuning table will sit in front of this fallback.
PREFERENCE = {"float32": ("simt", "tiled"), "float64": ("dmma", "tiled")}
FAMILY_ENV = "TUNEDGEMM_FAMILY"


def choose(dtype: np.dtype, m: int, n: int, k: int) -> KernelConfig:
    """The config to run for this shape (the shape is unused until the tuning table exists)."""
    name = np.dtype(dtype).name
    forced = os.environ.get(FAMILY_ENV)
    if forced:
        family = FAMILIES.get(forced)
        if family is None or name not in family.dtypes:
            raise ValueError(
                f"{FAMILY_ENV}={forced!r} names no family for {name}; "
                f"known: {sorted(f for f in FAMILIES if name in FAMILIES[f].dtypes)}"
            )
        return family.default_config(name)
    for family_name in PREFERENCE[name]:
        family = FAMILIES.get(family_name)
        if family is not None:
            return family.default_config(name)
    raise LookupError(f"no kernel family for {name}")
