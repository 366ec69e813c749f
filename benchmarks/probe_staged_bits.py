"""Which elements of C differ between dmma's staged-epilogue (EPILOGUE=1) variants at beta != 0,
and from the float64 reference (a debugging probe for the edge switches' GPU test)."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    from helpers import whole_c

    from tunedgemm import checks, gpu_backend
    from tunedgemm.families import FAMILIES
    from tunedgemm.params import KernelConfig
    from tunedgemm.tuning import problems

    base = {**FAMILIES["dmma"].default_config("float64").as_dict(), "ADVANCE": 1}
    variants = {"staged": {**base, "EPILOGUE": 1},
                "staged-off": {**base, "EPILOGUE": 1, "SHIFT_EDGE": 0, "CLAMP_EDGE": 0},
                "direct": base, "staged-adv0": {**base, "EPILOGUE": 1, "ADVANCE": 0}}
    rng = np.random.default_rng(1)
    for (m, n, k), trans in itertools.product(((60, 70, 2000), (300, 260, 16), (200, 17, 1037)),
                                              ((False, False), (True, False))):  # fmt: skip
        print(f"{'NT'[trans[0]]}{'NT'[trans[1]]}:")
        problem = problems.make(m, n, k, np.float64, *trans, rng, padded=True)
        c0 = rng.uniform(-1, 1, (m, n))
        exact, scale = checks.float64_reference(-0.75, problem.op_a, problem.op_b, 0.5, c0)
        outs = {}
        for label, params in variants.items():
            for rep in (0, 1):
                problem.poison_c()
                problem.set_c(c0)
                config = KernelConfig.make("dmma", params)
                gpu_backend.run(problem.form, problem.dtype, -0.75, 0.5, config)
                out = whole_c(problem)[:m]
                outs[f"{label}#{rep}"] = out
                err = checks.scaled_error(out, exact, scale)
                print(f"{m}x{n}x{k} {label}#{rep}: scaled error {err:.3g}, "
                      f"finite {np.isfinite(out).all()}")  # fmt: skip
        ref = outs["direct#0"]
        for label, out in outs.items():
            diff = np.argwhere(out.view(np.int64) != ref.view(np.int64))
            where = ""
            if len(diff):
                where = (f"rows {diff[:, 0].min()}-{diff[:, 0].max()} "
                         f"cols {diff[:, 1].min()}-{diff[:, 1].max()}")  # fmt: skip
            print(f"  {label} vs direct#0: {len(diff)} of {out.size} differ {where}; "
                  f"max |diff| {np.nanmax(np.abs(out - ref)):.3g}")  # fmt: skip
            if len(diff) and label.endswith("#0"):
                # The old value each wrong element used: (out - alpha * product) / beta.
                product = problem.op_a.astype(np.float64) @ problem.op_b.astype(np.float64)
                for i, j in diff[:12]:
                    used = (out[i, j] + 0.75 * product[i, j]) / 0.5
                    same = np.argwhere(np.isclose(c0, used, rtol=0, atol=1e-9))
                    print(f"    ({i},{j}) c0 {c0[i, j]:.6f} used {used:.6f} "
                          f"= c0 at {same[:3].tolist()}")  # fmt: skip


if __name__ == "__main__":
    main()
