"""Choose what runs for one call: a forced family, else the tuning table, else a built-in default.

From the table, cuBLAS runs where the nearest entry says it wins; otherwise the own configs
measured at the nearest entries compete, each predicted at the call's shape by the wave
model (tunedgemm/model.py) from the nearest entry where it was measured."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import model, settings, table
from ._args import dtype_name
from .families import FAMILIES
from .params import KernelConfig
from .precision import IEEE, OZAKI, base_mode, moduli_count, ozaki_summary

# Families in order of preference per (dtype, precision) when no table entry applies.
PREFERENCE = {("float32", IEEE): ("simt", "tiled"), ("float64", IEEE): ("dmma", "tiled")}
FAMILY_ENV = "TUNEDGEMM_FAMILY"  # force one family's default config (benchmarks, tests)
CUBLAS_ENV = "TUNEDGEMM_CUBLAS"  # "0" keeps cuBLAS out of the choices: own kernels only
REFINE_CANDIDATES = 4  # the model's picks offered to run-time refinement, best first
GENERALIST_PICKS = 3  # the key's most frequent winners offered as they are
FILL_CANDIDATES = 2  # split-K variants offered where the picks' tiles leave SMs idle


@dataclass(frozen=True)
class Choice:
    """A kernel config or table.CUBLAS, and why it was chosen. `candidates` are what run-time
    refinement (tunedgemm/autotune.py) may time at the call's shape: the model's best own
    configs, best first, and cuBLAS where it may compete (empty: nothing to refine)."""

    config: KernelConfig | str
    reason: str
    candidates: tuple[KernelConfig | str, ...] = ()


@dataclass(frozen=True)
class Prediction:
    """An own config, the table entry where it was measured, and its time there and at a call."""

    config: KernelConfig
    entry: table.Entry
    measured_ms: float
    predicted_ms: float


def default_config(dtype: str, precision: str = IEEE) -> KernelConfig:
    """The built-in config for dtype in a precision mode: the preferred IEEE family's
    default, or the default of the family that serves an opt-in mode."""
    from .families import serving

    names = PREFERENCE.get((dtype, precision)) or tuple(f.name for f in serving(dtype, precision))
    for family_name in names:
        family = FAMILIES.get(family_name)
        if family is not None:
            return family.default_config(dtype, precision)
    raise LookupError(f"no kernel family for {dtype} in precision {precision}")


def cublas_allowed() -> bool:
    return bool(settings.get(CUBLAS_ENV))


def forget() -> None:
    """Drop memoised choices (a setting, table or GPU changed; tunedgemm.plans.clear)."""
    _choose.cache_clear()


def choose(
    dtype: np.dtype | str, m: int, n: int, k: int, trans_a: bool = False,
    trans_b: bool = False, gpu: str | None = None, cc: str | None = None, warn: bool = True,
    precision: str = IEEE,
) -> Choice:  # fmt: skip
    """What runs for a column-major call of this shape on this GPU (default: the current one)."""
    name = dtype_name(dtype)
    if gpu is None or cc is None:
        gpu, cc = _current_gpu()
    # The table's variable enters the key as it is (not as the path it names, which costs
    # microseconds to build): _choose reads the table itself.
    state = (settings.get(FAMILY_ENV) or "", cublas_allowed(),
             settings.raw(table.TABLE_ENV) or "")  # fmt: skip
    return _choose(name, m, n, k, bool(trans_a), bool(trans_b), gpu, cc, state, warn, precision)


@functools.lru_cache(maxsize=4096)
def _choose(
    dtype: str, m: int, n: int, k: int, trans_a: bool, trans_b: bool, gpu: str, cc: str,
    state: tuple[str, bool, str], warn: bool, precision: str = IEEE,
) -> Choice:  # fmt: skip
    forced, allow_cublas, _ = state
    if base_mode(precision) == OZAKI:
        # The emulation (tunedgemm/ozaki_device.py, planned by tunedgemm/plans.py) runs the
        # call; its IEEE fallback (Inf or NaN, spread exponents) is what IEEE mode picks.
        ieee = _choose(dtype, m, n, k, trans_a, trans_b, gpu, cc, state, warn, IEEE)
        count = moduli_count(precision, dtype)
        assert count is not None
        return Choice(ieee.config, ozaki_summary(
            precision, count, f"IEEE arithmetic: {ieee.config} ({ieee.reason})"))  # fmt: skip
    if precision != IEEE:
        return _choose_mode(dtype, m, n, k, trans_a, trans_b, gpu, cc, allow_cublas, precision)
    if forced:
        family = FAMILIES.get(forced)
        if family is None or dtype not in family.dtypes:
            known = sorted(f for f in FAMILIES if dtype in FAMILIES[f].dtypes)
            raise ValueError(f"{FAMILY_ENV}={forced!r} names no family for {dtype}; known: {known}")
        return Choice(family.default_config(dtype), f"{FAMILY_ENV}={forced}: its default config")
    found = table.lookup(table.current(), gpu, cc, dtype, trans_a, trans_b, m, n, k)
    entry = found.entry
    if entry is None:
        if warn:
            table.warn_once(f"no tuned entry used, built-in default configs run: {found.reason}")
        return Choice(default_config(dtype), f"built-in default ({found.reason})")
    if found.level == "architecture" and warn:
        table.warn_once(f"no table entries for {gpu}; using those of another sm_{cc} GPU")
    neighbours = found.neighbours or (entry,)
    measured = _valid(_measured_nearest(neighbours), dtype, warn)
    ranked = sorted(predictions(measured, dtype, (m, n, k)), key=lambda p: p.predicted_ms)
    # The model's best few, then the key's most frequent winners, which it may rank low
    # (small m, n with long k: its split-K picks go astray there).
    picks = [p.config for p in ranked[:REFINE_CANDIDATES]]
    generalists = [c for c in found.generalists if not _violations(c, dtype)]
    picks += generalists[:GENERALIST_PICKS]
    bases = [*generalists, *(p.config for p in ranked)]
    picks += _filling_variants(picks, bases, dtype, (m, n, k))
    own = tuple(dict.fromkeys(picks))
    if entry.choice == table.CUBLAS and allow_cublas:
        return Choice(table.CUBLAS, f"cuBLAS is fastest at {found.reason}", (table.CUBLAS, *own))
    if not measured:
        return Choice(default_config(dtype), f"built-in default (invalid entry {entry.own})")
    best = ranked[0]
    why = "tuned" if entry.choice != table.CUBLAS else f"best own kernel ({CUBLAS_ENV}=0)"
    at = best.entry
    return Choice(best.config, (
        f"{why} (wave model over {len(neighbours)} nearest entries): {best.config} measured "
        f"{best.measured_ms:.3g} ms at {at.m}x{at.n}x{at.k}, predicted "
        f"{best.predicted_ms:.3g} ms; nearest: {found.reason}"),
        own + ((table.CUBLAS,) if allow_cublas else ()))  # fmt: skip


def _filling_variants(offered: list[KernelConfig], bases: list[KernelConfig], dtype: str,
                      shape: model.MNK) -> list[KernelConfig]:  # fmt: skip
    """Where tiles leave SMs idle (small m, n with long k): split-K variants that fill the
    GPU, smallest tiles first, of the configs offered, then of the key's frequent winners and
    of all measured nearby (in the model's order). The model extrapolates split-K poorly
    there, and the offered configs' tiles are often too large to fill the GPU at any split,
    so refinement times these too."""
    variants = (model.filling_split(c, model.Shape(*shape), _sm_count())
                for c in [*offered, *bases])  # fmt: skip
    fresh = [v for v in dict.fromkeys(variants) if v is not None and v not in offered
             and not _violations(v, dtype)]  # fmt: skip
    fresh.sort(key=lambda v: v["BM"] * v["BN"])  # stable: the model's order among equals
    return fresh[:FILL_CANDIDATES]


def _sm_count() -> int:
    """Multiprocessors of the GPU this thread works for (without one: the H100's, as the
    tuner assumes)."""
    from . import cuda

    try:
        return cuda.sm_count() if cuda.status()[0] else model.NUM_SMS
    except Exception:  # a driver that cannot say: the count the tuner assumes
        return model.NUM_SMS


def _measured_nearest(
    neighbours: tuple[table.Entry, ...],
) -> dict[KernelConfig, tuple[table.Entry, float]]:
    """Each own config of the entries (nearest first) with the nearest entry that measured it:
    the nearer the measurement, the less the model has to extrapolate."""
    measured: dict[KernelConfig, tuple[table.Entry, float]] = {}
    for entry in neighbours:
        for config, ms in entry.top:
            measured.setdefault(config, (entry, ms))
    return measured


def _valid(
    measured: dict[KernelConfig, tuple[table.Entry, float]], dtype: str, warn: bool
) -> dict[KernelConfig, tuple[table.Entry, float]]:
    """The configs that may run; each one that breaks its family's rules warns once."""
    valid = {}
    broken = []
    for config, where in measured.items():
        problems = _violations(config, dtype)
        if problems:
            broken.append(f"table entry {config} is invalid ({'; '.join(problems)})")
        else:
            valid[config] = where
    if warn:
        outcome = "skipped" if valid else "default used"
        for message in broken:
            table.warn_once(f"{message}; {outcome}")
    return valid


def predictions(
    measured: dict[KernelConfig, tuple[table.Entry, float]], dtype: str, shape: model.MNK
) -> list[Prediction]:
    """Each config's predicted time at shape, in the order given (ties go to the first)."""
    return [
        Prediction(config, entry, ms, model.predicted_ms(config, dtype, shape, entry.shape, ms))
        for config, (entry, ms) in measured.items()
    ]


def _violations(config: KernelConfig, dtype: str) -> list[str]:
    family = FAMILIES.get(config.family)
    if family is None:
        return [f"unknown family {config.family!r}"]
    return family.violations(config, dtype)


def _current_gpu() -> tuple[str, str]:
    """(name, compute capability) of the GPU this thread works for (the host pipeline's
    workers each look up their own GPU's entries), asked of the driver once per GPU."""
    from . import cuda

    if not cuda.status()[0]:
        return "none", "none"
    return cuda.gpu_identity()


def _choose_mode(dtype: str, m: int, n: int, k: int, trans_a: bool, trans_b: bool, gpu: str,
                 cc: str, allow_cublas: bool, precision: str) -> Choice:  # fmt: skip
    """A tensor-core precision mode: its family's tuned or default config; cuBLAS competes
    where it is at least as accurate (its TF32 GEMM for "tf32", SGEMM for "3xtf32")."""
    found = table.lookup(table.current(), gpu, cc, dtype, trans_a, trans_b, m, n, k, precision)
    measured = _valid(_measured_nearest(found.neighbours), dtype, False) if found.entry else {}
    ranked = sorted(predictions(measured, dtype, (m, n, k)), key=lambda p: p.predicted_ms)
    own = tuple(dict.fromkeys([p.config for p in ranked[:REFINE_CANDIDATES]]))
    if not own:
        try:
            default = default_config(dtype, precision)
        except LookupError:
            default = None
        # Untuned: the mode's default, and the same with small tiles, which fill the SMs on
        # products of a few hundred (autotuning times both).
        small = None if default is None else KernelConfig.make(
            default.family, {**default.as_dict(), "BM": 64, "BN": 64, "WM": 32, "WN": 32})
        own = tuple(c for c in (default, small) if c is not None and not _violations(c, dtype))
    rivals = (table.CUBLAS,) if allow_cublas else ()
    if not own:
        if not rivals:
            raise LookupError(f"no kernel for precision {precision} and cuBLAS is switched off")
        return Choice(table.CUBLAS, f"cuBLAS in {precision} mode (no own kernel for it)")
    where = f"tuned at {found.reason}" if measured else "built-in default"
    return Choice(own[0], f"{precision} mode, {where}", own + rivals)


def explain(
    m: int, n: int, k: int, dtype: str = "float32", trans_a: int = 0, trans_b: int = 0,
    gpu: str | None = None, cc: str | None = None, precision: str | None = None,
) -> str:  # fmt: skip
    """Which table entry and config would run for sgemm/dgemm of this shape, and why.

    Shapes and flags are those of the call (row-major operands are explained as the
    column-major call they become). dtype is float32 or float64; `precision` None is the mode
    a call of dtype would run in now (tunedgemm.precision). Without a GPU (and without `gpu=`
    and `cc=` naming one) it says that NumPy computes, and why."""
    from .precision import resolve

    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in ("float32", "float64"):
        raise ValueError(f"explain: dtype must be 'float32' or 'float64', got {dtype!r}")
    mode = resolve(precision, name)
    shape = f"{name} {m}x{n}x{k} trans=({trans_a},{trans_b}) precision={mode}"
    if gpu is None or cc is None:
        from . import backend

        try:
            wish, why = backend.selected()
        except backend.GpuUnavailableError:  # TUNEDGEMM_BACKEND=gpu without one: as with gpu=
            wish, why = "gpu", ""
        if wish == "numpy":
            return (f"{shape}: NumPy computes it ({why}); "
                    "explain(..., gpu=NAME, cc='9.0') says what a GPU would run")  # fmt: skip
    choice = choose(name, m, n, k, bool(trans_a), bool(trans_b), gpu, cc, warn=False,
                    precision=mode)  # fmt: skip
    what = "cuBLAS (through scikit-cuda)" if choice.config == table.CUBLAS else str(choice.config)
    if base_mode(mode) == OZAKI:
        what = f"Ozaki scheme II with {moduli_count(mode, name)} moduli"
    return f"{shape}: {what}; {choice.reason}"
