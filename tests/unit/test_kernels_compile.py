"""Every kernel template compiles with nvcc for sm_90, in every call-time variant, no spills."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import assert_no_spills, compile_report

from tunedgemm.compiler import kernels_dir
from tunedgemm.families import FAMILIES
from tunedgemm.params import ITEMSIZE

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
_DTYPE = {"float32": 0, "float64": 1}


def variants():
    for name, family in sorted(FAMILIES.items()):
        for dtype in family.dtypes:
            yield name, dtype


@pytest.mark.parametrize("name,dtype", list(variants()))
def test_default_config_all_variants(name, dtype, tmp_path):
    family = FAMILIES[name]
    config = family.default_config(dtype)
    for ta, tb, aligned in itertools.product((0, 1), (0, 1), (0, 1)):
        defines = {
            **family.defines(config, dtype),
            "DTYPE": _DTYPE[dtype],
            "TRANS_A": ta,
            "TRANS_B": tb,
            "ALIGNED": aligned,
        }
        report = compile_report(family.source, defines, tmp_path)
        assert_no_spills(report)
        smem = re.search(r"Used (\d+) registers", report)
        assert smem, report
        assert family.smem_bytes(config.as_dict(), ITEMSIZE[dtype]) > 0


def float32_variants_sass(family, config, tmp_path) -> str | None:
    """Compile the eight call-time variants (transposes, alignment) of a float32 config in
    parallel, none spilling; the SASS of the first, where cuobjdump is installed."""
    jobs = []
    for index, (ta, tb, aligned) in enumerate(itertools.product((0, 1), (0, 1), (0, 1))):
        defines = {**family.defines(config, "float32"), "DTYPE": 0, "TRANS_A": ta,
                   "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
        (tmp_path / str(index)).mkdir()
        jobs.append((defines, tmp_path / str(index)))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reports = list(pool.map(lambda job: compile_report(family.source, *job), jobs))
    for (defines, _), report in zip(jobs, reports, strict=True):
        assert_no_spills(report, f"{config} {defines}")
    if shutil.which("cuobjdump") is None:
        return None
    return subprocess.run(["cuobjdump", "-sass", str(jobs[0][1] / "kernel.cubin")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_tf32_family_defaults(precision, tmp_path):
    """Each precision mode's default of the tf32 family (the dtype-keyed default above is the
    3xtf32 one): every call-time variant compiles without spills, and its mma is the TF32
    HMMA (checked where cuobjdump is installed), three per product in 3xtf32 mode."""
    from tunedgemm.families import tf32

    config = tf32.default_for(precision)
    sass = float32_variants_sass(tf32.FAMILY, config, tmp_path)
    if sass is None:
        return
    hmma = sass.count("HMMA.1688.F32.TF32")
    p = config.as_dict()
    per_k_step = (p["WM"] // 16) * (p["WN"] // 8) * (3 if precision == "3xtf32" else 1)
    assert hmma >= per_k_step * p["BK"] // 8, sass[:2000]


def split_k_variants():
    for name, dtype in variants():
        tunables = {t.name: t.values for t in FAMILIES[name].tunables}
        for split in (v for v in tunables.get("SPLIT_K", ()) if v > 1):
            yield name, dtype, split


@pytest.mark.parametrize("name,dtype,split", list(split_k_variants()))
def test_split_k_variants_compile_with_their_reduction(name, dtype, split, tmp_path):
    """Each family's default with every SPLIT_K it declares compiles without spills, aligned
    and not, with its splitk_reduce; the aligned reduction moves 16 bytes per access and no
    atomics are left (checked where cuobjdump is installed)."""
    from tunedgemm.params import KernelConfig

    family = FAMILIES[name]
    config = KernelConfig.make(name, {**family.default_config(dtype).as_dict(), "SPLIT_K": split})
    jobs = []
    for aligned in (0, 1):
        defines = {**family.defines(config, dtype), "DTYPE": _DTYPE[dtype], "TRANS_A": aligned,
                   "TRANS_B": 0, "ALIGNED": aligned}  # fmt: skip
        (tmp_path / str(aligned)).mkdir()
        jobs.append((defines, tmp_path / str(aligned)))
    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(lambda job: compile_report(family.source, *job), jobs))
    for (defines, _), report in zip(jobs, reports, strict=True):
        assert "Compiling entry function 'splitk_reduce'" in report, report
        assert_no_spills(report, f"{config} {defines}")
    if shutil.which("cuobjdump") is None:
        return
    sass = subprocess.run(["cuobjdump", "-sass", "-fun", "splitk_reduce",
                           str(jobs[1][1] / "kernel.cubin")],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert re.search(r"LDG\.E\.(128|ENL2\.256)", sass) and "STG.E.128" in sass, sass[:3000]
    whole = subprocess.run(["cuobjdump", "-sass", str(jobs[1][1] / "kernel.cubin")],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert "RED." not in whole and "ATOM" not in whole


@pytest.mark.slow
@pytest.mark.parametrize("name,dtype", list(variants()))
def test_whole_space_compiles(name, dtype, tmp_path):
    """Every config the tuner may choose; the call-time variants rotate across the space."""
    family = FAMILIES[name]
    variants_cycle = itertools.cycle(itertools.product((0, 1), (0, 1), (0, 1)))
    jobs = []
    for index, config in enumerate(family.space(dtype)):
        ta, tb, aligned = next(variants_cycle)
        defines = {**family.defines(config, dtype), "DTYPE": _DTYPE[dtype], "TRANS_A": ta,
                   "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
        work = tmp_path / str(index)
        work.mkdir()
        jobs.append((config, defines, work))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reports = pool.map(lambda job: compile_report(family.source, job[1], job[2]), jobs)
        for (config, _, _), report in zip(jobs, reports, strict=True):
            assert_no_spills(report, str(config))


def test_copy_kernel_compiles(tmp_path):
    for src in ("__half", "double", "long long", "bool"):
        compile_report("copy2d.cu", {"SRC_T": src, "DST_T": "float"}, tmp_path)
    assert (kernels_dir() / "copy2d.cu").is_file()


def test_tf32_split_kernels_compile_without_spills(tmp_path):
    # the passes around cuBLAS's TF32 GEMM of the composed 3xtf32 runner (tf32_cublas.py)
    report = compile_report("tf32_split.cu", {}, tmp_path)
    assert_no_spills(report, "tf32_split.cu")
    assert report.count("Compiling entry function") == 2, report  # split_planes and finish


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_tf32_wgmma_family_defaults(precision, tmp_path):
    """Each mode's default of the wgmma family (sm_90a): every call-time variant compiles
    without spills and, where cuobjdump is installed, issues the TF32 HGMMA of its n, one
    per k-step of a tile in tf32 mode and three in 3xtf32."""
    from tunedgemm.families import tf32_wgmma

    config = tf32_wgmma.default_for(precision)
    sass = float32_variants_sass(tf32_wgmma.FAMILY, config, tmp_path)
    if sass is None:
        return
    per_tile = (tf32_wgmma.BLOCK_K // 8) * (3 if precision == "3xtf32" else 1)
    assert sass.count(f"HGMMA.64x{config['BN']}x8.F32.TF32") == per_tile, sass[:2000]
