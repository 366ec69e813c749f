# The device runs of 2026-12-07 (fifty-fourth session; NVIDIA H100 80GB HBM3, 700 W cap).
source .device/setup.sh > /dev/null 2>&1
# Run 1, 09:14-09:16 UTC, tree d2f102f: the DGEMM squares by layout (one long run of each side,
# ours first), then 10 of the shipped table's configs.
LAYOUT_LIMIT=400 bash benchmarks/gpu_session.sh dgemm-layout
TUNEDGEMM_TABLE_SAMPLE=10 python3 -m pytest -q -m gpu tests/gpu/test_shipped_table.py
# Run 2, 09:17-09:21 UTC, tree be8e9bd (the long runs ours-cuBLAS-cuBLAS-ours): the square
# floors, the probe again, the plans' GPU tests.
bash benchmarks/gpu_session.sh squares
LAYOUT_LIMIT=300 bash benchmarks/gpu_session.sh dgemm-layout
GPU_TESTS="tests/gpu/test_plans_gpu.py" TESTS_LIMIT=150 bash benchmarks/gpu_session.sh tests
# Run 3, 09:27-09:31 UTC, tree acd5028 (dmma's large tile timed by autotuning): its GPU test,
# the square floors, the probe, float64's random floors (fresh seed 1796635834).
TUNEDGEMM_TEST_PRECOMPILE=0 python3 -m pytest -q -m gpu tests/gpu/test_dmma_large_tile_gpu.py
bash benchmarks/gpu_session.sh squares
LAYOUT_LIMIT=150 bash benchmarks/gpu_session.sh dgemm-layout
RANDOM_DTYPES=float64 RANDOM_LIMIT=170 bash benchmarks/gpu_session.sh random
# Run 4, 09:33-09:38 UTC, tree acd5028: bench_device (every array kind, auto mode), then 30 of
# the shipped table's configs.
DEVICE_LIMIT=330 bash benchmarks/gpu_session.sh device
TUNEDGEMM_TABLE_SAMPLE=30 python3 -m pytest -q -m gpu tests/gpu/test_shipped_table.py
# Run 5, 09:42-09:44 UTC, tree acd5028: the float64 squares on every array kind again (auto
# mode), then float32 TN's random floors (fresh seed 1796636581).
python3 benchmarks/bench_device.py --dtypes float64 --shapes 4096x4096x4096,8192x8192x8192 \
    --out "$OUT" --name bench_device-f64-squares
RANDOM_DTYPES=float32 RANDOM_TRANS=TN RANDOM_TAG=TN-float32 RANDOM_LIMIT=170 bash benchmarks/gpu_session.sh random
# Run 6, 09:48-09:49 UTC, tree 6360e9b (the large tile only where cuBLAS is not a candidate):
# float64 matmul at the squares (auto mode), then the square floors (own kernels only).
python3 benchmarks/bench_device.py --libs cupy,torch --forms matmul --dtypes float64 \
    --shapes 4096x4096x4096,8192x8192x8192 --out "$OUT" --name bench_device-f64-matmul
SQUARES_LIMIT=100 bash benchmarks/gpu_session.sh squares
