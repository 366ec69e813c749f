# 2026-12-04 17:06-17:13 UTC, NVIDIA H200, commit 20f79d3 (the device tool's one-GPU kind)
source .device/setup.sh > /dev/null 2>&1
TESTS_LIMIT=150 GPU_TESTS="tests/gpu/test_simt_lane_pairs_gpu.py tests/gpu/test_pretranspose_gpu.py" \
    WIDE_ROUNDS=2 LANE_CALL_LIMIT=100 LAYOUT_LIMIT=100 \
    bash benchmarks/gpu_session.sh layout-routes tests wide-pairs-call squares > $OUT/session.log 2>&1
bash benchmarks/gpu_session.sh pack
# kernel-level pairs, here: python3 benchmarks/lane_pairs_summary.py docs/results/layout-routes-2026-12-04/bench_tuning-wide-*-[0-9].json
