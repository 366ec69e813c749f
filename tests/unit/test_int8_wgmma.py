"""The int8_wgmma family without a GPU: its declaration and the Ozaki registry, its shared
layout emulated in NumPy down to the wgmma's operand reads, every config compiled for sm_90a
without spills (IGMMA in the SASS), and the choice of INT8 family by GPU and setting."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tunedgemm import compiler, ozaki_device, settings
from tunedgemm.compiler import kernels_dir
from tunedgemm.families import FAMILIES, OZAKI_FAMILIES, int8, int8_wgmma, ozaki_family_of
from tunedgemm.params import KernelConfig, register_cap

FAMILY = int8_wgmma.FAMILY
SPACE = list(FAMILY.space("float64"))
SOURCE = (kernels_dir() / "igemm_s8_wgmma.cu").read_text()
BK = int8_wgmma.BLOCK_K


# ---- the declaration and the registry ----------------------------------------------------


def test_declaration() -> None:
    assert FAMILY.violations(int8_wgmma.default_config(), "float64") == []
    assert FAMILY.default_config("float32", "ozaki") == int8_wgmma.default_config()
    assert FAMILY.serves("float64", "ozaki") and not FAMILY.serves("float64", "ieee")
    assert 6 <= len(SPACE) <= 10
    assert list(FAMILY.space("float32")) == SPACE  # the float itemsize does not enter
    for config in SPACE:
        p = config.as_dict()
        assert int8.LINE_ALIGN % p["BM"] == 0 and int8.LINE_ALIGN % p["BN"] == 0
        assert int8.K_ALIGN % BK == 0 and p["STAGES"] >= 3
        acc = p["BM"] * p["BN"] // FAMILY.threads(p)
        assert acc in (64, 128)
        assert p["MIN_BLOCKS"] * (FAMILY.smem_bytes(p, 8) + 1024) <= 228 * 1024
    # 256 x 256 needs 256 accumulators a thread (spills); 2 blocks only with 64 accumulators.
    assert not any(c["BM"] * c["BN"] > 128 * 256 for c in SPACE)
    assert all(c["BM"] * c["BN"] == 128 * 128 for c in SPACE if c["MIN_BLOCKS"] == 2)
    too_big = KernelConfig.make(int8_wgmma.NAME, {**int8_wgmma.DEFAULTS, "BM": 256})
    assert any("registers" in text for text in FAMILY.violations(too_big, "float64"))
    deep = KernelConfig.make(int8_wgmma.NAME, {**int8_wgmma.DEFAULTS, "STAGES": 5})
    assert FAMILY.violations(deep, "float64")  # 241 KB of shared memory
    for probe in int8_wgmma.probes():
        assert probe not in SPACE and FAMILY.violations(probe, "float64") == []
    # The default: 128 x 256 x 128, 4 stages, 193 KB (the brief's target).
    assert FAMILY.smem_bytes(int8_wgmma.DEFAULTS, 8) == 4 * 384 * 128 + 1024


def test_ozaki_registry_is_apart_from_the_gemm_families() -> None:
    assert set(OZAKI_FAMILIES) == {int8.NAME, int8_wgmma.NAME}
    assert not set(OZAKI_FAMILIES) & set(FAMILIES)
    assert ozaki_family_of(int8_wgmma.default_config()) is FAMILY
    assert ozaki_family_of(int8.default_config()) is int8.FAMILY
    with pytest.raises(ValueError, match="not an Ozaki INT8 family"):
        ozaki_family_of(KernelConfig.make("simt", {}))
    assert compiler.arch_suffix("igemm_s8_wgmma.cu") == "a"
    assert compiler.arch_suffix("igemm_s8.cu") == ""
    assert compiler.arch_suffix("sgemm_tf32_wgmma.cu") == "a"


def test_gemm_defines_name_each_family_and_the_output_mode() -> None:
    defines = ozaki_device.gemm_defines(int8_wgmma.default_config(), out_mod=False)
    assert defines == {**int8_wgmma.DEFAULTS, "THREADS": 256, "OUT_MOD": 0}
    assert defines["PROXY_FENCE"] == 1
    assert ozaki_device.gemm_defines(int8.default_config())["OUT_MOD"] == 1


def test_padding_is_a_multiple_of_every_tile() -> None:
    pad = ozaki_device.Padded.of(1, 257, 129)
    for family in OZAKI_FAMILIES.values():
        for config in family.space("float64"):
            rows, cols = family.block_tile(config.as_dict())
            assert pad.n % rows == 0 and pad.m % cols == 0 and pad.k % BK == 0


# ---- the choice of family -----------------------------------------------------------------


@pytest.mark.parametrize(
    "arch,choice,name",
    [("sm_90", "auto", "int8_wgmma"), ("sm_90", "wgmma", "int8_wgmma"), ("sm_90", "mma", "int8"),
     ("sm_80", "auto", "int8"), ("sm_89", "mma", "int8"), ("sm_100", "auto", "int8")],
)  # fmt: skip
def test_family_by_architecture(arch: str, choice: str, name: str) -> None:
    assert ozaki_device.gemm_family(arch, choice).name == name


def test_wgmma_on_a_gpu_without_it_names_the_setting() -> None:
    with pytest.raises(ValueError, match=r"TUNEDGEMM_OZAKI_GEMM=wgmma.*sm_80"):
        ozaki_device.gemm_family("sm_80", "wgmma")


def test_the_setting_decides(monkeypatch) -> None:
    monkeypatch.delenv("TUNEDGEMM_OZAKI_GEMM", raising=False)
    assert settings.get("TUNEDGEMM_OZAKI_GEMM") == "auto"
    assert "TUNEDGEMM_OZAKI_GEMM" in settings.DECIDING
    assert settings.check("TUNEDGEMM_OZAKI_GEMM", " WGMMA ") == "wgmma"
    with pytest.raises(ValueError, match="TUNEDGEMM_OZAKI_GEMM='wmma' is not valid"):
        settings.check("TUNEDGEMM_OZAKI_GEMM", "wmma")
    monkeypatch.setattr(ozaki_device.cuda, "arch", lambda: "sm_90")
    assert ozaki_device.default_gemm_config() == int8_wgmma.default_config()
    monkeypatch.setenv("TUNEDGEMM_OZAKI_GEMM", "mma")
    assert ozaki_device.gemm_family("sm_90").name == "int8"
    assert ozaki_device.default_gemm_config() == int8.default_config()
    monkeypatch.setattr(ozaki_device.cuda, "arch", lambda: "sm_86")
    monkeypatch.setenv("TUNEDGEMM_OZAKI_GEMM", "auto")
    assert ozaki_device.default_gemm_config() == int8.default_config()
    monkeypatch.setenv("TUNEDGEMM_OZAKI_GEMM", "wgmma")
    with pytest.raises(ValueError, match="TUNEDGEMM_OZAKI_GEMM"):
        ozaki_device.default_gemm_config()


# ---- the layout, emulated ------------------------------------------------------------------


def sw128_desc(addr: int) -> int:
    """The kernel's descriptor (transcribed; test_kernel_text_matches_the_mirrors)."""
    return ((addr & 0x3FFFF) >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)


DESC_KSTEP = 2


def test_kernel_text_matches_the_mirrors() -> None:
    assert "((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32)" in SOURCE
    assert "| (1ull << 62);" in SOURCE
    assert re.search(r"#define DESC_KSTEP 2\b", SOURCE) and re.search(r"#define BK 128\b", SOURCE)
    assert "const int soff = cr * BK + ((cc ^ (cr & 7)) << 4);" in SOURCE
    assert "#define COPY_ROWS (THREADS / 8)" in SOURCE
    assert "sw128_desc(sA_addr + wg * (BM / 2) * BK)" in SOURCE
    assert "da + ((64 * BK * i) >> 4) + DESC_KSTEP * ks" in SOURCE


def copies(rows: int, threads: int = 256) -> dict[tuple[int, int], int]:
    """(row, 16-byte chunk) of the tile -> byte offset in its slot, as the kernel's `stage`
    places them: thread tid copies chunk tid % 8 of rows tid / 8 + 32 i to soff + 4096 i."""
    out = {}
    per_pass = threads // 8
    for tid, i in itertools.product(range(threads), range(rows // per_pass)):
        cr, cc = tid >> 3, tid & 7
        soff = cr * BK + ((cc ^ (cr & 7)) << 4)
        out[(cr + per_pass * i, cc)] = soff + i * per_pass * BK
    return out


def wgmma_reads(smem: np.ndarray, desc: int, rows: int) -> np.ndarray:
    """The rows x 32 int8 operand (K-major, k = 32 per instruction) a wgmma descriptor names
    under the PTX ISA's 128-byte swizzle (test_wgmma_layout.decode's fields)."""
    from unit.test_wgmma_layout import decode

    f = decode(desc)
    assert f["swizzle"] == 1 and f["base_offset"] == 0, f
    out = np.empty((rows, 32), smem.dtype)
    for r, k in itertools.product(range(rows), range(32)):
        logical = f["start"] + (r // 8) * f["sbo"] + (r % 8) * 128 + k
        out[r, k] = smem[logical ^ (((logical >> 7) & 7) << 4)]
    return out


@pytest.mark.parametrize("bm,bn", [(128, 256), (256, 128), (128, 128)])
def test_copy_positions_are_a_conflict_free_permutation(bm: int, bn: int) -> None:
    for rows in (bm, bn):
        placed = copies(rows)
        assert sorted(placed.values()) == list(range(0, rows * BK, 16))
        # Eight consecutive threads store one 128-byte line: eight distinct bank groups.
        for tid0 in range(0, 256, 8):
            offsets = {placed[((tid0 + j) >> 3, (tid0 + j) & 7)] for j in range(8)}
            assert len({(o % 128) // 16 for o in offsets}) == 8


def accumulator_element(tid: int, i: int, j: int, bm: int) -> tuple[int, int]:
    """(row, column) of accumulator acc[i][j] of thread tid in the block tile, as the kernel's
    epilogue stores it: warpgroup tid / 128's row block i, the ISA's m64nN D fragment."""
    wg, q, lane = tid // 128, (tid // 32) % 4, tid % 32
    g, t = lane // 4, lane % 4
    jj, e = j // 4, j % 4
    return wg * (bm // 2) + 64 * i + 16 * q + g + 8 * (e >> 1), 8 * jj + 2 * t + (e & 1)


@pytest.mark.parametrize("bm,bn", [(128, 256), (256, 128), (128, 128)])
def test_accumulator_map_covers_the_tile_once(bm: int, bn: int) -> None:
    cells = [accumulator_element(tid, i, j, bm)
             for tid in range(256) for i in range(bm // 128) for j in range(bn // 2)]  # fmt: skip
    assert sorted(cells) == [(r, c) for r in range(bm) for c in range(bn)]


@pytest.mark.parametrize("bm,bn", [(256, 128), (128, 128)])
def test_one_k_tile_end_to_end(bm: int, bn: int) -> None:
    """A k-tile of A [bm x 128] and B [bn x 128] through the copies into two ring slots (at
    the kernel's slot offsets), then the wgmma reads of both warpgroups' row blocks over the
    four k-steps: A B^T exactly."""
    rng = np.random.default_rng()
    a = rng.integers(-128, 128, (bm, BK), dtype=np.int8)
    b = rng.integers(-128, 128, (bn, BK), dtype=np.int8)
    stages, slot = 3, 1
    a_stage, b_stage = bm * BK, bn * BK
    smem = np.zeros(stages * (a_stage + b_stage), np.int8)
    base_b = stages * a_stage
    for (r, c), off in copies(bm).items():
        smem[slot * a_stage + off : slot * a_stage + off + 16] = a[r, 16 * c : 16 * c + 16]
    for (r, c), off in copies(bn).items():
        smem[base_b + slot * b_stage + off : base_b + slot * b_stage + off + 16] = \
            b[r, 16 * c : 16 * c + 16]  # fmt: skip
    total = np.zeros((bm, bn), np.int64)
    for wg in range(2):
        da0 = sw128_desc(wg * (bm // 2) * BK) + (slot * a_stage >> 4)
        db = sw128_desc(base_b) + (slot * b_stage >> 4)
        for ks, i in itertools.product(range(BK // 32), range(bm // 128)):
            rows_a = wgmma_reads(smem, da0 + ((64 * BK * i) >> 4) + DESC_KSTEP * ks, 64)
            rows_b = wgmma_reads(smem, db + DESC_KSTEP * ks, bn)
            r0 = wg * (bm // 2) + 64 * i
            total[r0 : r0 + 64] += rows_a.astype(np.int64) @ rows_b.T.astype(np.int64)
    np.testing.assert_array_equal(total, a.astype(np.int64) @ b.T.astype(np.int64))


# ---- every config compiles -----------------------------------------------------------------

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


@needs_nvcc
def test_every_config_compiles_for_sm90a_without_spills(tmp_path) -> None:
    """Both output modes of every config: no spills within the launch bounds' registers (the
    declaration's measured figures), no serialised wgmma; with cuobjdump, the SASS main
    loop holds 4 * BM / 128 IGMMA.64xBNx32.S8.S8 (one a k-step and row block)."""
    from unit.test_kernels_compile import assert_no_spills, compile_report

    jobs = [(config, out_mod) for config in SPACE + int8_wgmma.probes()
            for out_mod in (True, False)]  # fmt: skip
    dirs = []
    for index in range(len(jobs)):
        (tmp_path / str(index)).mkdir()
        dirs.append(tmp_path / str(index))

    def build(job):
        (config, out_mod), directory = job
        return compile_report(FAMILY.source, ozaki_device.gemm_defines(config, out_mod), directory)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        reports = list(pool.map(build, zip(jobs, dirs, strict=True)))
    dump = shutil.which("cuobjdump")
    for ((config, out_mod), report), directory in zip(zip(jobs, reports, strict=True), dirs,
                                                      strict=True):  # fmt: skip
        label = f"{config} OUT_MOD={int(out_mod)}"
        assert_no_spills(report, label)
        assert "serialized" not in report, f"{label}\n{report}"
        p = config.as_dict()
        regs = int(re.search(r"Used (\d+) registers", report).group(1))  # type: ignore[union-attr]
        assert regs <= register_cap(256, p["MIN_BLOCKS"]), label
        if dump is None:
            continue
        sass = subprocess.run([dump, "-sass", str(directory / "kernel.cubin")],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip
        igmma = re.findall(r"IGMMA\.64x(\d+)x32\.S8\.S8", sass)
        per_tile = 4 * p["BM"] // 128  # ptxas unrolls some main loops (128 x 128: three tiles)
        assert igmma and len(igmma) % per_tile == 0, (label, igmma)
        assert set(igmma) == {str(p["BN"])}, label
