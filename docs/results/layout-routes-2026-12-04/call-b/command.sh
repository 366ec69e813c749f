# 2026-12-04 21:05-21:08 UTC, NVIDIA H200, commit 44697b9 (the device tool's one-GPU kind).
# The first probe's JSON was overwritten by the second's (fixed since in gpu_session.sh);
# its table is in probe_pretranspose-TN.txt.
source .device/setup.sh > /dev/null 2>&1
PRETRANSPOSE_LIMIT=280 PRETRANSPOSE_DTYPES=float32 \
    PRETRANSPOSE_SHAPES=12998x584x5749,13756x574x7518,3000x700x2000,12552x3847x1288,6906x530x1593,8000x300x1000,4096x4096x4096,2048x768x4096 \
    bash benchmarks/gpu_session.sh pretranspose > $OUT/b.log 2>&1
PRETRANSPOSE_LIMIT=150 PRETRANSPOSE_PARTS=probe PRETRANSPOSE_DTYPES=float32 PRETRANSPOSE_FROM_N=512 \
    PRETRANSPOSE_TAG=from-n-512 PRETRANSPOSE_SHAPES=6906x530x1593,3000x700x2000,12998x584x5749 \
    bash benchmarks/gpu_session.sh pretranspose >> $OUT/b.log 2>&1
bash benchmarks/gpu_session.sh pack
