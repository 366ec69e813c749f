# The device run of 2026-12-06 (NVIDIA H100 80GB HBM3, 700 W), 19:55:59-19:58:01 UTC, on the
# tree of 46929d7 (the float64 near retune installed): issue 15's random floors for float64,
# NN then TN, fresh seeds.
source .device/setup.sh && for p in NN TN; do RANDOM_DTYPES=float64 RANDOM_TRANS=$p \
    RANDOM_TAG=$p-float64 RANDOM_LIMIT=225 bash benchmarks/gpu_session.sh random; done
