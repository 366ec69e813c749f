"""The fast environment reads agree with os.environ, including changes made at run time."""

from __future__ import annotations

import os

from tunedgemm import _env


def test_reads_follow_os_environ(monkeypatch):
    name = "TUNEDGEMM_TEST_ENV_READ"
    monkeypatch.delenv(name, raising=False)
    assert _env.get(name) is None and _env.get(name, "fallback") == "fallback"
    monkeypatch.setenv(name, "gpu ünicode")
    assert _env.get(name) == os.environ[name] == "gpu ünicode"
    os.environ[name] = ""
    assert _env.get(name, "fallback") == ""
    monkeypatch.delenv(name)
    assert _env.get(name) is None
