"""What TN and TT products with an operand transposed first, then an own kernel of the inner
layout (tunedgemm/pretranspose.py: A -> NN or NT, B -> TT), do through the public call:
probe_host_ties.py's passes (PyCUDA GPUArrays into c, operands padded, fresh plans each pass,
against cuBLAS into c through scikit-cuda on the same operands), TN unless --trans TT, with
"before" autotuning without the transposed runners and "after" as now; writes
probe_pretranspose-<own|auto>-<TN|TT>.json (each pass's pick in its rows).

    python benchmarks/probe_pretranspose.py [--shapes MxNxK,...] [--passes 2] [--own-only]
        [--dtype float32 float64] [--trans TT] [--out DIR] [--from-n N] [--from-m M]
        [--from-flops F]

--from-n, --from-m and --from-flops set pretranspose.FROM_N, FROM_M and FROM_FLOPS for
"after": where the runners are timed (below the gates, before and after otherwise time the
same).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

# TN's worst large random float32 shapes of 2026-12-02 (0.82-0.93x cuBLAS through the call),
# the squares, and a shape under pretranspose.FROM_N (B's runner alone is timed there).
SHAPES = "827x4994x7378,3297x2367x1173,7110x1102x3327,4096x4096x4096,8192x8192x8192,2048x768x4096"


def _take_gates(argv: list[str]) -> None:
    """Set pretranspose's gates from --from-n / --from-m / --from-flops, taken out of argv."""
    from tunedgemm import pretranspose

    gates = (("--from-n", "FROM_N", int), ("--from-m", "FROM_M", int),
             ("--from-flops", "FROM_FLOPS", float))  # fmt: skip
    for option, name, kind in gates:
        if option in argv:
            at = argv.index(option)
            setattr(pretranspose, name, kind(argv[at + 1]))
            del argv[at : at + 2]


def main() -> int:
    from probe_host_ties import main as passes

    _take_gates(sys.argv)
    sys.argv[1:1] = ["--shapes", SHAPES, "--trans", "TN"]  # (later ones win)
    return passes("pretranspose", {"pretranspose.FROM_FLOPS": math.inf}, [], __doc__)


if __name__ == "__main__":
    sys.exit(main())
