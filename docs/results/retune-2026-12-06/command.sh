# The device runs of 2026-12-06 (NVIDIA H100 80GB HBM3, 700 W cap); runs 1-3 on the tree of e5dc00c
# (the kernels and tuner of 0de4f4b; the two differ in benchmarks/ and docs/ only).
source .device/setup.sh > /dev/null 2>&1
# Run 1, 03:44-03:51 UTC: the GPU tests not reached on 2026-12-05, then float32 TN retuned
# with the one-staged register twin and installed for the runs after it.
GPU_TESTS="tests/gpu/test_simt_kmajor_lanes_gpu.py -k 4099" TESTS_LIMIT=140 \
    RETUNE_DTYPES=float32 RETUNE_TRANS=TN RETUNE_SHAPES=default+benchmark RETUNE_MINUTES=4 \
    RETUNE_SLACK_S=60 RETUNE_INSTALL=1 bash benchmarks/gpu_session.sh tests retune
# Run 2, 03:51-03:54 UTC, on run 1's table (committed in 4637fbc):
RANDOM_DTYPES=float32 RANDOM_TRANS=TN RANDOM_TAG=TN RANDOM_LIMIT=240 bash benchmarks/gpu_session.sh random
RANDOM_DTYPES=float32 RANDOM_LIMIT=240 bash benchmarks/gpu_session.sh random
# Run 3, 03:54-03:59 UTC:
for p in "float64 NN" "float64 TN" "float32 NT" "float32 TT"; do
    set -- $p
    RANDOM_DTYPES=$1 RANDOM_TRANS=$2 RANDOM_TAG=$2-$1 RANDOM_LIMIT=200 bash benchmarks/gpu_session.sh random
done
# Run 4, 04:33-04:38 UTC, tree of 4637fbc (its table is run 1's): float32 NT and TT retuned
# whole, 82 of 132 tasks in the budget.
RETUNE_DTYPES=float32 RETUNE_TRANS="NT TT" RETUNE_SHAPES=default+benchmark RETUNE_MINUTES=4 \
    RETUNE_SLACK_S=90 bash benchmarks/gpu_session.sh retune
# Run 5, 04:38-04:40 UTC: the other 50, resumed from run 4's checkpoint (carried as
# retune/ckpt.jsonl); its tuned.json is the shipped table since.
RETUNE_DTYPES=float32 RETUNE_TRANS="NT TT" RETUNE_SHAPES=default+benchmark RETUNE_MINUTES=2 \
    RETUNE_SLACK_S=70 bash benchmarks/gpu_session.sh retune
# Run 6, 04:40-04:42 UTC, on run 5's table:
for p in TT NT; do
    RANDOM_DTYPES=float32 RANDOM_TRANS=$p RANDOM_TAG=$p-float32 RANDOM_LIMIT=90 \
        bash benchmarks/gpu_session.sh random
done
