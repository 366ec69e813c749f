"""The tf32 family's declaration: its precision modes stay out of IEEE float32 choices."""

from __future__ import annotations

import pytest

from tunedgemm import selection, table
from tunedgemm.families import FAMILIES, serving, tf32
from tunedgemm.params import IEEE, KernelConfig
from tunedgemm.tuning.space import Shape, candidates


def test_ieee_float32_never_meets_the_tf32_family():
    assert tf32.FAMILY not in serving("float32")
    assert [f.name for f in serving("float32", "3xtf32")] == ["tf32"]
    assert all(f.serves("float32") for f in serving("float32"))
    for shape in (Shape(64, 64, 64), Shape(4096, 4096, 4096), Shape(64, 64, 16384)):
        assert not [c for c in candidates("float32", shape) if c.family == "tf32"]
    assert selection.default_config("float32").family == "simt"


@pytest.mark.parametrize("precision,value", [("tf32", 0), ("3xtf32", 1)])
def test_candidates_per_precision_mode(precision, value):
    found = candidates("float32", Shape(4096, 4096, 4096), precision=precision)
    assert found and all(c.family == "tf32" and c["PRECISION"] == value for c in found)
    space = list(tf32.FAMILY.space("float32", precision))
    assert tf32.default_for(precision) in space
    assert all(tf32.FAMILY.precision_of(c.as_dict()) == precision for c in space)
    assert not candidates("float64", Shape(4096, 4096, 4096), precision=precision)


def test_defaults_and_rules():
    family = FAMILIES["tf32"]
    assert family.default_config("float32") == tf32.default_for("3xtf32")
    assert family.precisions == ("tf32", "3xtf32") and IEEE not in family.precisions
    with pytest.raises(ValueError, match="precision"):
        tf32.default_for("ieee")
    flush_in_tf32 = KernelConfig.make("tf32", {**tf32.DEFAULTS_BY_PRECISION["tf32"], "FLUSH": 1})
    assert "FLUSH in 3xtf32 mode only and always" in family.violations(flush_in_tf32, "float32")
    no_flush = KernelConfig.make("tf32", {**tf32.DEFAULTS_BY_PRECISION["3xtf32"], "FLUSH": 0})
    assert "FLUSH in 3xtf32 mode only and always" in family.violations(no_flush, "float32")
    spills = KernelConfig.make("tf32", {**tf32.DEFAULTS_BY_PRECISION["3xtf32"], "WN": 64})
    assert any("registers" in v for v in family.violations(spills, "float32"))
    assert family.violations(tf32.default_for("tf32"), "float64")


def test_the_shipped_table_holds_current_tf32_mode_entries(recwarn):
    """Tables record each family's source hash: the shipped table's tf32 and 3xtf32 entries
    (tunedgemm-tune --precision, on the H100) were tuned on today's tf32 kernel source, so
    none is stale, and loading the table warns of nothing."""
    table._cached.cache_clear()
    current = table.current()
    assert not isinstance(current, str)
    assert not [w for w in recwarn if "stale" in str(w.message)]
    shipped = table.load(table.shipped_path())
    assert shipped.header["family_hashes"]["tf32"] == table.family_hash("tf32")
    [device] = [d for d in shipped.devices if "H100" in d.name]
    for mode in ("tf32", "3xtf32"):
        for pair in ("NN", "NT", "TN", "TT"):
            assert device.entries[f"float32@{mode}/{pair}"], f"no {mode} {pair} entries"
