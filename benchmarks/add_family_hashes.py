"""Give a table written before family_hashes its family hashes, from the sources it was tuned on.

    python benchmarks/add_family_hashes.py tunedgemm/tables/tuned.json --commit e843aa6

Checks first that the table's recorded kernel_hash (over every file in kernels/) is that of
kernels/ at the commit; only then computes each family's hash from those same sources and
writes it into the table's header (kernel_hash stays, for the record). Exits 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from tunedgemm import table
from tunedgemm.compiler import inline_includes
from tunedgemm.families import FAMILIES


def sources_at(commit: str) -> dict[str, bytes]:
    """kernels/*.cu* as they were at commit."""
    names = subprocess.run(["git", "ls-tree", "--name-only", commit, "kernels/"],
                           check=True, capture_output=True, text=True).stdout.split()  # fmt: skip
    return {Path(name).name: subprocess.run(["git", "show", f"{commit}:{name}"], check=True,
                                            capture_output=True).stdout
            for name in names if ".cu" in Path(name).name}  # fmt: skip


def legacy_hash(sources: dict[str, bytes]) -> str:
    """table.kernel_hash's digest over these sources."""
    digest = hashlib.sha256()
    for name in sorted(sources):
        digest.update(name.encode())
        digest.update(sources[name])
    return digest.hexdigest()[:16]


def family_hashes(sources: dict[str, bytes]) -> dict[str, str]:
    """table.family_hash of every family over these sources."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in sources.items():
            (Path(tmp) / name).write_bytes(text)
        return {name: hashlib.sha256(table.code_only(
                    inline_includes(family.source, Path(tmp))).encode()).hexdigest()[:16]
                for name, family in sorted(FAMILIES.items())}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("--commit", required=True, help="the commit the table was tuned at")
    args = parser.parse_args()
    path = Path(args.table)
    data = json.loads(path.read_text())
    sources = sources_at(args.commit)
    recorded, computed = data.get("kernel_hash"), legacy_hash(sources)
    print(f"recorded kernel_hash {recorded}; kernels/ at {args.commit}: {computed}")
    if recorded != computed:
        print("mismatch: the table was not tuned on these sources; nothing written")
        return 1
    hashes = family_hashes(sources)
    print(f"family_hashes {hashes}")
    header = {k: v for k, v in data.items() if k != "devices"}
    path.write_text(json.dumps({**header, "family_hashes": hashes, "devices": data["devices"]},
                               indent=1) + "\n")  # fmt: skip
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
