"""What run-time autotuning would time at a task's shape, for the tuner to time beside its sample.

The tuner's random strategy samples the same few dozen configs at every shape (a fixed
order: each is compiled once per run), so a table tuned by it alone holds none of what calls
time besides the table's own picks: loop twins, wave-filling and wider k-splits, narrow,
round, small-k and medium tiles (tunedgemm/plans.py, own_candidates; the medium tiles run
three blocks an SM, MIN_BLOCKS=3, outside the tuner's space). Seeding each task with those,
taken from the installed table's candidates at the shape, makes a regenerated table start
from what calls already run, and its entries then seed the next regeneration in turn. The
same shape's candidates under the other transpose pairs seed it too, with this layout's
relatives: a kernel change that speeds one layout up (simt's REG_TRANSPOSE for TN) can make
another layout's tiling the better one there."""

from __future__ import annotations

import numpy as np

from .. import selection
from ..params import IEEE, KernelConfig
from ..pipeline import padded
from ..plans import GemmKey, own_candidates
from .driver import Task


def layout_key(task: Task) -> GemmKey:
    """The plan key of the task's product with leading dimensions padded to 16 bytes, as the
    tuner's operands (tunedgemm/tuning/problems.py, padded) and host calls lay them out."""
    m, n, k = task.shape.m, task.shape.n, task.shape.k
    size = np.dtype(task.dtype).itemsize
    lda = padded(k if task.trans_a else m, size)
    ldb = padded(n if task.trans_b else k, size)
    return GemmKey(task.dtype, task.precision, m, n, k, task.trans_a, task.trans_b, lda, ldb,
                   padded(m, size), True)  # fmt: skip


def autotuned(task: Task, gpu: str, cc: str) -> list[KernelConfig]:
    """The own configs autotuning would time at the task (the installed table's candidates for
    this GPU and their relatives); none for precision modes, whose calls time no relatives."""
    if task.precision != IEEE:
        return []
    own = table_candidates(task, task.trans_a, task.trans_b, gpu, cc)
    return [c for c in own_candidates(own, layout_key(task)) if isinstance(c, KernelConfig)]


def other_layouts(task: Task, gpu: str, cc: str) -> list[KernelConfig]:
    """The installed table's own candidates at the task's shape under the other three
    transpose pairs, as they compile for the task's layout (KernelFamily.for_layout: another
    layout's twin settings dropped), with the relatives autotuning would time beside them
    under the task's own layout (its twins among them); none for precision modes."""
    from ..families import FAMILIES

    if task.precision != IEEE:
        return []
    pairs = [(ta, tb) for ta in (False, True) for tb in (False, True)
             if (ta, tb) != (task.trans_a, task.trans_b)]  # fmt: skip
    own = tuple(dict.fromkeys(
        FAMILIES[c.family].for_layout(c, task.trans_a, task.trans_b, True)
        for ta, tb in pairs for c in table_candidates(task, ta, tb, gpu, cc)))  # fmt: skip
    return [c for c in own_candidates(own, layout_key(task)) if isinstance(c, KernelConfig)]


def table_candidates(task: Task, trans_a: bool, trans_b: bool, gpu: str,
                     cc: str) -> tuple[KernelConfig, ...]:  # fmt: skip
    """The own configs the installed table's lookup gives at the task's shape under this
    transpose pair, for this GPU, in its order."""
    shape = task.shape
    choice = selection.choose(task.dtype, shape.m, shape.n, shape.k, trans_a, trans_b, gpu=gpu,
                              cc=cc, warn=False)  # fmt: skip
    return tuple(c for c in (choice.candidates or (choice.config,)) if isinstance(c, KernelConfig))


def within_work_bound(task: Task) -> list[KernelConfig]:
    """The whole space of every family made for shapes of at most some work (KernelFamily.
    max_work, the small family: a few dozen configs) where the task's shape is within it.
    The random strategy's sample, a fixed order over every family, would time the same few
    of them at every shape, and which of them wins moves with the shape."""
    from ..families import serving

    shape = task.shape
    return [config for family in serving(task.dtype, task.precision)
            if family.max_work is not None and family.within_work(shape.m, shape.n, shape.k)
            for config in family.space(task.dtype, task.precision)]  # fmt: skip


def of_task(task: Task, gpu: str, cc: str) -> list[KernelConfig]:
    """What the tuner times at a task besides its strategy's sample."""
    return list(dict.fromkeys([*autotuned(task, gpu, cc), *other_layouts(task, gpu, cc),
                               *within_work_bound(task)]))  # fmt: skip

