#!/usr/bin/env bash
# One GPU-machine session: info, GPU tests, verify, demo, kernel benchmark; logs to $OUT.
# Run there as:  source .device/setup.sh && bash benchmarks/gpu_session.sh [bench args...]
# (benchmarks/bench_tuning.py, the tuned-vs-fixed comparison, runs separately: it takes
# a few minutes of its own.)
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd /tmp && python3 -m tunedgemm info 2>&1 | tee "$OUT/info.txt"; cd - >/dev/null
python3 -m pytest -q -m gpu -p no:cacheprovider --maxfail=40 --junitxml="$OUT/gpu-tests.xml" tests \
    2>&1 | tee "$OUT/gpu-tests.txt" | tail -25
python3 -m tunedgemm verify 2>&1 | tee "$OUT/verify.txt" | tail -8
python3 -m tunedgemm demo --size 1024 4096 2>&1 | tee "$OUT/demo.txt"
python3 benchmarks/bench_kernels.py --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.txt"
