# The device run of 2026-12-05 14:24-14:27 UTC (NVIDIA H200, 700 W cap), commit ba5c1c2:
source .device/setup.sh > /dev/null 2>&1
KL_PARTS="tests tn" KL_TESTS_LIMIT=270 KL_LIMIT=220 bash benchmarks/gpu_session.sh kmajor-lanes
