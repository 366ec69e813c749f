"""cuda.StreamWorkspaces: one buffer per stream, given back only after the work queued on its
stream has run (release_after), when too many streams used it or when its owner is dropped."""

from __future__ import annotations

import itertools

import pytest

from tunedgemm import cuda


class Buffer(int):
    """A stand-in ScratchBuffer: an address."""


@pytest.fixture
def pool(monkeypatch):
    """allocate() hands out fresh stand-ins; release_after records (buffers, stream)."""
    released: list[tuple[list[int], int]] = []
    addresses = itertools.count(0x1000, 0x1000)
    monkeypatch.setattr(cuda, "allocate", lambda nbytes: Buffer(next(addresses)))
    monkeypatch.setattr(cuda, "release_after",
                        lambda buffers, stream: released.append((list(buffers), stream)))
    monkeypatch.setattr(cuda, "_retired", [])
    return released


def test_one_buffer_per_stream_and_the_oldest_goes_after_its_work(pool):
    spaces = cuda.StreamWorkspaces(4096)
    first = spaces(11)
    assert spaces(11) == first and spaces(12) != first
    for stream in range(100, 100 + cuda.StreamWorkspaces.MAX_STREAMS - 1):
        spaces(stream)
    assert pool == [([first], 11)]  # the ninth stream retired the first, on its own stream
    assert len(spaces.buffers) == cuda.StreamWorkspaces.MAX_STREAMS


def test_dropping_the_owner_retires_every_buffer_on_its_stream(pool):
    spaces = cuda.StreamWorkspaces(4096)
    held = {stream: spaces(stream) for stream in (7, 8)}
    per_thread = spaces(cuda.CU_STREAM_PER_THREAD)
    del spaces
    assert sorted(pool) == sorted([([held[7]], 7), ([held[8]], 8),
                                   ([per_thread], cuda.CU_STREAM_PER_THREAD)])  # fmt: skip


def test_a_stream_that_cannot_be_waited_on_keeps_its_buffer_out_of_the_pool(monkeypatch, pool):
    def refused(buffers, stream):
        raise RuntimeError("no context current in this thread")

    monkeypatch.setattr(cuda, "release_after", refused)
    spaces = cuda.StreamWorkspaces(4096)
    buffer = spaces(5)
    del spaces
    assert cuda._retired == [buffer]
