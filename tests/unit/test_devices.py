"""TUNEDGEMM_DEVICES and the list of visible GPUs, with a stand-in PyCUDA driver."""

from __future__ import annotations

import sys
import types
from typing import ClassVar

import pytest

from tunedgemm import devices


@pytest.fixture
def gpus(monkeypatch):
    """A stand-in pycuda.driver showing an H100 and an A100; the cached list is dropped
    before and after, so that no other test sees it."""

    class Device:
        models: ClassVar = [("NVIDIA H100 80GB HBM3", (9, 0)), ("NVIDIA A100-SXM4-40GB", (8, 0))]

        def __init__(self, index):
            self.model = self.models[index]

        @classmethod
        def count(cls):
            return len(cls.models)

        def name(self):
            return self.model[0]

        def compute_capability(self):
            return self.model[1]

    driver = types.SimpleNamespace(init=lambda: None, Device=Device)
    package = types.ModuleType("pycuda")
    package.driver = driver
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    devices.visible.cache_clear()
    yield
    devices.visible.cache_clear()


@pytest.mark.parametrize("text,expected", [
    (None, None), ("", None), ("all", None), (" ALL ", None), ("0", (0,)), ("1, 0", (1, 0)),
])  # fmt: skip
def test_requested(monkeypatch, text, expected):
    if text is None:
        monkeypatch.delenv(devices.DEVICES_ENV, raising=False)
    else:
        monkeypatch.setenv(devices.DEVICES_ENV, text)
    assert devices.requested() == expected


@pytest.mark.parametrize("text", ["x", "0,", "-1", "0,0", "1.5", "0;1", "gpu0"])
def test_bad_values_name_the_variable(monkeypatch, text):
    monkeypatch.setenv(devices.DEVICES_ENV, text)
    with pytest.raises(ValueError, match=devices.DEVICES_ENV):
        devices.requested()


def test_visible_gpus_and_the_selection(gpus, monkeypatch):
    found = devices.visible()
    assert [str(g) for g in found] == [
        "0: NVIDIA H100 80GB HBM3 (sm 9.0)", "1: NVIDIA A100-SXM4-40GB (sm 8.0)",
    ]  # fmt: skip
    assert devices.selected() == found
    monkeypatch.setenv(devices.DEVICES_ENV, "1")
    assert [g.index for g in devices.selected()] == [1]
    assert "may use 1" in devices.describe()
    monkeypatch.setenv(devices.DEVICES_ENV, "0,2")
    with pytest.raises(ValueError, match=f"{devices.DEVICES_ENV} names GPU 2"):
        devices.selected()
    assert "names GPU 2" in devices.describe()  # info says so instead of failing


def test_without_pycuda_no_gpu_is_visible(monkeypatch):
    monkeypatch.setitem(sys.modules, "pycuda", None)
    monkeypatch.setitem(sys.modules, "pycuda.driver", None)
    devices.visible.cache_clear()
    try:
        assert devices.visible() == ()
        monkeypatch.setenv(devices.DEVICES_ENV, "0")
        assert devices.selected() == ()  # nothing to choose from: host calls run on NumPy
        assert devices.describe() == "none visible"
    finally:
        devices.visible.cache_clear()


def test_info_lists_the_gpus(monkeypatch):
    import tunedgemm

    monkeypatch.setattr(devices, "describe", lambda: "0: a GPU; 1: another")
    assert tunedgemm.info()["gpus"] == "0: a GPU; 1: another"
