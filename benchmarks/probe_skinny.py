"""Which own simt configs come near cuBLAS where m x n is small and k long (issue 15)?

Usage: python benchmarks/probe_skinny.py [--shapes 1473x140x7081,...] [--out DIR]

The random shapes of bench_tuning where float32's own kernels lose most (seed 1795689347,
2026-11-26: 0.56-0.71x cuBLAS) have few tiles of C and long k. For each shape this times, as
autotuning does (tunedgemm.autotune.time_candidates: candidates in turn, three rounds, into
scratch memory), cuBLAS against a grid of own configs: the table's first four own candidates
for the shape and simt's default, each with SPLIT_K from 1 to 64 (each slice keeping two
k-tiles), with its loop twin (ADVANCE=1, FMA_ORDER=1), and with stream-K (1 and 2 blocks per
SM, MIN_BLOCKS=1). --narrow takes narrow tiles instead of the table's configs: 128 x 32 and
32 x 128 blocks of 128 threads (8 x 4 per thread), BK 16 or 32, one or two blocks per SM,
which simt's template builds but its tuning space does not hold; --large takes simt's large
tiles (LARGE_TILES). Stream-K runs with per-k-tile addresses (MIN_BLOCKS=1) and with the
loop twin (the config's MIN_BLOCKS). --dtype float64 takes dmma's configs (twins: ADVANCE=1,
SPLITK_FUSED=1 for splits, stream-K at 1-4 blocks an SM; narrow: 64x32, 32x64, 128x32 and
32x128 with MMA_K 8, two blocks per SM, SMALL_COPIES 0 and 1). --splits A-B takes the
table's first own candidate alone, as recorded, at every SPLIT_K from A to B (each slice
keeping two k-tiles), where the power-of-two splits leave the last wave of blocks nearly
empty; --splits around, at half its split, its split and twice it, and beside each the most
slices whose blocks fill whole rounds over the SMs; --stream-k, those splits and the
candidate's stream-K variant at 1 to 4 blocks an SM; --tiles, the table's first own
candidate beside each given tiling of the family's default at a few splits and as stream-K.
--trans times another transpose pair (default NN). It prints, per shape, cuBLAS's time and the
best few own configs; --out writes every time as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHAPES = "1473x140x7081,125x665x7720,319x2218x9857,65x1292x1285,88x894x8419,9947x78x1422"
SPLITS = (1, 2, 4, 8, 16, 32, 64)


def stream_k_changes(family: str) -> dict | None:
    """The changes that make a config of the family its stream-K variant (None: it has none):
    the family's own (autotuning's), or dmma's, whose autotuning does not time them."""
    from tunedgemm.families import FAMILIES, dmma

    return dmma.STREAM_K_CHANGES if family == "dmma" else FAMILIES[family].stream_k_changes


def variants(base, k: int) -> list:
    """base's grid of splits and main-loop twins (simt: the loop twin and stream-K; dmma: the
    cursors, the fused split-K and stream-K at 1-4 blocks an SM) that its family allows."""
    from tunedgemm.families import FAMILIES
    from tunedgemm.families.simt import LOOP_TWIN
    from tunedgemm.params import KernelConfig

    family, params = FAMILIES[base.family], base.as_dict()
    dtype = family.dtypes[0]
    k_tiles = -(-k // params["BK"])
    twins = ({}, LOOP_TWIN) if base.family == "simt" else ({}, {"ADVANCE": 1})
    found = []
    for split in SPLITS:
        if split > 1 and 2 * split > k_tiles:
            break
        for twin in twins:
            found.append({**params, "SPLIT_K": split, **twin})
            if base.family == "dmma" and split > 1:
                found.append({**params, "SPLIT_K": split, **twin, "SPLITK_FUSED": 1})
    if base.family == "simt":
        found = [{**p, "STREAM_K": 0} for p in found]
        for per_sm in (1, 2):
            found.append({**params, "SPLIT_K": 1, "STREAM_K": per_sm, "MIN_BLOCKS": 1,
                          "ADVANCE": 0})  # fmt: skip
            found.append({**params, "SPLIT_K": 1, "STREAM_K": per_sm, **LOOP_TWIN})
    elif base.family == "dmma":  # stream-K with the cursors
        found += [{**params, **stream_k_changes("dmma"), "STREAM_K": per_sm}
                  for per_sm in (1, 2, 3, 4)]  # fmt: skip
    configs = [KernelConfig.make(base.family, p) for p in found]
    return [c for c in configs if not family.violations(c, dtype)]


def split_range(base, m: int, n: int, k: int, text: str, sms: int) -> list:
    """base as recorded at each SPLIT_K of --splits (A-B, or around) that keeps two k-tiles
    a slice."""
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig

    family, params = FAMILIES[base.family], base.as_dict()
    k_tiles = -(-k // family.k_tile(params))
    if text == "around":
        bm, bn = family.block_tile(params)
        tiles, split = -(-m // bm) * -(-n // bn), params["SPLIT_K"]
        powers = [p for p in (split // 2, split, 2 * split) if p >= 1]
        # Each power's neighbours that fill whole rounds of blocks over the SMs: the most
        # slices within its rounds and within one round fewer.
        waves = {w for p in powers for w in (tiles * p // sms, -(-tiles * p // sms))}
        even = sorted({*powers, *(w * sms // tiles for w in waves if w * sms >= tiles)})
    else:
        low, high = (int(v) for v in text.split("-"))
        even = list(range(low, high + 1))
    configs = [KernelConfig.make(base.family, {**params, "SPLIT_K": s})
               for s in even if s == 1 or 2 * s <= k_tiles]  # fmt: skip
    return [c for c in configs if not family.violations(c, family.dtypes[0])]


def stream_k_range(base, split_text: str, m: int, n: int, k: int, sms: int) -> list:
    """--stream-k: base as recorded and at the splits of --splits (default: around), then its
    family's stream-K variant (stream_k_changes) at 1 to 4 blocks an SM."""
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig

    family, params = FAMILIES[base.family], base.as_dict()
    streamed = [KernelConfig.make(base.family, {**params, **stream_k_changes(base.family),
                                                "STREAM_K": per_sm})
                for per_sm in (1, 2, 3, 4)]  # fmt: skip
    return [*split_range(base, m, n, k, split_text, sms),
            *(c for c in streamed if not family.violations(c, family.dtypes[0]))]


# --tiles: the splits and stream-K blocks an SM each tile is timed at.
TILE_SPLITS, TILE_STREAM_K = (1, 2, 3, 4, 6, 8), (1, 2)


def tile_grid(default, texts: list[str], k: int, splits: tuple = TILE_SPLITS,
              stream_k: tuple = TILE_STREAM_K, trust_ptxas: bool = False,
              ignore: tuple[str, ...] = ()) -> list:
    """--tiles: the family's default with each change set (NAME=VALUE,...), at the splits
    (each slice keeping two k-tiles) and as stream-K at the blocks an SM (one k-slice), where
    the family's constraints allow (with trust_ptxas, all but its register estimate, which
    ptxas's allocation may undercut: launch bounds keep any tile launchable, at worst with
    spills; with ignore, any constraint whose text holds one of its strings): tilings outside
    the tuner's space, held to the table's."""
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig

    family = FAMILIES[default.family]
    found = []
    for text in texts:
        tile = {**default.as_dict(), **{k_: int(v) for k_, v in
                                        (item.split("=") for item in text.split(","))}}  # fmt: skip
        k_tiles = -(-k // family.k_tile(tile))
        found += [{**tile, "SPLIT_K": s} for s in splits if s == 1 or 2 * s <= k_tiles]
        if stream_k_changes(default.family) is not None:
            found += [{**tile, **stream_k_changes(default.family), "STREAM_K": per_sm}
                      for per_sm in stream_k]  # fmt: skip
    configs = [KernelConfig.make(default.family, p) for p in found]
    ignored = (*ignore, *(("registers",) if trust_ptxas else ()))
    return [c for c in configs if not [v for v in family.violations(c, family.dtypes[0])
                                       if not any(text in v for text in ignored)]]  # fmt: skip


def narrow_bases(default) -> list:
    """The narrow-tile bases of --narrow, built on the family's default config."""
    from tunedgemm.params import KernelConfig

    bases = []
    if default.family == "dmma":
        for bm, bn, wm, wn in ((64, 32, 32, 16), (32, 64, 32, 16), (128, 32, 64, 16),
                               (32, 128, 32, 32)):  # fmt: skip
            for small in (0, 1):  # 16-byte copies where aligned, or 8-byte ones through L1
                tile = {"BM": bm, "BN": bn, "WM": wm, "WN": wn, "MMA_K": 8, "SMALL_COPIES": small}
                params = {**default.as_dict(), **tile, "BK": 16, "STAGES": 4, "MIN_BLOCKS": 2}
                bases.append(KernelConfig.make("dmma", params))
        return bases
    for bm, bn in ((128, 32), (32, 128)):
        for bk in (16, 32):  # (BK = 32 exceeds the copies a thread may make: dropped)
            for blocks in (1, 2):
                tile = {"BM": bm, "BN": bn, "BK": bk, "WM": 32, "WN": 32, "TM": 8, "TN": 4}
                params = {**default.as_dict(), **tile, "STAGES": 3, "MIN_BLOCKS": blocks}
                bases.append(KernelConfig.make("simt", params))
    return bases


# --large: simt's large tiles, the table's picks at large squares (256 x 128, 16 x 8 a thread)
# and its 128 x 128 ones, whose main loops run nearest the FFMA ceiling but whose tiles are
# few at mid-sized m x n (948 x 2190: 72 of 256 x 128 on 132 SMs).
LARGE_TILES = (
    {"BM": 256, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8, "STAGES": 2,
     "MIN_BLOCKS": 1, "GROUP_M": 16},
    {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "TM": 16, "TN": 8, "STAGES": 2,
     "MIN_BLOCKS": 1, "GROUP_M": 8},
    {"BM": 128, "BN": 128, "BK": 8, "WM": 32, "WN": 64, "TM": 8, "TN": 8, "STAGES": 3,
     "MIN_BLOCKS": 2, "GROUP_M": 16},
)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--narrow", action="store_true")
    parser.add_argument("--large", action="store_true", help="simt's large tiles (LARGE_TILES) "
                        "as the bases, not the table's candidates")  # fmt: skip
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--trans", default="NN", choices=["NN", "NT", "TN", "TT"],
                        help="the transpose pair (default NN)")  # fmt: skip
    parser.add_argument("--padded", action="store_true", help="leading dimensions padded to "
                        "16 bytes (the aligned kernels), as bench_tuning times")  # fmt: skip
    parser.add_argument("--splits", default=None, help="A-B or around: the table's first "
                        "own candidate at every split from A to B, or near its own")  # fmt: skip
    parser.add_argument("--stream-k", action="store_true", help="the table's first own "
                        "candidate at its splits (--splits, default around) and as stream-K "
                        "at 1-4 blocks an SM")  # fmt: skip
    parser.add_argument("--tiles", nargs="*", default=None, help="change sets (NAME=VALUE,...) "
                        "of the family's default, each timed at a few splits and as stream-K, "
                        "beside the table's first own candidate")  # fmt: skip
    parser.add_argument("--tile-splits", default=",".join(map(str, TILE_SPLITS)),
                        help="--tiles: the splits each tiling is timed at (comma-separated)")
    parser.add_argument("--tile-stream-k", default=",".join(map(str, TILE_STREAM_K)),
                        help="--tiles: stream-K blocks an SM (comma-separated; empty: none)")
    parser.add_argument("--trust-ptxas", action="store_true",
                        help="--tiles: keep tilings that only the family's register estimate "
                        "rules out")  # fmt: skip
    parser.add_argument("--ignore-constraint", action="append", default=[], metavar="TEXT",
                        help="--tiles: keep tilings that only constraints holding TEXT rule "
                        "out (repeatable, or TEXT|TEXT; 'threads per block' lets in 64-thread "
                        "blocks)")  # fmt: skip
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    tile_splits = tuple(int(v) for v in args.tile_splits.split(",") if v)
    tile_stream_k = tuple(int(v) for v in args.tile_stream_k.split(",") if v)
    ignore = tuple(part for arg in args.ignore_constraint for part in arg.split("|"))

    from tunedgemm import autotune, compiler, cuda, selection, table
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    cuda.context()
    dtype = np.dtype(args.dtype)
    default = selection.default_config(dtype.name, "ieee")
    print(f"# {cuda.device_name()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"{dtype.name} {args.trans}; ms per call (autotune.time_candidates)",
          flush=True)  # fmt: skip
    results: list[dict] = []

    def write() -> None:  # after each shape: a run stopped by its time limit keeps what it timed
        if not args.out:
            return
        name = (f"probe_skinny-{dtype.name}{'-narrow' if args.narrow else ''}"
                f"{'-large' if args.large else ''}"
                f"{'-padded' if args.padded else ''}"
                f"{'-splits' if args.splits else ''}"
                f"{'-stream-k' if args.stream_k else ''}"
                f"{'-tiles' if args.tiles else ''}"
                f"{'' if args.trans == 'NN' else '-' + args.trans}.json")  # fmt: skip
        path = Path(args.out) / name
        path.write_text(json.dumps({"device": cuda.device_name(), "shapes": results}, indent=1))

    for text in args.shapes.split(","):
        m, n, k = (int(v) for v in text.split("x"))
        trans = (args.trans[0] == "T", args.trans[1] == "T")
        form = problems.make(m, n, k, dtype, *trans, padded=args.padded).form
        bases = [c for c in selection.choose(dtype, m, n, k, *trans, warn=False).candidates
                 if isinstance(c, KernelConfig) and c.family == default.family]  # fmt: skip
        if args.large:
            bases = [KernelConfig.make("simt", {**default.as_dict(), **t}) for t in LARGE_TILES]
        bases = list(dict.fromkeys([*(narrow_bases(default) if args.narrow else bases[:4]),
                                    default]))  # fmt: skip
        if args.tiles:
            grid = [bases[0], *tile_grid(default, args.tiles, k, tile_splits, tile_stream_k,
                                         args.trust_ptxas, ignore)]
        elif args.stream_k:
            grid = stream_k_range(bases[0], args.splits or "around", m, n, k, cuda.sm_count())
        elif args.splits:
            grid = split_range(bases[0], m, n, k, args.splits, cuda.sm_count())
        else:
            grid = list(dict.fromkeys(v for b in bases for v in variants(b, k)))
        candidates = (table.CUBLAS, *grid)
        # nvcc in parallel first: time_candidates would compile them one at a time, seconds
        # each on a fresh machine.
        compiler.precompile(grid, dtype.name, *trans, form.aligned(), jobs=os.cpu_count() or 8)
        ms = autotune.time_candidates(form, dtype, candidates)
        cublas = ms[0]
        ranked = sorted(zip(ms[1:], grid, strict=True), key=lambda x: x[0])
        print(f"{text}: cuBLAS {cublas:.4f} ms, {len(grid)} own configs", flush=True)
        for t, c in ranked[: None if args.splits or args.stream_k else 12 if args.tiles else 6]:
            print(f"   {cublas / t:5.2f}  {t:.4f}  {c}", flush=True)
        results.append({"shape": [m, n, k], "trans": args.trans, "cublas_ms": cublas,
                        "own": [{"config": str(c), "ms": t} for t, c in ranked]})  # fmt: skip
        write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
