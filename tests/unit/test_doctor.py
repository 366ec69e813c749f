"""python -m tunedgemm doctor and the installed-or-source-tree report, without a GPU: the
probes are replaced so that each case can be seen on any machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tunedgemm import _install, _small_host, cuda, doctor


@pytest.fixture
def nothing_installed(monkeypatch, tmp_path):
    """A machine with no toolkit, no driver, no PyCUDA, no scikit-cuda."""
    for name in doctor.TOOLKIT_ENVS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    monkeypatch.setattr(doctor, "DEFAULT_TOOLKIT", tmp_path / "no-cuda")
    monkeypatch.setattr(doctor, "load_driver", lambda: (_ for _ in ()).throw(OSError("no lib")))
    real_find_spec = doctor.importlib.util.find_spec

    def find_spec(name):
        return None if name in ("pycuda", "skcuda") else real_find_spec(name)

    monkeypatch.setattr(doctor.importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(cuda, "status", lambda: (False, "pretend there is no GPU"))
    monkeypatch.delenv("TUNEDGEMM_BACKEND", raising=False)


def test_doctor_without_anything_says_what_to_do_and_exits_0(nothing_installed, capsys):
    assert doctor.doctor() == 0
    out = capsys.readouterr().out
    for name in ("CUDA toolkit", "CUDA driver", "PyCUDA", "GPU", "scikit-cuda", "C extension"):
        assert name in out
    assert out.count("what to do:") >= 5
    assert "CUDA_ROOT" in out and 'tunedgemm[cuda]' in out
    assert "backend: NumPy (no usable GPU: pretend there is no GPU)" in out


def test_toolkit_found_through_cuda_root(nothing_installed, monkeypatch, tmp_path):
    (tmp_path / "cuda" / "include").mkdir(parents=True)
    (tmp_path / "cuda" / "include" / "cuda.h").write_text("/* */")
    monkeypatch.setenv("CUDA_ROOT", str(tmp_path / "cuda"))
    monkeypatch.setattr(doctor.shutil, "which", lambda name: str(tmp_path / "cuda/bin/nvcc"))
    found = doctor.check_toolkit()
    assert found.ok and "cuda.h" in found.detail


def test_headers_elsewhere_name_the_cuda_root_to_set(nothing_installed, monkeypatch, tmp_path):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: "/opt/wrappers/bin/nvcc")
    (tmp_path / "cuda" / "include").mkdir(parents=True)
    (tmp_path / "cuda" / "include" / "cuda.h").write_text("/* */")
    monkeypatch.setattr(doctor, "DEFAULT_TOOLKIT", tmp_path / "cuda")
    found = doctor.check_toolkit()
    assert not found.ok and f"CUDA_ROOT={tmp_path / 'cuda'}" in found.fix


def test_driver_that_loads_but_does_not_initialise(monkeypatch):
    class Driver:
        def cuInit(self, flags):  # noqa: N802  (the driver's name)
            return 100  # CUDA_ERROR_NO_DEVICE

    monkeypatch.setattr(doctor, "load_driver", Driver)
    found = doctor.check_driver()
    assert not found.ok and "100" in found.detail and "CUDA_VISIBLE_DEVICES" in found.fix


def test_a_probe_that_breaks_is_reported_not_raised(monkeypatch):
    def check_broken():
        raise ZeroDivisionError("a probe's own bug")

    monkeypatch.setattr(doctor, "CHECKS", (check_broken,))
    (found,) = doctor.run_checks()
    assert found.name == "broken" and not found.ok and "ZeroDivisionError" in found.detail


def test_extension_check_follows_the_route_in_use(monkeypatch):
    monkeypatch.setattr(_small_host, "NATIVE", False)
    alone = _install.Install(Path("/a/tunedgemm"), None, False)
    monkeypatch.setattr(_install, "find", lambda: alone)
    found = doctor.check_extension()
    assert not found.ok and "not built" in found.detail and "optional" in found.fix


def _dist(monkeypatch, tmp_path, direct_url=None, files_at=None):
    """An installed distribution, found after a build's egg-info in the source tree."""

    class Dist:
        def __init__(self, installer):
            self.installer = installer

        def read_text(self, name):
            if name == "INSTALLER":
                return self.installer
            return json.dumps(direct_url) if direct_url is not None else None

        def locate_file(self, path):
            return files_at / path if self.installer else tmp_path / "egg-info-tree" / path

    found = [Dist(None), Dist("pip\n")]
    monkeypatch.setattr(_install.metadata, "distributions", lambda name: iter(found))


def test_source_tree_shadowing_an_installed_copy_is_told_apart(monkeypatch, tmp_path):
    site = tmp_path / "site-packages"
    (site / "tunedgemm").mkdir(parents=True)
    _dist(monkeypatch, tmp_path, files_at=site)
    tree = tmp_path / "checkout" / "tunedgemm"
    tree.mkdir(parents=True)
    found = _install.find(tree)
    assert found.shadowed and not found.editable
    assert str(site / "tunedgemm") in found.describe() and "shadows" in found.describe()
    assert not _install.find((site / "tunedgemm").resolve()).shadowed


def test_editable_install_of_this_tree_is_no_shadow(monkeypatch, tmp_path):
    tree = tmp_path / "checkout"
    (tree / "tunedgemm").mkdir(parents=True)
    _dist(monkeypatch, tmp_path, {"url": tree.as_uri(), "dir_info": {"editable": True}})
    found = _install.find((tree / "tunedgemm").resolve())
    assert found.editable and not found.shadowed and "editable install" in found.describe()
    other = _install.find(tmp_path / "elsewhere" / "tunedgemm")
    assert other.shadowed and "the editable install at" in other.describe()


def test_not_installed_at_all(monkeypatch, tmp_path):
    monkeypatch.setattr(_install.metadata, "distributions", lambda name: iter(()))
    found = _install.find(tmp_path / "tunedgemm")
    assert not found.shadowed and "not installed" in found.describe()


def test_info_route_says_when_a_source_tree_shadows_the_install(monkeypatch, tmp_path):
    from tunedgemm.info import small_host_route

    monkeypatch.setattr(_small_host, "NATIVE", False)
    tree, site = tmp_path / "tree" / "tunedgemm", tmp_path / "site" / "tunedgemm"
    shadow = _install.Install(tree, site, False)
    monkeypatch.setattr(_install, "find", lambda: shadow)
    assert "shadows the installed tunedgemm" in small_host_route()
    monkeypatch.setattr(_install, "find", lambda: _install.Install(shadow.imported, None, False))
    assert "not built" in small_host_route()
