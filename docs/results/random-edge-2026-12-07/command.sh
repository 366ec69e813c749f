# Two device calls on one NVIDIA H100 80GB HBM3 (700 W), 2026-12-07, on this checkout's working
# tree at 4181a5a (edge_panel.ENABLED on since 1b5680d; `git log` on the device printed 46929d7,
# the device copy's history, not its files). Call 1, 03:10:49-03:13:03 UTC: the GPU tests of
# the edge panels, the plans and the transposed runners, cut at 130 s.
source .device/setup.sh && GPU_TESTS="tests/gpu/test_edge_panel_gpu.py tests/gpu/test_plans_gpu.py \
    tests/gpu/test_pretranspose_gpu.py" TESTS_LIMIT=130 bash benchmarks/gpu_session.sh tests
# Call 2, 03:13:17-03:14:41 UTC: issue 15's random floors, float32 TT, a fresh seed.
source .device/setup.sh && RANDOM_DTYPES=float32 RANDOM_TRANS=TT RANDOM_TAG=TT-float32 \
    RANDOM_LIMIT=110 bash benchmarks/gpu_session.sh random
