"""A product whose last block column or row is nearly empty, as whole tiles and a narrow panel
(tunedgemm/edge_panel.py): where autotuning would time it, and, with the two launches
emulated on the host through the runner's own offsets, that the parts cover C exactly once
in every layout."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tunedgemm import edge_panel, plans, selection
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig


def _key(m: int, n: int, k: int, pair: str = "TT", dtype: str = "float32", pad: int = 0,
         **changes):  # fmt: skip
    ta, tb = pair[0] == "T", pair[1] == "T"
    lda, ldb = (k if ta else m) + pad, (n if tb else k) + pad
    key = plans.GemmKey(dtype, "ieee", m, n, k, ta, tb, lda, ldb, m + pad, True)
    return dataclasses.replace(key, **changes)


@pytest.fixture
def enabled(monkeypatch):
    monkeypatch.setattr(edge_panel, "ENABLED", True)


@pytest.mark.parametrize("m,n,tile,found", [
    (7557, 390, (256, 128), [("n", 384)]),            # 6 of 128 columns in the last block column
    (7557, 390, (128, 128), [("n", 384), ("m", 7552)]),
    (1000, 1024, (128, 128), []),                     # 104 of 128 rows: not nearly empty
    (1000, 1056, (128, 128), [("n", 1024)]),          # 32 of 128: at 1 / MAX_EDGE_SHARE
    (1000, 1057, (128, 128), []),                     # 33 of 128: over it
    (130, 4096, (128, 64), []),                       # one tile and 2 rows: not two tiles across
    (4096, 4096, (128, 128), []),                     # whole tiles
])  # fmt: skip
def test_edges_are_nearly_empty_last_block_columns_and_rows(m, n, tile, found):
    assert edge_panel.edges(m, n, tile) == found


@pytest.mark.parametrize("key", [
    _key(7557, 390, 14408, batch=2),
    _key(7557, 390, 14408, precision="3xtf32"),
    _key(7557, 390, 0),
    _key(1000, 390, 1000),  # 0.78e9 flops: under FROM_FLOPS
    _key(4096, 4096, 4096),  # every tile fits
])  # fmt: skip
def test_no_runners_elsewhere(key, enabled):
    assert edge_panel.candidates(key) == ()


def test_on_by_default_and_none_when_turned_off(monkeypatch):
    assert edge_panel.ENABLED is True
    monkeypatch.setattr(edge_panel, "ENABLED", False)
    assert edge_panel.candidates(_key(7557, 390, 14408)) == ()


@pytest.mark.parametrize("pair", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_runners_split_at_the_main_configs_whole_tiles_with_the_tables_panel_config(
        pair, dtype, enabled):  # fmt: skip
    key = _key(7557, 390, 14408, pair, dtype)
    found = edge_panel.candidates(key)
    assert found and plans.launcher(key, found[0]) is found[0]
    assert set(found) <= set(plans._composed(key))
    choice = selection.choose(dtype, key.m, key.n, key.k, key.trans_a, key.trans_b, warn=False)
    own = [c for c in choice.candidates or (choice.config,) if isinstance(c, KernelConfig)]
    mains = {plans.fastest_twin(c, key) for c in own[: edge_panel.MAIN_CONFIGS]}
    for runner in found:
        assert runner.runs_itself and runner.key == key and runner.config in mains
        bm, bn = FAMILIES[runner.config.family].block_tile(runner.config.as_dict())
        edge = bn if runner.axis == "n" else bm
        size = getattr(key, runner.axis)
        assert runner.whole == size - size % edge and 0 < size - runner.whole <= edge // 4
        main, panel = edge_panel.part_keys(key, runner.axis, runner.whole)
        assert getattr(main, runner.axis) + getattr(panel, runner.axis) == size
        assert runner.compile_jobs()[0] == (runner.config, key.trans_a, key.trans_b)
        assert str(runner).startswith(f"{runner.axis} {runner.whole} + {size - runner.whole}: ")


def test_runners_compare_by_what_they_run():
    key, config = _key(7557, 390, 14408), selection.default_config("float32")
    one, two = (edge_panel.EdgePanel(key, "n", 384, config, config) for _ in range(2))
    assert one == two and hash(one) == hash(two) and len({one, two}) == 1
    assert one != edge_panel.EdgePanel(key, "m", 7552, config, config)
    assert one.compile_jobs() == ((config, True, True),)


def _host_launcher(a_flat, b_flat, c_flat, launched):
    """plans.launcher on the host: run(a, b, c, ...) computes key's product with a, b, c as
    byte offsets into the flat column-major arrays, checking every view stays inside them."""

    def launcher(key, config):
        size = np.dtype(key.dtype).itemsize

        def view(flat, offset, rows, cols, ld):
            assert offset % size == 0 and offset >= 0
            start = offset // size
            assert rows <= ld and start + (cols - 1) * ld + rows <= flat.size
            return np.lib.stride_tricks.as_strided(flat[start:], (rows, cols), (size, ld * size))

        def run(a, b, c, alpha, beta, stream):
            op_a = (view(a_flat, a, key.k, key.m, key.lda).T if key.trans_a
                    else view(a_flat, a, key.m, key.k, key.lda))  # fmt: skip
            op_b = (view(b_flat, b, key.n, key.k, key.ldb).T if key.trans_b
                    else view(b_flat, b, key.k, key.n, key.ldb))  # fmt: skip
            out = view(c_flat, c, key.m, key.n, key.ldc)
            product = alpha * (op_a.astype(np.float64) @ op_b)
            out[...] = product + beta * out if beta else product
            launched.append((key, config))

        return run

    return launcher


@pytest.mark.parametrize("pair", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("axis,whole", [("n", 64), ("m", 96)])
@pytest.mark.parametrize("dtype,pad", [("float32", 0), ("float32", 4), ("float64", 2)])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_the_two_launches_cover_c_once_through_the_runners_offsets(
        pair, axis, whole, dtype, pad, beta, monkeypatch):  # fmt: skip
    rng = np.random.default_rng()
    m, n, k = 101, 70, 37
    key = _key(m, n, k, pair, dtype, pad)
    stored_a = (k, m) if key.trans_a else (m, k)
    stored_b = (n, k) if key.trans_b else (k, n)
    a = rng.standard_normal((key.lda, stored_a[1]))[: stored_a[0]]
    b = rng.standard_normal((key.ldb, stored_b[1]))[: stored_b[0]]
    a_flat = np.zeros(key.lda * stored_a[1], dtype)
    b_flat = np.zeros(key.ldb * stored_b[1], dtype)
    a_flat.reshape(stored_a[1], key.lda).T[: stored_a[0]] = a
    b_flat.reshape(stored_b[1], key.ldb).T[: stored_b[0]] = b
    c_flat = np.full(key.ldc * n, np.nan, dtype)
    old = rng.standard_normal((m, n))
    if beta:
        c_flat.reshape(n, key.ldc).T[:m] = old
    launched: list = []
    monkeypatch.setattr(plans, "launcher", _host_launcher(a_flat, b_flat, c_flat, launched))
    config = selection.default_config(dtype)
    edge_panel.EdgePanel(key, axis, whole, config, config)(0, 0, 0, 1.5, beta, 0)

    op_a = a_flat.reshape(stored_a[1], key.lda).T[: stored_a[0]].astype(np.float64)
    op_b = b_flat.reshape(stored_b[1], key.ldb).T[: stored_b[0]].astype(np.float64)
    expected = 1.5 * ((op_a.T if key.trans_a else op_a) @ (op_b.T if key.trans_b else op_b))
    expected += beta * old.astype(dtype)
    c = c_flat.reshape(n, key.ldc).T
    tolerance = 8 * k * np.finfo(dtype).eps * (1 + np.abs(expected))
    assert not np.isnan(c[:m]).any()  # every element written
    assert np.isnan(c[m:]).all()  # the padding rows untouched
    assert (np.abs(c[:m] - expected) <= tolerance).all()
    main, panel = edge_panel.part_keys(key, axis, whole)
    assert [part for part, _ in launched] == [main, panel]
