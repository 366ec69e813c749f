"""tunedgemm's warning categories, and the stack level that points a warning at the caller."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class NumpyFallbackWarning(RuntimeWarning):
    """No usable GPU: tunedgemm computes with NumPy (given once per process, at the first call).

    Select it by category, e.g. ``warnings.filterwarnings("ignore",
    category=tunedgemm.NumpyFallbackWarning)``."""


class TableWarning(RuntimeWarning):
    """The tuning table is missing, stale or broken for this call: a fallback config runs."""


def caller_stacklevel() -> int:
    """The stacklevel for a warnings.warn made by the function that calls this: the first frame
    outside the tunedgemm package, so that the warning names the user's file and line whatever
    route the call took (the C short route adds no frame). Where no such frame exists but the
    interpreter's own (`python -m tunedgemm ...`), the outermost tunedgemm frame."""
    frame = sys._getframe(1)  # the function that will call warnings.warn: level 1
    level = 1
    while frame.f_back is not None and _inside(frame):
        frame = frame.f_back
        level += 1
    if frame.f_globals.get("__name__") == "runpy" and level > 1:
        level -= 1  # the command line's own frames: name tunedgemm's entry point instead
    return level


def _inside(frame: object) -> bool:
    return frame.f_code.co_filename.startswith(_PACKAGE_DIR)  # type: ignore[attr-defined]
