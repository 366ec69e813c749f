"""Resumable tuning: each finished task is appended to a JSON-lines file and skipped on rerun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..params import KernelConfig
from ..table import CUBLAS, recorded_config

if TYPE_CHECKING:
    from .driver import Result


class Checkpoint:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def append(self, result: Result) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(result.to_json()) + "\n")

    def load(self) -> dict[str, Result]:
        """Finished results by task id; a torn last line (an interrupted write) is ignored."""
        from .driver import Result, Task
        from .space import Shape

        done: dict[str, Result] = {}
        if not self.path.exists():
            return done
        for line in self.path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            shape = Shape(rec["m"], rec["n"], rec["k"])
            task = Task(rec["dtype"], rec["trans_a"], rec["trans_b"], shape,
                        rec.get("precision", "ieee"))  # fmt: skip
            own = _config(rec["own"])
            assert isinstance(own, KernelConfig)
            done[task.id] = Result(
                task,
                _config(rec["choice"]),
                own,
                rec["own_ms"],
                rec["cublas_ms"],
                rec["error"],
                rec["vs_cublas"],
                [(str(c), float(ms)) for c, ms in rec["timed"]],
            )
        return done


def _config(raw: object) -> KernelConfig | str:
    if raw == CUBLAS:
        return CUBLAS
    assert isinstance(raw, dict)
    return recorded_config(raw["family"], raw["params"])
