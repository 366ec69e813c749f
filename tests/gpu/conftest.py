"""Fixtures shared by the GPU tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def small_tiles(monkeypatch):
    """Tiles of 256 on problems of a few hundred, so every path of the pipeline runs fast."""
    from tunedgemm import pipeline

    monkeypatch.setattr(pipeline, "SINGLE_TILE_BYTES", 0)
    monkeypatch.setattr(pipeline, "PANEL", 256)
    monkeypatch.setenv("TUNEDGEMM_BACKEND", "gpu")
    monkeypatch.setenv("TUNEDGEMM_CUBLAS", "0")
