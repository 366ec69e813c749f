"""Does a kernel edit leave the shipped configs' kernels as they were? (before re-stamping a hash)

Usage: python benchmarks/same_preprocessed.py FAMILY [--base REV]

A tunable added to a family declares the value that reproduces the kernel as tuned
(`Tunable(..., absent=...)`); the table's family hash may then be re-stamped instead of the
table regenerated (docs/tuning.md). This checks the claim: for every config of FAMILY in the
shipped table and every call-time variant (transposes, alignment), `nvcc -E` of the family's
template (includes inlined) at REV (default HEAD) and in the working tree, with the same
defines, must give the same text, whitespace aside. Needs nvcc, no GPU. Exit status 1 where
any variant differs.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def kernels_at(rev: str, into: Path) -> Path:
    """The kernels/ directory as it was at git revision `rev`, extracted under `into`."""
    archive = subprocess.run(["git", "archive", rev, "kernels"], cwd=ROOT, check=True,
                             capture_output=True).stdout  # fmt: skip
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "kernels"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family")
    parser.add_argument("--base", default="HEAD")
    args = parser.parse_args()

    from helpers import preprocessed, shipped_configs

    from tunedgemm import launch
    from tunedgemm.compiler import inline_includes, kernels_dir
    from tunedgemm.families import FAMILIES

    family = FAMILIES[args.family]
    dtype = family.dtypes[0]
    work = Path(tempfile.mkdtemp())
    (work / "base.cu").write_text(inline_includes(family.source, kernels_at(args.base, work)))
    (work / "now.cu").write_text(inline_includes(family.source, kernels_dir()))
    configs = sorted(shipped_configs(args.family), key=str)
    differ = 0
    for config in configs:
        for ta, tb, aligned in itertools.product((False, True), repeat=3):
            defines = launch._defines(config, dtype, ta, tb, aligned)
            if preprocessed(work / "base.cu", defines) != preprocessed(work / "now.cu", defines):
                differ += 1
                print(f"differs: {config} trans_a={ta} trans_b={tb} aligned={aligned}")
    print(f"{args.family}: {len(configs)} shipped configs x 8 variants, {differ} differ "
          f"from {args.base}")  # fmt: skip
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
