#!/usr/bin/env bash
# One GPU-machine session: GPU tests, then the host and tuning benchmarks; logs to $OUT.
# Run there as:  source .device/setup.sh && bash benchmarks/gpu_session.sh [tests|bench]
# (tests: info and the GPU tests only; bench: the benchmarks only; default both, which can
# outlast one 10-minute call on a fresh machine.)
# Each step has its own time limit, so that a hang costs that step only. The threaded test
# runs on its own first, so that a crash there (it once aborted the process) spares the rest;
# on a fresh machine it compiles every kernel it refines (PyCUDA's disk cache is empty).
# bench_kernels.py (own kernels against cuBLAS on device operands) and
# `python -m tunedgemm verify` run separately.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=${1:-all}
# The tests import the working tree (python -m puts it first on sys.path): build the C short
# route there too, as `pip install -e .` does on a development machine.
python3 setup.py -q build_ext --inplace > "$OUT/build_ext.txt" 2>&1 || echo "build_ext failed"
if [[ $steps != bench ]]; then
    cd /tmp && python3 -m tunedgemm info > "$OUT/info.txt" 2>&1; cd - >/dev/null
    threads=tests/gpu/test_host_pipeline.py::test_concurrent_calls_from_threads
    timeout 240 python3 -m pytest -q -p no:cacheprovider "$threads" \
        > "$OUT/gpu-threads.txt" 2>&1
    echo "threads test: exit $? ($(tail -1 "$OUT/gpu-threads.txt"))"
    timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider --maxfail=30 --deselect "$threads" \
        tests > "$OUT/gpu-tests.txt" 2>&1
    echo "GPU tests: exit $?"; tail -4 "$OUT/gpu-tests.txt"
fi
[[ $steps == tests ]] && exit 0
timeout 150 python3 benchmarks/bench_host.py --out "$OUT" > "$OUT/bench_host.txt" 2>&1
tail -42 "$OUT/bench_host.txt"
timeout 240 python3 benchmarks/bench_tuning.py --out "$OUT" > "$OUT/bench_tuning.txt" 2>&1
grep -v heatmap "$OUT/bench_tuning.txt"
timeout 150 python3 benchmarks/profile_calls.py --out "$OUT" --pipeline 4096 \
    > "$OUT/profile.txt" 2>&1
grep -E "^[a-z].*: [0-9.]+ (us|ms)$" "$OUT/profile.txt"
