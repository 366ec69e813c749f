"""Types of the C extension tunedgemm/_fastlaunch.c."""

from typing import Any

class Kernel:
    def __init__(self, launch: int | None, function: int, block: tuple[int, int, int], smem: int,
                 codes: str, /) -> None: ...  # fmt: skip
    def __call__(self, grid: tuple[int, int, int], stream: int,
                 values: tuple[Any, ...], /) -> int: ...  # fmt: skip

class LtMatmul:
    def __init__(self, matmul: int | None, handle: int, desc: int, a_layout: int,
                 b_layout: int, c_layout: int, algo: int, workspace_size: int,
                 is_double: bool, graph_calls: tuple[int, ...] | None = None,
                 /) -> None: ...  # fmt: skip
    def __call__(self, a: Any, b: Any, c: Any, alpha: float, beta: float, workspace: Any,
                 stream: int, /) -> int: ...  # fmt: skip
    def graph_counts(self) -> tuple[int, int, bool]: ...

class Replay:
    def __init__(self, queue: Any, graph_calls: tuple[int, ...] | None = None,
                 /) -> None: ...  # fmt: skip
    def __call__(self, a: Any, b: Any, c: Any, alpha: float, beta: float, stream: int,
                 workspace: Any = 0, /) -> None: ...  # fmt: skip
    def graph_counts(self) -> tuple[int, int, bool]: ...
