"""Shared helpers of the test suite: hardware probe, random inputs, the float64 reference check.

A plain module (tests/ is on sys.path through pytest's `pythonpath` setting), so that test
modules import it by name under --import-mode=importlib, where conftest.py is not importable."""

from __future__ import annotations

import threading
from typing import ClassVar

import numpy as np


def gpu_available() -> bool:
    from tunedgemm import cuda

    return cuda.status()[0]


def table_configs() -> list[tuple[str, object]]:
    """(dtype, config) for every own config the shipped table can choose: each entry's best
    and its runners-up, which the wave model may pick at shapes between entries."""
    from tunedgemm import table

    current = table.load(table.shipped_path())
    found = set()
    for device in current.devices:
        for key, entries in device.entries.items():
            found |= {(key.split("/")[0], config) for e in entries for config, _ in e.top}
    return sorted(found, key=str)


def uniform(rng: np.random.Generator, shape: tuple[int, ...], dtype, order: str = "C"):
    """Uniform(-1, 1) values: never zeros, signs mixed so cancellation is exercised."""
    return np.asarray(rng.uniform(-1, 1, shape), dtype=dtype, order=order)


def assert_gemm(out, alpha, a, b, beta, c, dtype) -> None:
    from tunedgemm import checks

    ok, error, tol = checks.check(out, alpha, a, b, beta, c, np.dtype(dtype))
    assert ok, f"scaled error {error:.3e} > tolerance {tol:.3e}"


def dask_client(n_workers: int, processes: bool):
    """Yields a distributed Client on a LocalCluster of one-thread workers, closed after (the
    dashboard on any free port, so that two clusters at once do not compete for one)."""
    import distributed

    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                       processes=processes, dashboard_address=":0")  # fmt: skip
    with cluster, distributed.Client(cluster) as client:
        yield client


class FakeContext:
    """Stands in for pycuda.driver.Context: a context stack per thread, as PyCUDA keeps (in C++
    thread-local storage, which outlives a thread's Python state: here, keyed by thread id)."""

    stacks: ClassVar[dict[int, list]] = {}

    def __init__(self, handle):
        self.handle = handle

    @classmethod
    def stack(cls):
        return cls.stacks.setdefault(threading.get_ident(), [])

    def push(self):
        self.stack().append(self)

    @classmethod
    def pop(cls):
        cls.stack().pop()

    @classmethod
    def get_current(cls):
        return cls.stack()[-1] if cls.stack() else None
