"""A dependency-free progress bar with ETA on stderr."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, total: int, initial: int = 0, stream: TextIO | None = None) -> None:
        self.total, self.done, self.fresh = total, initial, 0
        self.stream = stream or sys.stderr
        self.started = time.monotonic()

    def eta(self) -> str:
        if self.fresh == 0:
            return "?"
        left = (time.monotonic() - self.started) / self.fresh * (self.total - self.done)
        return f"{int(left // 60)}m{int(left % 60):02d}s"

    def step(self, label: str) -> None:
        self.done += 1
        self.fresh += 1
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        print(f"[{bar}] {self.done}/{self.total} ETA {self.eta()}  {label}", file=self.stream,
              flush=True)  # fmt: skip

    def note(self, text: str) -> None:
        print(f"tune: {text}", file=self.stream, flush=True)

    def close(self) -> None:
        elapsed = time.monotonic() - self.started
        self.note(f"{self.fresh} tasks in {elapsed / 60:.1f} min")
