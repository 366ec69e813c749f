"""Types of the C short route (tunedgemm/_short_route.c)."""

from collections.abc import Callable
from typing import Any

import numpy as np

SGEMM: int
DGEMM: int
GEMM: int
MATMUL: int

class Route:
    """A public routine with its short route in C."""

    __wrapped__: Callable[..., Any]
    def __init__(self, function: Callable[..., Any], kind: int) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

def configure(environ_dict: dict[Any, Any], override_keys: tuple[Any, ...],
              matmul: Callable[..., Any], dot_limit: float) -> None: ...  # fmt: skip
def set_crossover(dtype: np.dtype, size: float) -> None: ...
def forget() -> None: ...
