# 2026-12-04 21:31-21:35 UTC, NVIDIA H200, commit 554a0f7 (the device tool's one-GPU kind)
source .device/setup.sh > /dev/null 2>&1
TESTS_LIMIT=150 GPU_TESTS="tests/gpu/test_simt_lane_pairs_gpu.py tests/gpu/test_pretranspose_gpu.py tests/gpu/test_two_warp_tiles_gpu.py" \
    bash benchmarks/gpu_session.sh tests > $OUT/c.log 2>&1
RANDOM_DTYPES=float32 RANDOM_TRANS=TN RANDOM_TAG=TN-float32 RANDOM_LIMIT=200 bash benchmarks/gpu_session.sh random >> $OUT/c.log 2>&1
RANDOM_DTYPES=float32 RANDOM_TRANS=NN RANDOM_TAG=NN-float32 RANDOM_LIMIT=180 bash benchmarks/gpu_session.sh random >> $OUT/c.log 2>&1
bash benchmarks/gpu_session.sh pack
