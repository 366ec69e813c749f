# The device runs of 2026-12-06 (NVIDIA H100 80GB HBM3, 700 W cap), tree of e5dc00c
# (the kernels and tuner of 0de4f4b; the two differ in benchmarks/ and docs/ only).
source .device/setup.sh > /dev/null 2>&1
# Run 1, 03:44-03:51 UTC: the GPU tests not reached on 2026-12-05, then float32 TN retuned
# with the one-staged register twin and installed for the runs after it.
GPU_TESTS="tests/gpu/test_simt_kmajor_lanes_gpu.py -k 4099" TESTS_LIMIT=140 \
    RETUNE_DTYPES=float32 RETUNE_TRANS=TN RETUNE_SHAPES=default+benchmark RETUNE_MINUTES=4 \
    RETUNE_SLACK_S=60 RETUNE_INSTALL=1 bash benchmarks/gpu_session.sh tests retune
# Run 2, 03:51-03:54 UTC, on run 1's table (its tuned.json is the shipped table since):
RANDOM_DTYPES=float32 RANDOM_TRANS=TN RANDOM_TAG=TN RANDOM_LIMIT=240 bash benchmarks/gpu_session.sh random
RANDOM_DTYPES=float32 RANDOM_LIMIT=240 bash benchmarks/gpu_session.sh random
# Run 3, 03:54-03:59 UTC:
for p in "float64 NN" "float64 TN" "float32 NT" "float32 TT"; do
    set -- $p
    RANDOM_DTYPES=$1 RANDOM_TRANS=$2 RANDOM_TAG=$2-$1 RANDOM_LIMIT=200 bash benchmarks/gpu_session.sh random
done
