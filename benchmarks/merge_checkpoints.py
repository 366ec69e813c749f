"""Merge tuner checkpoints into a table file, without a GPU: the results of a regeneration run
over several device calls (each call's $OUT/retune-ckpt.jsonl, gpu_session.sh's retune step).

Usage: python benchmarks/merge_checkpoints.py --into TABLE --device-from TUNED CKPT [CKPT ...]

TABLE is written (merged into, if it exists: entries of the same device, key and shape are
replaced, every other one is kept, as tunedgemm-tune writes); the device's name, compute
capability and versions are those of TUNED's first device (a table one of the calls wrote on
that GPU). A task in several checkpoints takes the last one's result.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    from tunedgemm.tuning.checkpoint import Checkpoint
    from tunedgemm.tuning.writer import write

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--into", required=True, type=Path, help="table file to write or merge")
    parser.add_argument("--device-from", required=True, type=Path,
                        help="a table the calls wrote: its first device names the GPU")  # fmt: skip
    parser.add_argument("--command", default="", help="recorded as the table's command")
    parser.add_argument("checkpoints", nargs="+", type=Path)
    args = parser.parse_args()
    results = {}
    for path in args.checkpoints:
        results.update(Checkpoint(path).load())
    source = json.loads(args.device_from.read_text())["devices"][0]
    device = {k: source[k] for k in ("name", "compute_capability", "versions")}
    command = args.command or "merge_checkpoints.py " + " ".join(map(str, args.checkpoints))
    write(args.into, list(results.values()), device, command, "random")
    print(f"{len(results)} results from {len(args.checkpoints)} checkpoints merged into "
          f"{args.into} for {device['name']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
