"""How long PyTorch takes to make a new CUDA result, by constructor (issue 13: dgemm with a new
result on torch tensors lost 2-5 us per call to torch.empty_strided at 256^3-512^3).

Usage: python benchmarks/profile_torch_alloc.py      (needs torch with a GPU)
Prints the median wall-clock microseconds per call of each way, for a 512x512 float64 result.
"""

from __future__ import annotations

import statistics
import time

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


if __name__ == "__main__":
    main()
