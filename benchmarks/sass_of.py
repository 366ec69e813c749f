"""The SASS of simt configs in one layout, and each kernel's opcode mix (needs cuobjdump).

Usage: python benchmarks/sass_of.py --trans TN [--base K=V,...] CHANGES [CHANGES ...] --out DIR

Each CHANGES (comma-separated NAME=VALUE, development defines such as COPY_STEP allowed) is
applied to the base (default: the 128 x 64 tile at two blocks an SM with the loop twin) and
compiled for sm_90a, aligned, as the launcher would; DIR gets its cuobjdump -sass as
sass-N.txt and ptxas's report, and the script prints, per kernel, registers, spills and the
count of each opcode (FFMA, LDS and the like, their widths apart) in the whole function.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

BASE = ("BM=128,BN=64,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=2,GROUP_M=8,ADVANCE=1,"
        "FMA_ORDER=1")  # fmt: skip


def parse(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)}


def opcode_mix(sass: str) -> collections.Counter:
    """Opcodes of the function's instructions (first token after the address), with widths."""
    ops = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", sass)
    return collections.Counter(ops)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("changes", nargs="+")
    parser.add_argument("--trans", default="TN")
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from helpers import compile_report

    from tunedgemm.families import FAMILIES
    from tunedgemm.launch import _defines
    from tunedgemm.params import KernelConfig

    simt = FAMILIES["simt"]
    tunables = {t.name for t in simt.tunables}
    out = Path(args.out)
    for i, text in enumerate(args.changes):
        changes = {**parse(args.base), **parse(text)}
        own = {k: v for k, v in changes.items() if k in tunables}
        config = KernelConfig.make("simt", {**simt.default_config("float32").as_dict(), **own})
        defines = {**_defines(config, "float32", args.trans[0] == "T", args.trans[1] == "T", True),
                   **{k: v for k, v in changes.items() if k not in tunables}}  # fmt: skip
        where = out / f"sass-{i}"
        where.mkdir(parents=True, exist_ok=True)
        report = compile_report(simt.source, defines, where)
        sass = subprocess.run(["cuobjdump", "-sass", str(where / "kernel.cubin")],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        (out / f"sass-{i}.txt").write_text(sass)
        mix = opcode_mix(sass)
        regs = re.findall(r"Used (\d+) registers", report)
        spills = re.findall(r"(\d+) bytes spill stores", report)
        print(f"[{i}] {args.trans} {text}: registers {regs}, spill stores {spills}")
        print("    " + ", ".join(f"{op} {n}" for op, n in mix.most_common(24)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
