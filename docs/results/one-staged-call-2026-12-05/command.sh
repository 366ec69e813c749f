# The device run of 2026-12-05 22:46-22:51 UTC (NVIDIA H100 80GB HBM3, 700 W cap), commit 0de4f4b:
source .device/setup.sh > /dev/null 2>&1
GPU_TESTS="tests/gpu/test_twins_gpu.py tests/gpu/test_simt_kmajor_lanes_gpu.py" TESTS_LIMIT=200 \
    ONE_CALL_LIMIT=170 bash benchmarks/gpu_session.sh tests one-staged-call
# Read back on the CPU (the step now runs this itself):
python benchmarks/twin_sets.py --calls docs/results/one-staged-call-2026-12-05
