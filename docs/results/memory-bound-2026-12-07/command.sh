# The device runs of 2026-12-07 (fifty-sixth session), NVIDIA H100 80GB HBM3, each on a fresh machine.
source .device/setup.sh > /dev/null 2>&1
# Run 1, 15:55-15:57 UTC, tree of 6b6dcb2 (gemv_like.ENABLED still False; bench_memory_bound
# turns the panel kernel on for its own and auto arms, off for its before arm):
TUNEDGEMM_TEST_PRECOMPILE=0 timeout 170 python3 -m pytest -q -x -m gpu -p no:cacheprovider \
    tests/gpu/test_gemv_like_gpu.py > $OUT/gpu-gemv.txt            # gpu-gemv-1.txt
MEMORY_LIMIT=330 MEMORY_TRANS=NN MEMORY_ARGS=--before \
    MEMORY_SHAPES=1x8192x8192,4x8192x8192,16x8192x8192,32x8192x8192,8192x1x8192,8192x4x8192,8192x16x8192,65536x16x1024,8192x8192x16 \
    bash benchmarks/gpu_session.sh memory                          # bench_memory_bound-NN.*
# Run 2, 16:31-16:38 UTC, tree of 6b6dcb2 with ENABLED = True (as 1776995) and a trial,
# dropped after this run, of a second accumulator count: GemvConfig.accumulators 32 or 64
# (ACC_CAP in gemm_gemv.cu's GROUP_CAP in place of 32), 64 offered at SHORT 16 in float32
# where the long operand runs along k. Every panel autotuning kept ran ACC_CAP 32, the code
# of 1776995. The GPU tests ran both counts at SHORT 16.
TUNEDGEMM_TEST_PRECOMPILE=0 timeout 120 python3 -m pytest -q -x -m gpu -p no:cacheprovider \
    tests/gpu/test_gemv_like_gpu.py > $OUT/gpu-gemv.txt            # gpu-gemv-2.txt
TUNEDGEMM_TEST_PRECOMPILE=0 timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider \
    tests/gpu/test_plans_gpu.py tests/gpu/test_device_arrays.py > $OUT/gpu-plans.txt   # gpu-plans-2.txt
MEMORY_LIMIT=280 MEMORY_TRANS=NN,TN,NT,TT MEMORY_ARGS=--before \
    MEMORY_SHAPES=1x8192x8192,4x8192x8192,16x8192x8192,8192x1x8192,8192x4x8192,8192x16x8192,65536x16x1024 \
    bash benchmarks/gpu_session.sh memory                          # bench_memory_bound-pairs.*
# (cut by its 280 s limit before float64 TT 65536x16x1024 and the plot; the JSON holds 55 rows
# and the summary)
# Run 3, 16:42-16:47 UTC, tree of 1776995: the 32-wide and small-k shapes at every pair.
MEMORY_LIMIT=400 MEMORY_TRANS=NN,TN,NT,TT MEMORY_NAME=bench_memory_bound-rest \
    MEMORY_SHAPES=32x8192x8192,8192x32x8192,16x65536x1024,8192x8192x8,8192x8192x16,8192x8192x32,16384x16384x16 \
    bash benchmarks/gpu_session.sh memory                          # bench_memory_bound-rest.*
# Run 4, 16:54-16:55 UTC, tree of 7fcaa29 with benchmarks/probe_gemv.py and the gemv-probe
# step (as committed after it): each panel config alone against cuBLAS, then one launch of each
# under Nsight Compute (--clock-control none).
GEMV_NCU=1 GEMV_LIMIT=100 NCU_LIMIT=150 GEMV_SHAPES=16x8192x8192,4x8192x8192 GEMV_TRANS=NN,NT \
    bash benchmarks/gpu_session.sh gemv-probe                      # probe_gemv.*, ncu-gemv*
