"""OLD_FIRST in both families' epilogues (kernels/dgemm_mma.cu, kernels/sgemm_simt.cu): at
beta != 0 the old values of C are loaded a group at a time before their stores. It is on by
default wherever C is read (one k-slice; in simt, aligned data-parallel kernels only) and
leaves split-K's raw partial sums alone; the GPU side (the same bits at beta 0 and 0.5) is
benchmarks/same_bits.py and the edge tests."""

from __future__ import annotations

import itertools
import shutil

import pytest
from helpers import preprocessed

from tunedgemm.compiler import source_text
from tunedgemm.families import FAMILIES, simt
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")


def _texts(tmp_path, family: str, dtype: str, changes: dict, ta: int, tb: int,
           aligned: int) -> tuple[str, str, str]:  # fmt: skip
    """The preprocessed kernel by default, with OLD_FIRST=1 and with OLD_FIRST=0."""
    source = tmp_path / "kernel.cu"
    source.write_text(source_text(FAMILIES[family].source))
    base = FAMILIES[family].default_config(dtype).as_dict()
    config = KernelConfig.make(family, {**base, **changes})
    defines = {**FAMILIES[family].defines(config, dtype), "DTYPE": int(dtype == "float64"),
               "TRANS_A": ta, "TRANS_B": tb, "ALIGNED": aligned}  # fmt: skip
    return (preprocessed(source, defines), preprocessed(source, {**defines, "OLD_FIRST": 1}),
            preprocessed(source, {**defines, "OLD_FIRST": 0}))  # fmt: skip


@pytest.mark.parametrize("ta,tb", [(0, 0), (1, 1)])
@pytest.mark.parametrize("aligned", [0, 1])
def test_dmma_reads_c_a_group_at_a_time_by_default(tmp_path, ta, tb, aligned):
    for changes in ({}, {"ADVANCE": 1, "SWAP_AB": 1, "MMA_K": 8}):
        text, on, off = _texts(tmp_path, "dmma", "float64", changes, ta, tb, aligned)
        assert text == on and text != off, changes


def test_dmma_split_k_slices_read_no_c_either_way(tmp_path):
    text, _, off = _texts(tmp_path, "dmma", "float64", {"SPLIT_K": 2}, 0, 0, 1)
    assert text == off


@pytest.mark.parametrize("aligned", [0, 1])
def test_simt_reads_c_a_group_at_a_time_by_default_where_aligned(tmp_path, aligned):
    """The unaligned kernels keep their epilogue: their scalar loads of a group spilled (as
    did streamk_gemm's, which keeps it too: test_stream_k.py compiles it)."""
    for (ta, tb), changes in itertools.product([(0, 0), (1, 0)], ({}, simt.LOOP_TWIN)):
        text, on, off = _texts(tmp_path, "simt", "float32", changes, ta, tb, aligned)
        assert text == on and (text != off) == bool(aligned), (ta, tb, changes)


def test_simt_split_k_keeps_the_interior_stores_only_where_aligned(tmp_path):
    """Under split-K no C is read; the interior path without edge tests still serves aligned
    workspaces, and unaligned kernels are as they were."""
    for aligned in (0, 1):
        text, _, off = _texts(tmp_path, "simt", "float32", {"SPLIT_K": 2}, 0, 0, aligned)
        assert (text != off) == bool(aligned), aligned
