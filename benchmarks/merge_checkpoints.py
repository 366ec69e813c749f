"""Merge tuner checkpoints into a table file, without a GPU: the results of a regeneration run
over several device calls (each call's $OUT/retune-ckpt.jsonl, gpu_session.sh's retune step).

Usage: python benchmarks/merge_checkpoints.py --into TABLE --device-from TUNED [--device NAME]
    CKPT [CKPT ...]

TABLE is written (merged into, if it exists: entries of the same device, key and shape are
replaced, every other one is kept, as tunedgemm-tune writes); the device's name, compute
capability and versions are those of TUNED's device NAME, or of its first device without
--device (TUNED: a table one of the calls wrote on that GPU; a table the tuner merged into a
copy of the shipped one holds the shipped devices too, sorted by name, so name the GPU). A
task in several checkpoints takes the last one's result.
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
                        help="a table one of the calls wrote (see --device)")  # fmt: skip
    parser.add_argument("--device",
                        help="the device of TUNED that ran the checkpoints (default: its first)")
    parser.add_argument("--command", default="", help="recorded as the table's command")
    parser.add_argument("checkpoints", nargs="+", type=Path)
    args = parser.parse_args()
    results = {}
    for path in args.checkpoints:
        results.update(Checkpoint(path).load())
    devices = json.loads(args.device_from.read_text())["devices"]
    named = [d for d in devices if args.device in (None, d["name"])]
    if not named:
        parser.error(f"{args.device_from} has no device {args.device!r}: "
                     f"{', '.join(d['name'] for d in devices)}")  # fmt: skip
    source = named[0]
    device = {k: source[k] for k in ("name", "compute_capability", "versions")}
    command = args.command or "merge_checkpoints.py " + " ".join(map(str, args.checkpoints))
    write(args.into, list(results.values()), device, command, "random")
    print(f"{len(results)} results from {len(args.checkpoints)} checkpoints merged into "
          f"{args.into} for {device['name']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
