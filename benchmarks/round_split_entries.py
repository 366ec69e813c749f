"""The shipped table's entries at which autotuning now times whole-round k-splits.

Usage: python benchmarks/round_split_entries.py [--dtypes float32 float64] [--out FILE]
                                                [--near RATIO [--side cublas|own]]
                                                [--split-above N] [--medium]
                                                [--round-tiles] [--pairs NN TN ...]

For every IEEE entry of the shipped table's first device (both dtypes, all transpose pairs),
the first own candidate the lookup gives at its shape (as autotuning and the tuner's seeds
take it) is asked for its whole-round splits (tunedgemm/plans.py, with_whole_round_splits:
where they apply, so do its family's round tiles, with_round_tiles); entries that get some
are written as a TUNEDGEMM_LOG_SHAPES file (one JSON object a line), for `tunedgemm-tune
--shapes-log`: gpu_session.sh's retune-rounds step retunes exactly them. Prints a count per
key and how many of them cuBLAS holds. --near RATIO lists instead the entries that cuBLAS
holds with the best own config's recorded time under RATIO times cuBLAS's (the near ties
that a change of autotuning's candidates, as the raster twins, may turn; step retune-near),
and with --side own those the own config holds with cuBLAS's time under RATIO times its own:
retuning only one side of the ties would let timing noise move entries one way only.
--split-above N lists the entries, whoever holds them, at which autotuning's wave-filling
splits (plans.with_wave_filling_splits of the first plans.RELATIVES_OF own candidates) time
a split above N: what a raised plans.MAX_SPLIT_K reaches (step retune-wide-splits).
--medium lists the entries cuBLAS holds at which autotuning times the first own candidate's
family's medium tiles (plans.with_medium_tiles; step retune-medium).
--round-tiles lists the entries cuBLAS holds at which autotuning times the first own
candidate's family's round tiles (plans.with_round_tiles; step retune-round-tiles).
--pairs takes those transpose pairs' entries alone (default: all four).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="round-split-shapes.jsonl")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"],
                        choices=["float32", "float64"])  # fmt: skip
    parser.add_argument("--sms", type=int, default=132, help="the GPU's SMs (H100 SXM: 132)")
    parser.add_argument("--near", type=float, default=None,
                        help="cuBLAS's entries whose own time is under RATIO times cuBLAS's")
    parser.add_argument("--side", choices=["cublas", "own"], default="cublas",
                        help="--near: the ties cuBLAS holds, or those the own config holds")
    parser.add_argument("--split-above", type=int, default=None,
                        help="entries where autotuning times a wave-filling split above N")
    parser.add_argument("--medium", action="store_true",
                        help="cuBLAS's entries where autotuning times the medium tiles")
    parser.add_argument("--round-tiles", action="store_true",
                        help="cuBLAS's entries where autotuning times the round tiles")
    parser.add_argument("--pairs", nargs="+", default=["NN", "NT", "TN", "TT"],
                        choices=["NN", "NT", "TN", "TT"])  # fmt: skip
    args = parser.parse_args()

    from tunedgemm import plans, table
    from tunedgemm.model import Shape
    from tunedgemm.params import IEEE
    from tunedgemm.tuning.driver import Task
    from tunedgemm.tuning.seeds import layout_key, table_candidates

    device = table.load(table.shipped_path()).devices[0]
    records = []
    for dtype in args.dtypes:
        for ta in (False, True):
            for tb in (False, True):
                if "NT"[ta] + "NT"[tb] not in args.pairs:
                    continue
                entries = device.entries.get(table.key(dtype, ta, tb), [])
                found = held = 0
                for entry in entries:
                    m, n, k = entry.shape
                    task = Task(dtype, ta, tb, Shape(m, n, k), IEEE)
                    if args.near is not None:
                        held_by_cublas = entry.choice == table.CUBLAS
                        near = (held_by_cublas and entry.own_ms < args.near * entry.cublas_ms
                                if args.side == "cublas" else not held_by_cublas
                                and entry.cublas_ms < args.near * entry.own_ms)  # fmt: skip
                    else:
                        own = table_candidates(task, ta, tb, device.name,
                                               device.compute_capability)  # fmt: skip
                        tiles_rule = (plans.with_medium_tiles if args.medium
                                      else plans.with_round_tiles if args.round_tiles
                                      else None)  # fmt: skip
                        if tiles_rule is not None:
                            near = (entry.choice == table.CUBLAS and bool(own)
                                    and bool(tiles_rule(own[:1], layout_key(task), args.sms)))
                        elif args.split_above is not None:
                            first = tuple(own[:plans.RELATIVES_OF])
                            timed = plans.with_wave_filling_splits(first, layout_key(task),
                                                                   args.sms)  # fmt: skip
                            wider = timed[len(first):]
                            near = any(c.as_dict()["SPLIT_K"] > args.split_above for c in wider)
                        else:
                            near = bool(own) and bool(plans.with_whole_round_splits(
                                own[:1], layout_key(task), args.sms))  # fmt: skip
                    if near:
                        found += 1
                        held += entry.choice == table.CUBLAS
                        records.append({"dtype": dtype, "trans_a": ta, "trans_b": tb,
                                        "m": m, "n": n, "k": k})  # fmt: skip
                print(f"{table.key(dtype, ta, tb)}: {found} of {len(entries)} entries, "
                      f"cuBLAS holds {held}")
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records))
    print(f"{len(records)} entries written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
