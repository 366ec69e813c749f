"""The pieces of the planned call path that need no GPU: the plan cache (its invalidation by
each deciding setting, its key, its bound), Gemm plans on NumPy arrays, np.matmul's batch
shapes and strides, the settings registry and the precision registry."""

from __future__ import annotations

import itertools
import sys
import threading
import warnings

import numpy as np
import pytest
from helpers import assert_gemm, uniform

import tunedgemm as tg
from tunedgemm import _matmul, autotune, plans, selection, settings
from tunedgemm._layout import BlasForm

# `tunedgemm.precision` is the context manager; the registry module is this one.
registry = sys.modules["tunedgemm.precision"]

# Valid texts of every declared setting and what they parse to.
VALID = {
    "TUNEDGEMM_BACKEND": [("auto", "auto"), ("GPU", "gpu"), (" numpy ", "numpy")],
    "TUNEDGEMM_PRECISION": [("ieee", "ieee"), ("TF32", "tf32"), ("3xtf32", "3xtf32")],
    "TUNEDGEMM_TABLE": [("/some/table.json", "/some/table.json"), ("", None)],
    "TUNEDGEMM_CUBLAS": [("1", True), ("off", False), ("Yes", True), ("false", False)],
    "TUNEDGEMM_FAMILY": [("simt", "simt"), (" tiled ", "tiled"), ("", None)],
    "TUNEDGEMM_REFINE": [("on", True), ("0", False), ("TRUE", True), ("no", False)],
    "TUNEDGEMM_GRAPHS": [("1", True), ("OFF", False)],
    "TUNEDGEMM_DEVICE_MEMORY": [("2G", 2 << 30), ("512M", 512 << 20), ("1048576", 1 << 20),
                                ("1.5K", 1536), ("2GiB", 2 << 30), ("3gb", 3 << 30)],
    "TUNEDGEMM_PINNED_RESULTS": [("1", True), ("off", False)],
    "TUNEDGEMM_LOG_SHAPES": [("/tmp/shapes.jsonl", "/tmp/shapes.jsonl")],
    "TUNEDGEMM_RECYCLE_RESULTS": [("auto", "auto"), ("ALL", "all"), ("off", "off")],
    "TUNEDGEMM_DEVICES": [("all", "all"), ("0,1", "0,1")],
    "TUNEDGEMM_OZAKI_GEMM": [("auto", "auto"), ("WGMMA", "wgmma"), (" mma ", "mma")],
}  # fmt: skip
# Texts a setting does not accept (settings that take any text have none).
INVALID = {
    "TUNEDGEMM_BACKEND": ["tpu", ""],
    "TUNEDGEMM_PRECISION": ["fp16", "tf32x3"],
    "TUNEDGEMM_CUBLAS": ["maybe", "2"],
    "TUNEDGEMM_REFINE": ["sometimes", "-1"],
    "TUNEDGEMM_GRAPHS": ["graphs", "2"],
    "TUNEDGEMM_DEVICE_MEMORY": ["0", "-5G", "lots", "", "G", "inf", "nan", "2X"],
    "TUNEDGEMM_PINNED_RESULTS": ["perhaps"],
    "TUNEDGEMM_RECYCLE_RESULTS": ["torch", "1"],
    "TUNEDGEMM_OZAKI_GEMM": ["wmma", "mma.sync", ""],
}


@pytest.fixture
def fresh_settings(monkeypatch):
    """Every setting unset, and no value parsed or warned about yet."""
    for name in settings.SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(settings, "_parsed", {})
    monkeypatch.setattr(settings, "_warned", set())
    return monkeypatch


@pytest.fixture
def empty_plans():
    plans.clear()
    yield
    plans.clear()


# --- the plan cache -----------------------------------------------------------------------


def test_every_setting_is_covered_here():
    assert set(VALID) == set(settings.SETTINGS)
    assert set(settings.DECIDING) < set(settings.SETTINGS)


@pytest.mark.parametrize("name", settings.DECIDING)
def test_each_deciding_setting_drops_the_plans(fresh_settings, empty_plans, name):
    plans.current()
    plans.call_plans.put("a call", "its plan")
    plans.device_plans.put("a key", "its plan")
    autotune._best["a shape"] = "its choice"
    plans.current()
    assert plans.call_plans.get("a call") == "its plan"  # nothing changed: kept
    fresh_settings.setenv(name, VALID[name][0][0])
    plans.current()
    assert plans.call_plans.get("a call") is None and plans.device_plans.get("a key") is None
    assert "a shape" not in autotune._best  # memoised decisions go with the plans
    plans.call_plans.put("a call", "its plan")
    fresh_settings.delenv(name)  # unset again: a change too
    plans.current()
    assert plans.call_plans.get("a call") is None


def test_a_setting_that_decides_nothing_keeps_the_plans(fresh_settings, empty_plans):
    assert "TUNEDGEMM_PINNED_RESULTS" not in settings.DECIDING
    plans.current()
    plans.call_plans.put("a call", "its plan")
    fresh_settings.setenv("TUNEDGEMM_PINNED_RESULTS", "0")
    plans.current()
    assert plans.call_plans.get("a call") == "its plan"


def test_clear_forgets_memoised_choices(empty_plans):
    selection.choose("float32", 64, 64, 64, gpu="NVIDIA H100 80GB HBM3", cc="9.0", warn=False)
    assert selection._choose.cache_info().currsize > 0
    plans.clear()
    assert selection._choose.cache_info().currsize == 0


def form(m=300, n=500, k=700, ta=False, tb=True, a=4096, lda=304, b=8192, ldb=512, c=12288,
         ldc=304, itemsize=4):  # fmt: skip
    return BlasForm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc, itemsize)


def test_gemm_key_fields():
    key = plans.GemmKey.of(form(), "float32", "tf32")
    assert (key.dtype, key.precision, key.m, key.n, key.k) == ("float32", "tf32", 300, 500, 700)
    assert (key.trans_a, key.trans_b, key.lda, key.ldb, key.ldc) == (False, True, 304, 512, 304)
    assert key.aligned and (key.batch, key.batch_strides) == (1, (0, 0, 0))
    assert str(key) == "float32/tf32 300x500x700 NT aligned"
    batched = plans.GemmKey.of(form(a=4100), "float64", "ieee", 8, (0, 3, 5))
    assert str(batched) == "float64/ieee 300x500x700 x8 NT"
    assert not batched.aligned and batched.batch_strides == (0, 3, 5)
    assert not key.reads_c
    assert str(plans.GemmKey.of(form(), "float32", "tf32", reads_c=True)).endswith(" reads C")


def test_gemm_keys_are_equal_exactly_when_the_products_are():
    key = plans.GemmKey.of(form(), "float32", "ieee")
    # Another address with the same alignment: the same key (plans are address-free).
    same = plans.GemmKey.of(form(a=1 << 20, b=2 << 20, c=3 << 20), "float32", "ieee")
    assert key == same and hash(key) == hash(same) and len({key, same}) == 1
    others = [
        plans.GemmKey.of(form(), "float64", "ieee"),
        plans.GemmKey.of(form(), "float32", "3xtf32"),
        plans.GemmKey.of(form(m=301), "float32", "ieee"),
        plans.GemmKey.of(form(k=701), "float32", "ieee"),
        plans.GemmKey.of(form(ta=True), "float32", "ieee"),
        plans.GemmKey.of(form(ldb=516), "float32", "ieee"),
        plans.GemmKey.of(form(c=12292), "float32", "ieee"),  # unaligned
        plans.GemmKey.of(form(), "float32", "ieee", 2, (0, 0, 0)),
        plans.GemmKey.of(form(), "float32", "ieee", 2, (0, 1, 0)),
        plans.GemmKey.of(form(), "float32", "ieee", reads_c=True),  # beta != 0: timed so
    ]
    assert len({key, *others}) == 1 + len(others)


def test_cache_keeps_the_most_recently_used():
    cache = plans._Cache(size=4)
    for i in range(4):
        cache.put(i, f"plan {i}")
    assert cache.get(0) == "plan 0"  # used: now the most recent
    cache.put(4, "plan 4")  # one too many: the least recently used (1) goes
    assert [cache.get(i) for i in range(5)] == ["plan 0", None, "plan 2", "plan 3", "plan 4"]
    assert len(cache.items) == 4
    for i in range(5, 100):
        cache.put(i, i)
    assert list(cache.items) == [96, 97, 98, 99]
    cache.clear()
    assert cache.get(99) is None and not cache.items


def test_cache_is_safe_from_threads():
    cache = plans._Cache(size=64)

    def work(offset):
        for i in range(2000):
            cache.put((offset, i % 100), i)
            cache.get((offset, (i * 7) % 100))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache.items) == 64


# --- Gemm plans on NumPy arrays ----------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_plan_runs_the_product(rng, dtype, monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")
    a, b = uniform(rng, (20, 30), dtype), uniform(rng, (30, 10), dtype)
    p = tg.plan(a, b)
    assert isinstance(p, tg.Gemm) and p.dtype == dtype and p.shape == (20, 10, 30)
    for _ in range(2):
        a2, b2 = uniform(rng, (20, 30), dtype), uniform(rng, (30, 10), dtype)
        result = p.run(a2, b2, alpha=1.5)
        assert result.dtype == dtype and result.shape == (20, 10)
        assert_gemm(result, 1.5, a2, b2, 0.0, None, dtype)
    c = np.asfortranarray(uniform(rng, (10, 20), dtype))
    into = tg.plan(b, a, c, trans_a=1, trans_b=1)
    c0 = c.copy()
    assert into.run(b, a, c, alpha=-0.5, beta=2.0) is c
    assert_gemm(c, -0.5, b.T, a.T, 2.0, c0, dtype)


def test_a_plan_refuses_operands_of_another_kind(rng, monkeypatch):
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "numpy")
    a, b = uniform(rng, (20, 30), np.float32), uniform(rng, (30, 10), np.float32)
    c = np.asfortranarray(uniform(rng, (20, 10), np.float32))
    p = tg.plan(a, b)
    for wrong in [(uniform(rng, (21, 30), np.float32), b),  # another shape
                  (a.astype(np.float64), b),  # another dtype
                  (np.asfortranarray(a), b),  # other strides
                  (a, b.tolist())]:  # fmt: skip  (not an array)
        with pytest.raises(ValueError, match="not of the plan's kind"):
            p.run(*wrong)
    with pytest.raises(ValueError, match="pass no c"):
        p.run(a, b, c)
    into = tg.plan(a, b, c)
    with pytest.raises(ValueError, match="into c: pass c"):
        into.run(a, b)
    with pytest.raises(ValueError, match="not of the plan's kind"):
        into.run(a, b, np.asfortranarray(uniform(rng, (20, 11), np.float32)))
    with pytest.raises(ValueError, match="c must be an array the result can be written into"):
        tg.plan(a, b, np.zeros((20, 10), np.float64))
    c0 = c.copy()
    assert into.run(a, b, c, beta=1.0) is c  # still serves its own kind
    assert_gemm(c, 1.0, a, b, 1.0, c0, np.float32)


def test_explain_names_the_mode_and_the_route(rng):
    a, b = uniform(rng, (20, 30), np.float32), uniform(rng, (30, 10), np.float32)
    text = tg.plan(a, b, precision="3xtf32").explain()
    assert text.startswith("float32 20x10x30 precision=3xtf32") and "general path" in text
    assert "precision=ieee" in tg.plan(a.astype(np.float64), b.astype(np.float64)).explain()
    assert repr(tg.plan(a, b)).startswith("<tunedgemm.Gemm float32 20x10x30 precision=ieee")
    with pytest.raises(ValueError, match="does not apply to float64"):
        tg.plan(a, b, dtype=np.float64, precision="tf32")


# --- np.matmul's batch shapes and strides ------------------------------------------------

SHAPE_PAIRS = [
    ((3,), (3,)), ((3,), (3, 4)), ((2, 3), (3,)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
    ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (6, 3, 4)),
    ((1, 2, 3), (6, 3, 4)), ((7, 1, 1, 2, 3), (1, 6, 3, 4)), ((3,), (2, 5, 3, 4)),
    ((2, 5, 2, 3), (3,)), ((0, 2, 3), (3, 4)), ((4, 0, 3), (4, 3, 2)), ((2, 0), (0, 3)),
]  # fmt: skip
BAD_PAIRS = [((2, 3), (4, 5)), ((3,), (4,)), ((5, 2, 3), (4, 3, 4)), ((2, 3), (2, 4, 5))]


@pytest.mark.parametrize("a_shape,b_shape", SHAPE_PAIRS)
def test_shapes_match_numpy(a_shape, b_shape):
    m, k, n, batch, shape = _matmul._shapes(a_shape, b_shape)
    assert shape == np.matmul(np.ones(a_shape), np.ones(b_shape)).shape
    assert batch == np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a2 = (1, *a_shape) if len(a_shape) == 1 else a_shape  # np.matmul's 1-D promotion
    b2 = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    assert (m, k, n) == (a2[-2], a2[-1], b2[-1])


@pytest.mark.parametrize("a_shape,b_shape", BAD_PAIRS)
def test_shapes_that_numpy_refuses_are_refused(a_shape, b_shape):
    with pytest.raises(ValueError):
        np.matmul(np.ones(a_shape), np.ones(b_shape))
    with pytest.raises(ValueError, match="matmul: "):
        _matmul._shapes(a_shape, b_shape)


def operand_views(rng):
    """Operands as NumPy lays them out: contiguous, broadcast, sliced and transposed batches."""
    base = uniform(rng, (4, 6, 3, 5, 2), np.float32)
    yield base[0, 0, 0]  # 2-D: (5, 2)
    yield base[0, 0]  # (3, 5, 2)
    yield base[0]  # (6, 3, 5, 2)
    yield base[:, 0]  # (4, 3, 5, 2): the batch rows skip the other 5
    yield base[:, :, 1]  # (4, 6, 5, 2)
    yield base[:, ::2, 0]  # (4, 3, 5, 2), a stepped batch dimension
    yield base[:, :1, 0]  # (4, 1, 5, 2): broadcast along one dimension
    yield base[0, :, :1]  # (6, 1, 5, 2)
    yield base[0].transpose(1, 0, 2, 3)  # (3, 6, 5, 2): batch dimensions swapped
    yield np.broadcast_to(base[0, 0, 0], (3, 5, 2))  # a stride-0 batch
    yield base[0, 0, 0][None]  # (1, 5, 2)
    yield base[0, 0, :1]  # (1, 5, 2) of a (3, 5, 2)


@pytest.mark.parametrize(
    "batch", [(3,), (6, 3), (4, 6), (4, 3), (6, 1), (4, 6, 3), (4, 1, 3), (2, 4, 6, 3), (1,), ()]
)
def test_collapse_is_the_single_stride_that_walks_the_batch(rng, batch):
    """_collapse gives s exactly when the operand's product number i (in np.matmul's order
    over the broadcast batch) starts i * s elements after the first: checked against the
    offsets np.broadcast_to gives, for views of many layouts."""
    tried = 0
    for view in operand_views(rng):
        own = view.shape[:-2]
        try:
            full = np.broadcast_shapes(batch, own)
        except ValueError:
            continue
        if full != batch:
            continue
        tried += 1
        shape, strides = view.shape, tuple(s // view.itemsize for s in view.strides)
        walked = np.broadcast_to(view, (*batch, *view.shape[-2:]))
        steps = [s // view.itemsize for s in walked.strides[:-2]]
        offsets = [sum(i * s for i, s in zip(index, steps, strict=True))
                   for index in itertools.product(*(range(e) for e in batch))]  # fmt: skip
        stride = _matmul._collapse(batch, shape, strides)
        progression = all(b - a == offsets[1] - offsets[0]
                          for a, b in itertools.pairwise(offsets)) if len(offsets) > 1 else True
        if stride is None:
            assert not progression, (view.shape, view.strides, batch)
        else:
            assert progression and offsets == [i * stride for i in range(len(offsets))], (
                view.shape, view.strides, batch, stride)
    assert tried


def test_collapse_examples():
    assert _matmul._collapse((5,), (5, 2, 3), (6, 3, 1)) == 6
    assert _matmul._collapse((5,), (2, 3), (3, 1)) == 0  # broadcast: every product the same
    assert _matmul._collapse((4, 5), (4, 5, 2, 3), (30, 6, 3, 1)) == 6
    assert _matmul._collapse((4, 5), (4, 1, 2, 3), (6, 6, 3, 1)) is None  # 0,0,0,0,0,6,...
    assert _matmul._collapse((4, 5), (5, 2, 3), (6, 3, 1)) is None  # 0..24, then 0 again
    assert _matmul._collapse((4, 5), (4, 5, 2, 3), (60, 6, 3, 1)) is None  # a gap after 5


# --- the settings registry ---------------------------------------------------------------


@pytest.mark.parametrize("name,text,expected",
                         [(n, t, e) for n, cases in VALID.items() for t, e in cases])  # fmt: skip
def test_valid_values_parse(fresh_settings, name, text, expected):
    fresh_settings.setenv(name, text)
    with warnings.catch_warnings():
        warnings.simplefilter("error", settings.SettingWarning)
        assert settings.get(name) == expected
    assert settings.check(name, text) == expected
    assert settings.raw(name) == text


@pytest.mark.parametrize("name", list(settings.SETTINGS))
def test_unset_values_are_the_defaults(fresh_settings, name):
    assert settings.raw(name) is None
    assert settings.get(name) == settings.SETTINGS[name].default


@pytest.mark.parametrize("name,text", [(n, t) for n, texts in INVALID.items() for t in texts])
def test_invalid_values_warn_once_and_fall_back(fresh_settings, name, text):
    fresh_settings.setenv(name, text)
    with pytest.warns(settings.SettingWarning, match=f"{name}=.*not valid.*accepted: ") as got:
        assert settings.get(name) == settings.SETTINGS[name].default
    assert len(got) == 1 and settings.SETTINGS[name].accepted in str(got[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", settings.SettingWarning)
        assert settings.get(name) == settings.SETTINGS[name].default  # no second warning
    with pytest.raises(ValueError, match=f"^{name}=.*not valid"):
        settings.check(name, text)


def test_decision_state_follows_the_deciding_settings_only(fresh_settings):
    before = settings.decision_state()
    assert len(before) == len(settings.DECIDING)
    fresh_settings.setenv("TUNEDGEMM_PINNED_RESULTS", "0")
    assert settings.decision_state() == before
    fresh_settings.setenv("TUNEDGEMM_CUBLAS", "0")
    assert settings.decision_state() != before


def test_describe_lists_every_setting(fresh_settings):
    fresh_settings.setenv("TUNEDGEMM_CUBLAS", "0")
    rows = {name: rest for name, *rest in settings.describe()}
    assert set(rows) == set(settings.SETTINGS)
    assert rows["TUNEDGEMM_CUBLAS"] == ["0", "True", settings.SETTINGS["TUNEDGEMM_CUBLAS"].accepted]


# --- the precision registry --------------------------------------------------------------


@pytest.fixture
def default_precision(fresh_settings):
    """No set_precision in force (the process's setting restored after the test)."""
    saved = registry._process[0]
    tg.set_precision(None)
    yield fresh_settings
    tg.set_precision(saved)


def test_resolve_rules(default_precision):
    assert registry.resolve(None, "float32") == "ieee"
    assert registry.resolve("TF32", "float32") == "tf32"  # spelt in any case
    assert registry.resolve("3xtf32", "float32") == "3xtf32"
    assert registry.resolve("ieee", "float64") == "ieee"
    with pytest.raises(ValueError, match=r"precision='tf32' does not apply to float64 \(it "
                       r"serves float32\); float64 takes: ieee"):  # fmt: skip
        registry.resolve("tf32", "float64")
    for bad in ("fp16", "", 32, 3.0):
        with pytest.raises(ValueError, match="precision must be one of ieee, tf32, 3xtf32"):
            registry.resolve(bad, "float32")
    tg.set_precision("tf32")  # a default that does not serve float64 leaves it IEEE
    assert registry.resolve(None, "float32") == "tf32"
    assert registry.resolve(None, "float64") == "ieee"


def test_defaults_in_order(default_precision):
    assert tg.get_precision() == "ieee"
    default_precision.setenv("TUNEDGEMM_PRECISION", "3xtf32")
    assert tg.get_precision() == "3xtf32"
    tg.set_precision("TF32")
    assert tg.get_precision() == "tf32"  # set_precision over the environment
    with tg.precision("ieee"):
        assert tg.get_precision() == "ieee"  # the block over set_precision
        with tg.precision("3xtf32"):
            assert tg.get_precision() == "3xtf32"
        assert tg.get_precision() == "ieee"
    assert tg.get_precision() == "tf32"
    tg.set_precision(None)
    assert tg.get_precision() == "3xtf32"
    with pytest.raises(ValueError, match="precision must be one of"):
        tg.set_precision("half")
    with pytest.raises(ValueError, match="precision must be one of"), tg.precision("half"):
        pass
    assert tg.get_precision() == "3xtf32"


def test_a_block_ends_on_an_exception(default_precision):
    with pytest.raises(RuntimeError), tg.precision("tf32"):
        raise RuntimeError
    assert tg.get_precision() == "ieee"


def test_blocks_belong_to_their_thread(default_precision):
    inside, seen = threading.Event(), {}
    release = threading.Event()

    def other():
        seen["before"] = tg.get_precision()
        with tg.precision("3xtf32"):
            inside.set()
            release.wait(5)
            seen["inside"] = tg.get_precision()

    with tg.precision("tf32"):
        thread = threading.Thread(target=other)
        thread.start()
        assert inside.wait(5)
        assert tg.get_precision() == "tf32"  # the other thread's block is its own
        release.set()
        thread.join()
    assert seen == {"before": "ieee", "inside": "3xtf32"}  # and this one's is this thread's


def test_environment_default_is_checked(default_precision):
    default_precision.setenv("TUNEDGEMM_PRECISION", "half")
    with pytest.warns(settings.SettingWarning, match="TUNEDGEMM_PRECISION"):
        assert tg.get_precision() == "ieee"


def test_dtype_registry():
    assert registry.dtype_info(np.float32).c_type == "float"
    assert registry.dtype_info("float64").itemsize == 8
    with pytest.raises(ValueError, match="dtype must be one of float32, float64, got 'int8'"):
        registry.dtype_info("int8")
    assert all(set(m.dtypes) <= set(registry.DTYPES) for m in registry.MODES.values())


def test_the_runtime_never_imports_the_tuner():
    """Two towers: calls (and explain, info, plans) load no module of tunedgemm.tuning."""
    import subprocess
    import sys

    code = (
        "import sys, warnings, numpy as np\n"
        "warnings.simplefilter('ignore')\n"
        "import tunedgemm as tg\n"
        "a = np.ones((300, 200), np.float32)\n"
        "tg.sgemm(1.0, a, a.T); tg.matmul(a, a.T); tg.plan(a, a.T).run(a, a.T)\n"
        "tg.explain(100, 100, 100); tg.info()\n"
        "print(sorted(m for m in sys.modules if m.startswith('tunedgemm.tuning')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)  # fmt: skip
    assert out.stdout.strip() == "[]", out.stdout
