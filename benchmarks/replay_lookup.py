"""Replay the run-time lookup on a tuner checkpoint, leaving each tuned shape out: no GPU needed.

Usage: python benchmarks/replay_lookup.py CHECKPOINT.jsonl [--key float32/NN ...] [--range 128 8192]

A tuner checkpoint (tunedgemm-tune --checkpoint) holds every config timed at every shape.
For each shape in the range, the lookup is run as if that shape had not been tuned: the
table.NEIGHBOURS nearest other shapes offer their TOP_COUNT fastest configs, the wave model
(tunedgemm/model.py) predicts each at the held-out shape, and the pick's measured time there
is compared with the best measured there ("regret": 1.00 is a perfect pick). Beside it, two
baselines on the same shapes: the nearest shape's winner (the lookup before the wave model),
and the best single fixed config among those timed at every shape in the range.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from tunedgemm import model, table
from tunedgemm.tuning.writer import TOP_COUNT, config_from_text

Shape = tuple[int, int, int]


def load(path: Path) -> dict[str, dict[Shape, dict[str, float]]]:
    """key -> shape -> {config text: ms} for every finite timing in the checkpoint."""
    timed: dict[str, dict[Shape, dict[str, float]]] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        key = row["task"].rsplit("/", 1)[0]
        shape = (row["m"], row["n"], row["k"])
        timed.setdefault(key, {})[shape] = {c: ms for c, ms in row["timed"] if math.isfinite(ms)}
    return timed


def distance(a: Shape, b: Shape) -> float:
    return math.dist([math.log2(x) for x in a], [math.log2(x) for x in b])


def _predicted(text: str, measured: tuple[Shape, float], dtype: str, shape: Shape) -> float:
    config = config_from_text(text)
    assert config is not None
    return model.predicted_ms(config, dtype, shape, measured[0], measured[1])


def gmean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def replay(key: str, shapes: dict[Shape, dict[str, float]], low: int, high: int) -> dict:
    dtype = key.split("/")[0].split("@")[0]  # a precision mode's entries: its dtype
    inside = [s for s in shapes if low <= min(s) and max(s) <= high and shapes[s]]
    model_regret, nearest_regret = [], []
    for held in inside:
        best_here = min(shapes[held].values())
        others = sorted((s for s in shapes if s != held and shapes[s]),
                        key=lambda s: distance(s, held))  # fmt: skip
        winner = min(shapes[others[0]], key=shapes[others[0]].__getitem__)
        if winner in shapes[held]:
            nearest_regret.append(shapes[held][winner] / best_here)
        offered: dict[str, tuple[Shape, float]] = {}
        for shape in others[: table.NEIGHBOURS]:
            for text, ms in sorted(shapes[shape].items(), key=lambda item: item[1])[:TOP_COUNT]:
                offered.setdefault(text, (shape, ms))
        known = [t for t in offered if t in shapes[held]]  # only picks we can score
        if not known:
            continue

        pick = min(known, key=lambda text: _predicted(text, offered[text], dtype, held))
        model_regret.append(shapes[held][pick] / best_here)
    common = set.intersection(*(set(shapes[s]) for s in inside))
    fixed = min(common, key=lambda c: sum(math.log(shapes[s][c]) for s in inside))
    fixed_regret = [shapes[s][fixed] / min(shapes[s].values()) for s in inside]
    return {"key": key, "shapes": len(inside), "model": gmean(model_regret),
            "model_scored": len(model_regret), "nearest": gmean(nearest_regret),
            "fixed": gmean(fixed_regret), "fixed_pool": len(common),
            "model_over_fixed": gmean(fixed_regret) / gmean(model_regret)}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--key", nargs="+", default=None, help="e.g. float32/NN (default: all)")
    parser.add_argument("--range", nargs=2, type=int, default=(128, 8192),
                        metavar=("LOW", "HIGH"))  # fmt: skip
    args = parser.parse_args()
    timed = load(args.checkpoint)
    steps = f"{model.BLOCK_OVERHEAD_STEPS} k-steps per block, {model.SPLIT_STEPS} per split slice"
    print(f"neighbours {table.NEIGHBOURS}, top {TOP_COUNT}, fixed costs {steps}")
    print(f"{'key':12} {'shapes':>6} {'wave model':>10} {'nearest':>8} {'fixed':>6} "
          f"{'fixed/model':>11}   (regret: measured time of the pick / best measured)")  # fmt: skip
    for key in args.key or sorted(timed):
        shapes = timed.get(key, {})
        if sum(1 for s in shapes if args.range[0] <= min(s) and max(s) <= args.range[1]) < 2:
            continue
        r = replay(key, shapes, *args.range)
        print(f"{key:12} {r['shapes']:6d} {r['model']:10.3f} {r['nearest']:8.3f} "
              f"{r['fixed']:6.3f} {r['model_over_fixed']:11.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
