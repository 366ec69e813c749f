#!/usr/bin/env bash
# One GPU-machine session: GPU tests, then the benchmarks; logs to $OUT.
# Run there as:  source .device/setup.sh && bash benchmarks/gpu_session.sh [STEP ...]
# Steps (default: tests device precision host): tests (info and the GPU tests), device
# (bench_device: public calls on device arrays against their peers), precision (bench_tf32),
# host (bench_host), tuning (bench_tuning), sanitize (compute-sanitizer over the shipped
# configs), fuzz (the differential fuzzer on the GPU backend). Each step has its own time
# limit, so that a hang costs that step only; a whole session can outlast one 10-minute
# call on a fresh machine (it compiles every kernel it meets): name the steps that fit.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=${*:-tests device precision host}
# The tests import the working tree's package (editable install on a development machine):
# build the C short route there too.
python3 setup.py -q build_ext --inplace > "$OUT/build_ext.txt" 2>&1 || echo "build_ext failed"
for step in $steps; do
    case $step in
    tests)
        (cd /tmp && python3 -m tunedgemm info > "$OUT/info.txt" 2>&1)
        timeout 330 python3 -m pytest -q -m gpu -p no:cacheprovider --maxfail=30 \
            --deselect tests/gpu/test_shipped_table.py tests > "$OUT/gpu-tests.txt" 2>&1
        echo "GPU tests: exit $?"; tail -6 "$OUT/gpu-tests.txt" ;;
    shipped)  # every config of the shipped table (slow on a fresh machine: it compiles them)
        timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_shipped_table.py \
            > "$OUT/gpu-shipped.txt" 2>&1
        echo "shipped table: exit $?"; tail -3 "$OUT/gpu-shipped.txt" ;;
    device)
        timeout 240 python3 benchmarks/bench_device.py --out "$OUT" --plot \
            > "$OUT/bench_device.txt" 2>&1
        echo "bench_device: exit $?"; tail -24 "$OUT/bench_device.txt" ;;
    precision)
        timeout 200 python3 benchmarks/bench_tf32.py --out "$OUT" > "$OUT/bench_tf32.txt" 2>&1
        echo "bench_tf32: exit $?"; tail -30 "$OUT/bench_tf32.txt" ;;
    host)
        timeout 150 python3 benchmarks/bench_host.py --out "$OUT" > "$OUT/bench_host.txt" 2>&1
        echo "bench_host: exit $?"; tail -30 "$OUT/bench_host.txt" ;;
    tuning)
        timeout 240 python3 benchmarks/bench_tuning.py --out "$OUT" > "$OUT/bench_tuning.txt" 2>&1
        grep -v heatmap "$OUT/bench_tuning.txt" ;;
    sanitize)
        timeout 480 python3 benchmarks/sanitize.py > "$OUT/sanitize.txt" 2>&1
        echo "sanitize: exit $?"; tail -12 "$OUT/sanitize.txt" ;;
    fuzz)
        timeout 300 python3 benchmarks/fuzz.py --calls 10000 --backend gpu --out "$OUT" \
            > "$OUT/fuzz.txt" 2>&1
        echo "fuzz: exit $?"; tail -8 "$OUT/fuzz.txt" ;;
    *) echo "unknown step $step" ;;
    esac
done
