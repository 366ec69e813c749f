"""The declaration of tunables: spaces, constraints, defaults, derived values, geometry."""

from __future__ import annotations

import pytest

from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_defaults_are_valid_and_in_space(name):
    family = FAMILIES[name]
    for dtype in family.dtypes:
        config = family.default_config(dtype)
        assert family.violations(config, dtype) == []
        assert config in set(family.space(dtype))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_tunable_has_a_default_in_the_kernel(name):
    from tunedgemm.compiler import source_text

    text = source_text(FAMILIES[name].source)
    for tunable in FAMILIES[name].tunables:
        assert f"#ifndef {tunable.name}" in text, tunable.name


def test_violations_name_the_rule():
    tiled = FAMILIES["tiled"]
    bad = KernelConfig.make("tiled", {"BM": 128, "BN": 128, "BK": 8, "TM": 3, "TN": 8})
    assert "TM divides BM" in tiled.violations(bad, "float32")
    assert tiled.violations(KernelConfig.make("tiled", {"BM": 64}), "float32")
    assert tiled.violations(tiled.default_config("float32"), "float16")


def test_config_is_frozen_hashable_printable():
    c1 = KernelConfig.make("tiled", {"TN": 4, "BM": 64})
    c2 = KernelConfig.make("tiled", {"BM": 64, "TN": 4})
    assert c1 == c2 and hash(c1) == hash(c2)
    assert str(c1) == "tiled(BM=64,TN=4)"
    with pytest.raises(AttributeError):
        c1.family = "x"  # type: ignore[misc]


def test_geometry_covers_the_matrix():
    tiled = FAMILIES["tiled"]
    config = tiled.default_config("float32")
    g = tiled.geometry(config, "float32", 1000, 129)
    assert g.grid == (8, 2, 1) and g.block == (256, 1, 1)
    assert g.smem_bytes == 4 * 8 * (129 + 129)
    assert tiled.defines(config, "float32")["THREADS"] == 256


def test_selection_honours_forced_family(monkeypatch):
    import numpy as np

    from tunedgemm import selection

    monkeypatch.setenv("TUNEDGEMM_FAMILY", "tiled")
    assert selection.choose(np.dtype(np.float64), 8, 8, 8).config.family == "tiled"
    monkeypatch.setenv("TUNEDGEMM_FAMILY", "nonesuch")
    with pytest.raises(ValueError, match="nonesuch"):
        selection.choose(np.dtype(np.float32), 8, 8, 8)
