"""Every family's twins compute the same bits as the config they are timed beside (issue 15):
autotuning may swap a table config for its twin (tunedgemm/plans.py, with_twins) only because
nothing changes but speed. For each family's default and a split-K config, each twin against
its config on shapes with m, n and k edges, all four transposes, aligned and not, beta 0 and
not, with C poisoned by NaN before each run (helpers.assert_configs_agree):

    python -m pytest -q -m gpu tests/gpu/test_twins_gpu.py
"""

from __future__ import annotations

import pytest
from helpers import assert_configs_agree

from tunedgemm import plans
from tunedgemm.families import FAMILIES
from tunedgemm.params import KernelConfig

pytestmark = pytest.mark.gpu

SHAPES = [(33, 7, 15), (257, 130, 700), (1000, 257, 33), (512, 384, 1024)]


def _pairs() -> list[tuple[str, KernelConfig, KernelConfig]]:
    found = []
    for name, dtype in (("dmma", "float64"), ("simt", "float32")):
        family = FAMILIES[name]
        default = family.default_config(dtype).as_dict()
        for base in (default, {**default, "SPLIT_K": 4}):
            config = KernelConfig.make(name, base)
            found += [(dtype, config, twin) for twin in plans.with_twins((config,), dtype)[1:]]
    return found


@pytest.mark.parametrize("dtype,config,twin", _pairs(), ids=str)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_a_twin_gives_its_configs_bits(dtype, config, twin, m, n, k):
    assert_configs_agree([config, twin], dtype, m, n, k)
