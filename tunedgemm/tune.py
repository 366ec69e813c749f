"""python -m tunedgemm.tune: the tuner's command line (same as the tunedgemm-tune script)."""

from __future__ import annotations

import sys

from .tuning.cli import main

if __name__ == "__main__":
    sys.exit(main())
