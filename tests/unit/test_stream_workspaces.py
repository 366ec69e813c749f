"""cuda.StreamWorkspaces: one buffer per stream; a retired buffer (too many streams used the
owner, or the owner was dropped) stays out of the pool without touching its stream, which
may be gone, until release_pool() or until the retired bytes pass RETIRED_LIMIT."""

from __future__ import annotations

import itertools

import pytest

from tunedgemm import cuda


class Buffer(int):
    """A stand-in ScratchBuffer: an address, a size and the pool it came from."""

    size = 4096
    pool = cuda._scratch


@pytest.fixture
def pool(monkeypatch):
    """allocate() hands out fresh stand-ins; a stream touched through release_after or a
    context synchronise is recorded."""
    touched: list[str] = []
    addresses = itertools.count(0x1000, 0x1000)
    monkeypatch.setattr(cuda, "allocate", lambda nbytes: Buffer(next(addresses)))
    monkeypatch.setattr(cuda, "release_after", lambda buffers, stream: touched.append("stream"))
    monkeypatch.setattr(cuda, "_driver_synchronize", lambda: touched.append("synchronize"))
    monkeypatch.setattr(cuda, "_retired", [])
    return touched


def test_one_buffer_per_stream_and_the_oldest_is_retired(pool):
    spaces = cuda.StreamWorkspaces(4096)
    first = spaces(11)
    assert spaces(11) == first and spaces(12) != first
    for stream in range(100, 100 + cuda.StreamWorkspaces.MAX_STREAMS - 1):
        spaces(stream)
    assert cuda._retired == [first] and pool == []  # its stream (maybe gone) is not touched
    assert len(spaces.buffers) == cuda.StreamWorkspaces.MAX_STREAMS


def test_dropping_the_owner_retires_every_buffer_without_touching_streams(pool):
    spaces = cuda.StreamWorkspaces(4096)
    held = [spaces(stream) for stream in (7, 8)] + [spaces(cuda.CU_STREAM_PER_THREAD)]
    del spaces
    assert sorted(cuda._retired) == sorted(held) and pool == []


def test_past_the_limit_one_synchronise_hands_the_retired_back(monkeypatch, pool):
    monkeypatch.setattr(cuda, "RETIRED_LIMIT", 3 * Buffer.size)
    spaces = cuda.StreamWorkspaces(4096)
    for stream in range(3):
        spaces(stream)
    del spaces
    assert len(cuda._retired) == 3 and pool == []
    cuda._retire(Buffer(0x99000))
    assert cuda._retired == [] and pool == ["synchronize"]


def test_a_failed_synchronise_keeps_them_until_release_pool(monkeypatch, pool):
    def refused():
        raise RuntimeError("no context current in this thread")

    monkeypatch.setattr(cuda, "RETIRED_LIMIT", 0)
    monkeypatch.setattr(cuda, "_driver_synchronize", refused)
    buffer = Buffer(0x5000)
    cuda._retire(buffer)
    assert cuda._retired == [buffer]
