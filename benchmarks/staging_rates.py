"""Host copies into pinned memory, as the pipeline stages panels: how fast, and what slows them.

Each case copies 64 MB panels of an 8192^2 float32 C-ordered array into a pinned buffer with
pipeline.host_copy (16 threads, 2 MB pieces), 8 times, and reports each copy and the median:
back to back; after 0.2 s of idle (the copy threads and cores at rest, as between calls);
with each piece uploaded as soon as it is copied (pipeline._stage_up, as the pipeline does),
back to back and after idle; and the strided panel of B's kind (8192 x 2048 columns of a
C-ordered array), back to back. Needs the GPU (PyCUDA). Writes staging_rates.json to --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import time
from pathlib import Path

import numpy as np

SIZE, PANEL, REPEATS = 8192, 2048, 8


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="benchmarks/results")
    args = parser.parse_args()
    import pycuda.driver as drv

    from tunedgemm import cuda, pinned, pipeline

    cuda.context()
    a = np.random.default_rng().uniform(-1, 1, (SIZE, SIZE)).astype(np.float32)
    nbytes = PANEL * SIZE * 4
    buffer = pinned.take(nbytes)
    device = cuda.allocate(nbytes)
    stream = drv.Stream()
    rows = buffer[:nbytes].view(np.float32).reshape(PANEL, SIZE)
    columns = buffer[:nbytes].view(np.float32).reshape(SIZE, PANEL)

    def row_panel(i: int, upload: bool) -> None:
        src = a[(i % 4) * PANEL : (i % 4 + 1) * PANEL]
        if upload:
            pipeline._stage_up(drv, rows, src, buffer, int(device), SIZE, stream)
            stream.synchronize()
        else:
            pipeline.host_copy(rows, src)

    def column_panel(i: int, upload: bool) -> None:
        pipeline.host_copy(columns, a[:, (i % 4) * PANEL : (i % 4 + 1) * PANEL])

    cases = [("rows, back to back", row_panel, 0.0, False),
             ("rows, after 0.2 s idle", row_panel, 0.2, False),
             ("rows with uploads, back to back", row_panel, 0.0, True),
             ("rows with uploads, after 0.2 s idle", row_panel, 0.2, True),
             ("columns (strided), back to back", column_panel, 0.0, False)]  # fmt: skip
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {cuda.device().name()}, {date}: 64 MB panels, ms per copy, then median GB/s")
    record = {"device": cuda.device().name(), "date": date, "panel_bytes": nbytes,
              "workers": pipeline._WORKERS, "piece_bytes": pipeline._CHUNK_BYTES,
              "cases": []}  # fmt: skip
    for name, copy, idle, upload in cases:
        times = []
        for i in range(REPEATS):
            time.sleep(idle)
            start = time.perf_counter()
            copy(i, upload)
            times.append((time.perf_counter() - start) * 1e3)
        rate = nbytes / 1e6 / statistics.median(times)
        record["cases"].append({"case": name, "ms": times, "median_gb_s": rate})
        print(f"{name:38} " + " ".join(f"{t:5.2f}" for t in times) + f"   {rate:5.1f} GB/s")
    pinned.give(buffer)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "staging_rates.json").write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
