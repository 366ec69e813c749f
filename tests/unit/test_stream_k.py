"""The simt family's stream-K schedule (issue 15, item 1) on the CPU: tunedgemm/streamk.py's
arithmetic, which kernels/streamk.cuh mirrors, runs whole waves data-parallel and the rest
stream-K, covers every (tile, k-tile) once, gives split tiles contiguous workspace slots in k
order and one fixup block each; the tunable stays out of
the space until a GPU run verifies it; launches, workspaces and compiles are right."""

from __future__ import annotations

import collections
import itertools
import random
import shutil
import subprocess

import pytest
from helpers import compile_stream_k

from tunedgemm import launch, model, streamk, table
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

FAMILY = FAMILIES["simt"]


def _with(**change: int) -> KernelConfig:
    return KernelConfig.make("simt", {**FAMILY.default_config("float32").as_dict(), **change})


def _shapes(count=400):
    rng = random.Random(15)
    fixed = [(1, 1, 1, 128, 128, 8, 132), (5, 7, 3, 128, 128, 8, 264),
             (3072, 96, 3072, 128, 128, 8, 132), (96, 6000, 2000, 128, 128, 8, 264),
             (777, 3333, 1555, 128, 128, 8, 132), (129, 129, 1000, 128, 128, 8, 264),
             (128, 128, 0, 128, 128, 8, 132), (4096, 4096, 4096, 128, 128, 8, 264),
             (64, 64, 7, 64, 64, 32, 1), (300, 300, 9, 64, 64, 8, 1000),
             # T tiles against G blocks: T < G, T = G, T = G + 1, T = 2G - 1, 2G, 5G + 3,
             # and k < BK (one iteration a tile)
             (1536, 1408, 1000, 128, 128, 8, 264), (3072, 1408, 1000, 128, 128, 8, 264),
             (128 * 133, 128, 999, 128, 128, 8, 132), (128 * 263, 128, 64, 128, 128, 8, 132),
             (128 * 132, 256, 77, 128, 128, 8, 132), (128 * 663, 128, 4096, 128, 128, 8, 132),
             (84864, 128, 5, 128, 128, 8, 132), (17024, 128, 7, 128, 128, 8, 132)]  # fmt: skip
    yield from fixed
    for _ in range(count):
        bm, bn, bk = rng.choice((64, 128, 256)), rng.choice((64, 128, 256)), rng.choice((8, 16, 32))
        m, n = rng.randint(1, 6 * bm), rng.randint(1, 6 * bn)
        k = rng.choice((rng.randint(0, bk - 1), rng.randint(1, 40 * bk)))
        tiles = -(-m // bm) * -(-n // bn)
        ctas = rng.choice((1, 2, 3, 7, 132, 264, 528, tiles, tiles + 1, max(1, tiles - 1),
                           max(1, (tiles - 3) // 5), max(1, (tiles - 1) // 2),
                           max(1, (tiles - 2) // 3), max(1, (tiles - 1) // 4)))  # fmt: skip
        yield m, n, k, bm, bn, bk, ctas


@pytest.mark.parametrize("shape", list(_shapes()))
def test_schedule_covers_every_iteration_once(shape):
    m, n, k, bm, bn, bk, ctas = shape
    s = streamk.schedule(m, n, k, bm, bn, bk, ctas)
    assert s.tiles == -(-m // bm) * -(-n // bn) and s.ipt == max(1, -(-k // bk))
    assert s.ctas == min(ctas, s.iters) >= 1
    # The data-parallel / stream-K split: whole waves data-parallel, the last one to two
    # waves' tiles (all, when T < G) stream-K, none when G divides T.
    waves, rest = divmod(s.tiles, s.ctas)
    assert s.dp == (s.tiles if rest == 0 else max(waves - 1, 0) * s.ctas)
    assert s.dp % s.ctas == 0 and s.sk_iters == (s.tiles - s.dp) * s.ipt
    assert s.sk_iters == 0 or s.sk_iters >= s.ctas  # no stream-K range is empty
    dp_q, q, r = s.args
    assert dp_q == s.dp and 0 <= r < s.ctas and q * s.ctas + r == s.sk_iters
    for b in range(s.ctas + 1):  # the kernels' int form of begin is the floor of b S / G
        assert s.begin(b) == s.dp * s.ipt + b * s.sk_iters // s.ctas
        if b < s.ctas:  # SkStep's end from begin's remainder
            assert s.begin(b + 1) == s.begin(b) + q + (b * r % s.ctas + r >= s.ctas)
    seen = collections.Counter()
    partial = collections.defaultdict(list)  # tile -> [(block, k-tiles, slot)] in walk order
    for b in range(s.ctas):
        steps = s.steps(b)
        assert steps, "no block's walk is empty"
        # Data-parallel first: tiles b, b + G, ... < DP, each whole, then the range.
        dp_steps = [step for step in steps if step[0] < s.dp]
        assert dp_steps == steps[: len(dp_steps)]
        assert [t for t, *_ in dp_steps] == list(range(b, s.dp, s.ctas))
        assert all(kt == 0 and nkt == s.ipt and whole for _, kt, nkt, whole, _ in dp_steps)
        sk_len = sum(nkt for t, _, nkt, *_ in steps if t >= s.dp)
        assert sk_len == s.begin(b + 1) - s.begin(b)
        if s.sk_iters and s.tiles >= s.ctas:  # one to two tiles' worth of stream-K each
            assert s.ipt <= sk_len <= 2 * s.ipt
        for t, kt, nkt, whole, slot in steps:
            assert 0 <= t < s.tiles and nkt >= 1 and kt + nkt <= s.ipt
            seen.update((t, x) for x in range(kt, kt + nkt))
            assert whole == (nkt == s.ipt)
            if not whole:
                partial[t].append((b, kt, nkt, slot))
    assert len(seen) == s.iters and set(seen.values()) == {1}
    # Slots: unique across the grid, inside the workspace, each tile's in k order.
    slots = [slot for pieces in partial.values() for *_, slot in pieces]
    assert len(set(slots)) == len(slots) and all(0 <= x < s.slots for x in slots)
    assert s.slots == 2 * s.ctas
    assert sorted(partial) == s.split_tiles() and all(t >= s.dp for t in partial)
    sk_tiles = s.tiles - s.dp
    for t, pieces in partial.items():
        assert 2 <= len(pieces) <= -(-s.ctas // sk_tiles) + 1
        if s.tiles >= s.ctas:
            assert len(pieces) == 2
        assert [kt for _, kt, _, _ in pieces] == sorted(kt for _, kt, _, _ in pieces)
        assert [(b, kt, kt + nkt) for b, kt, nkt, _ in pieces] == s.pieces(t)
        tile_slots = [slot for *_, slot in pieces]
        assert tile_slots == sorted(tile_slots)
        if s.ctas <= sk_tiles:  # a block's range spans a tile or more: contiguous slots
            assert tile_slots == list(range(tile_slots[0], tile_slots[0] + len(tile_slots)))
        assert [s.slot(b, t) for b, *_ in s.pieces(t)] == tile_slots
    # Exactly one fixup block per split tile, adding its slots in k order (as the kernel
    # finds them), and none launched without a stream-K part.
    fixed = {j: s.fixed_tile(j) for j in range(1, s.ctas)}
    assert sorted(t for t in fixed.values() if t is not None) == sorted(partial)
    for j, t in fixed.items():
        assert s.fixup_slots(j) == ([] if t is None else [x for *_, x in partial[t]])
    assert s.fixup_blocks == (s.ctas - 1 if s.sk_iters else 0)


def test_schedule_named_cases():
    """The DP/SK rule at T < G, T = G, T = G + 1, 2G - 1, 2G and 5G + 3 (G = 132, k = 1000)."""
    def sched(tiles):
        return streamk.schedule(128 * tiles, 128, 1000, 128, 128, 8, 132)

    cases = {60: (0, 60), 132: (132, 0), 133: (0, 133), 263: (0, 263), 264: (264, 0),
             663: (4 * 132, 135)}  # fmt: skip
    for tiles, (dp, sk_tiles) in cases.items():
        s = sched(tiles)
        assert (s.dp, s.sk_iters) == (dp, sk_tiles * s.ipt), tiles
    assert sched(60).fixup_blocks == 131 and sched(132).fixup_blocks == 0


def test_schedule_refuses_more_iterations_than_int():
    with pytest.raises(ValueError, match="int range"):
        streamk.schedule(2**16, 2**16, 2**20, 64, 64, 8, 132)
    with pytest.raises(ValueError, match="int range"):
        streamk.schedule(2**16, 2**16, 2**10, 64, 64, 8, 2**16)


@pytest.mark.parametrize("stream_k", simt.STREAM_K_ON)
def test_plan_workspace_and_grids(stream_k):
    config = _with(STREAM_K=stream_k)
    assert FAMILY.violations(config, "float32") == []
    for aligned in (False, True):
        p = launch.plan(config, "float32", False, True, aligned)
        assert p.stream_k == stream_k and p.split_k == 1
        for m, n, k in ((3072, 96, 3072), (96, 6000, 2000), (1, 1, 1), (5, 7, 0)):
            s = p.schedule(m, n, k, 132)
            assert s.ctas == min(132 * stream_k, s.iters)
            assert p.workspace_bytes(m, n, k, 132) == 2 * s.ctas * 128 * 128 * 4
        with pytest.raises(ValueError, match="SM count"):
            p.workspace_bytes(10, 10, 10)
    assert launch.plan(_with(), "float32", False, False, True).workspace_bytes(99, 99, 99) == 0


def test_stream_k_is_declared_but_out_of_the_space():
    """STREAM_K=0 alone is searched (simt.STREAM_K_ON says why); configs recorded without it
    read as 0; STREAM_K > 0 is valid when named, but never with SPLIT_K > 1. The shipped
    table holds stream-K configs only as the tuner's seeds brought them (autotuning's
    stream-K variants, plans.with_stream_k: one k-slice, the loop twin's main loop)."""
    assert {c["STREAM_K"] for c in FAMILY.space("float32")} == {0}
    params = {k: v for k, v in _with().as_dict().items() if k != "STREAM_K"}
    assert (
        table.recorded_config("simt", params)
        == _with(STREAM_K=0)
        == FAMILY.default_config("float32")
    )
    assert FAMILY.violations(_with(STREAM_K=1, SPLIT_K=2), "float32") == [
        "stream-K replaces split-K (STREAM_K > 0 needs SPLIT_K = 1)"
    ]
    loaded = table.load(table.shipped_path())
    configs = [
        config
        for device in loaded.devices
        for entries in device.entries.values()
        for entry in entries
        for config, _ in entry.top
        if config.family == "simt"
    ]
    assert configs
    streamed = [c for c in configs if c["STREAM_K"]]
    for config in streamed:
        assert not FAMILY.violations(config, "float32"), config
        # (the loop twin's LANE_PAIRS came after the table: its configs record it as 0)
        changes = {k: v for k, v in simt.STREAM_K_CHANGES.items() if k != "LANE_PAIRS"}
        assert all(config[k] == v for k, v in changes.items()), config
        # the blocks an SM holds, or twice that (plans.with_stream_k), or a stream-K tile's own
        resident = model.resident_blocks(config, "float32")
        tiles = {tile["STREAM_K"] for tile in simt.STREAM_K_TILES}
        assert config["STREAM_K"] in {resident, 2 * resident} | tiles, config


def _compile(stream_k, variants, tmp_path, **changes):
    works = compile_stream_k(_with(STREAM_K=stream_k, **changes), "float32", variants, tmp_path)
    if shutil.which("cuobjdump") is None:
        return
    for work in works:
        sass = subprocess.run(["cuobjdump", "-sass", str(work / "kernel.cubin")],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert "RED." not in sass and "ATOM" not in sass  # deterministic: no atomics


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_stream_k_compiles_without_spills(tmp_path):
    """The register-staged variants (NN and TT aligned), the tightest on registers."""
    _compile(1, [(0, 0, 1), (1, 1, 1)], tmp_path)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_stream_k_with_the_loop_twin_compiles_without_spills(tmp_path):
    """The variant autotuning times (simt.STREAM_K_CHANGES: cursors, serpentine fmas) on the
    table's most frequent large tile, 256 x 128 with 16 x 8 per thread, register-staged."""
    big = {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8, "STAGES": 2,
           "MIN_BLOCKS": 1}  # fmt: skip
    _compile(1, [(0, 0, 1)], tmp_path, **big, **simt.STREAM_K_CHANGES)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("stream_k", simt.STREAM_K_ON)
def test_stream_k_all_variants_compile_without_spills(stream_k, tmp_path):
    _compile(stream_k, list(itertools.product((0, 1), (0, 1), (0, 1))), tmp_path)


@pytest.mark.parametrize("stream_k", simt.STREAM_K_ON)
def test_launch_count_counts_the_fixup_where_the_schedule_has_one(stream_k):
    """autotune.HOST_TIES groups own candidates by it: a fixup is one more launch to queue."""
    from tunedgemm._layout import BlasForm

    runner = launch.GemmLauncher.__new__(launch.GemmLauncher)  # no kernels compiled
    runner.plan = launch.plan(_with(STREAM_K=stream_k), "float32", False, False, True)
    runner.fixup, runner.reduce, runner.sms = object(), None, 132
    # 3072x96x3072 splits tiles between blocks; 264 tiles of 128 x 128 are whole rounds
    for m, n, k in ((3072, 96, 3072), (33792, 128, 64)):
        shape = BlasForm(m=m, n=n, k=k, a=0, lda=m, b=0, ldb=k, c=0, ldc=m, trans_a=False,
                         trans_b=False, itemsize=4)  # fmt: skip
        fixups = runner.plan.schedule(m, n, k, 132).fixup_blocks
        assert runner.launch_count(shape) == 1 + (fixups > 0)
        assert (fixups > 0) == (m == 3072)
    runner.fixup, runner.reduce = None, object()  # split-K: the slices, then the reduction
    assert runner.launch_count(shape) == 2
    runner.reduce = None
    assert runner.launch_count(shape) == 1
