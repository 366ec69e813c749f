"""The spare results a plan keeps (tunedgemm/recycle.py): when one may be handed out again,
which libraries take part, and the bounds on what is kept."""

from __future__ import annotations

import types

import numpy as np
import pytest

from tunedgemm import recycle


class Array:
    """Stands for a device array: an object with a buffer, weakly referenceable."""

    def __init__(self, nbytes):
        self.memory = np.empty(nbytes, np.uint8)


def _kind(name="cupy"):
    return types.SimpleNamespace(name=name, holders=lambda box: recycle.counts(box[0],
                                                                             box[0].memory))


@pytest.fixture
def budget(monkeypatch):
    """An empty budget of held bytes, restored after the test."""
    monkeypatch.setattr(recycle, "_held", [0])
    return recycle._held


def test_a_result_comes_back_once_dropped_and_on_its_stream(budget):
    spares = recycle.Spares.of(_kind(), 64)
    first = spares.make(Array, 64, stream=5)
    assert spares.take(5) is None  # `first` still holds it
    del first
    assert spares.take(7) is None  # another stream: dropped, not handed out
    again = spares.make(Array, 64, stream=7)
    again.tag = "again"
    del again
    assert spares.take(7).tag == "again"


def test_a_holder_of_its_memory_alone_keeps_it_out(budget):
    spares = recycle.Spares.of(_kind(), 64)
    result = spares.make(Array, 64, stream=0)
    memory = result.memory
    del result
    assert spares.take(0) is None
    del memory
    assert spares.take(0) is None  # dropped when found held: a new result is made next


def test_the_same_result_serves_a_loop_of_calls(budget):
    spares = recycle.Spares.of(_kind(), 64)
    ident = id(spares.make(Array, 64, stream=0))
    for _ in range(5):
        assert id(spares.take(0)) == ident


def test_libraries_taken_by_setting(monkeypatch):
    for mode, taken in (("auto", {"cupy", "pycuda"}), ("all", {"cupy", "pycuda", "torch"}),
                        ("off", set())):  # fmt: skip
        monkeypatch.setenv("TUNEDGEMM_RECYCLE_RESULTS", mode)
        assert {n for n in ("cupy", "pycuda", "torch") if recycle.enabled(n)} == taken


def test_large_results_are_not_kept_and_the_least_recently_made_go_first(budget, monkeypatch):
    monkeypatch.setattr(recycle, "_keeping", recycle.collections.OrderedDict())
    assert recycle.Spares.of(_kind(), recycle.RESULT_BYTES_MAX + 1) is None
    size = recycle.RESULT_BYTES_MAX
    count = recycle.HELD_BYTES_MAX // size
    plans = [recycle.Spares.of(_kind(), size) for _ in range(count + 1)]
    for spares in plans[:count]:
        spares.make(Array, 16, stream=0)
    assert budget[0] == recycle.HELD_BYTES_MAX and all(s.items for s in plans[:count])
    plans[0].make(Array, 16, stream=0)  # made again: the newest now, nothing let go
    assert budget[0] == recycle.HELD_BYTES_MAX and all(s.items for s in plans[:count])
    plans[count].make(Array, 16, stream=0)
    assert budget[0] == recycle.HELD_BYTES_MAX
    assert not plans[1].items and all(s.items for s in plans if s is not plans[1])
    recycle.release()
    assert budget[0] == 0 and not any(s.items for s in plans)
