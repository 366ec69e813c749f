"""How long PyTorch takes to make a new CUDA result, by constructor (issue 13: dgemm with a new
result on torch tensors lost 2-5 us per call to torch.empty_strided at 256^3-512^3).

Usage: python benchmarks/profile_torch_alloc.py      (needs torch with a GPU)
Prints the median wall-clock microseconds per call of each way, for a 512x512 float64 result
made and dropped; then, for torch.empty_strided and for a view of a larger tensor
(Tensor.as_strided), the making alone and the dropping alone (a batch made, then freed); then
what each accessor tunedgemm reads from a tensor on a device call costs.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch


def median_us(make, reps: int = 20000) -> float:
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(reps):
            make()
        samples.append((time.perf_counter() - start) / reps * 1e6)
    return statistics.median(samples)


def main() -> None:
    like = torch.empty((512, 512), dtype=torch.float64, device="cuda")
    device, dtype, shape, strides = like.device, torch.float64, (512, 512), (512, 1)
    empty_strided, empty = torch.empty_strided, torch.empty
    ways = {
        "torch.empty_strided(shape, strides, dtype=, device=)":
            lambda: empty_strided(shape, strides, dtype=dtype, device=device),
        "torch.empty(shape, dtype=, device=)": lambda: empty(shape, dtype=dtype, device=device),
        "like.new_empty(shape)": lambda: like.new_empty(shape),
        "like.new_empty_strided(shape, strides)": lambda: like.new_empty_strided(shape, strides),
        "torch.empty_like(like)": lambda: torch.empty_like(like),
    }
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}: us per call")
    for name, make in ways.items():
        print(f"{median_us(make):8.2f}  {name}", flush=True)
    slab = torch.empty((64, 512, 512), dtype=dtype, device=device)
    size = 512 * 512
    apart = {
        "torch.empty_strided": lambda i: empty_strided(shape, strides, dtype=dtype,
                                                       device=device),
        "slab.as_strided (a view)": lambda i: slab.as_strided(shape, strides, i * size),
    }
    print("# made alone / dropped alone, us each (batches of 64)")
    for name, make in apart.items():
        made_us, dropped_us = _made_and_dropped(make)
        print(f"{made_us:8.2f} {dropped_us:8.2f}  {name}", flush=True)
    from tunedgemm import device_arrays

    kind = device_arrays.kind_of(like)
    reads = {
        "kind.signature(x)": lambda: kind.signature(like),
        "kind.ptr(x)": lambda: kind.ptr(like),
        "kind.stream(x)": lambda: kind.stream(like),
        "kind.empty(x, shape, float64, F)": lambda: kind.empty(like, shape, np.dtype("float64"),
                                                               "F"),
        "x.shape": lambda: like.shape,
        "x.stride()": lambda: like.stride(),
        "x.get_device()": lambda: like.get_device(),
        "x.data_ptr()": lambda: like.data_ptr(),
    }
    print("# what a device call reads, us each")
    for name, read in reads.items():
        print(f"{median_us(read):8.2f}  {name}", flush=True)


def _made_and_dropped(make, batch: int = 64, rounds: int = 300) -> tuple[float, float]:
    """Median us to make one (of a batch kept) and to drop one (the batch cleared)."""
    made, dropped = [], []
    for _ in range(rounds):
        kept = []
        start = time.perf_counter()
        for i in range(batch):
            kept.append(make(i))
        middle = time.perf_counter()
        kept.clear()
        end = time.perf_counter()
        made.append((middle - start) / batch * 1e6)
        dropped.append((end - middle) / batch * 1e6)
    return statistics.median(made), statistics.median(dropped)


if __name__ == "__main__":
    main()
