# The device run of 2026-12-07 (NVIDIA H100 80GB HBM3), from about 01:37 UTC, 175 s, on the
# tree of 46929d7 (edge_panel.ENABLED still False; the step's "on" arm was then
# bench_tuning --edge-panels, which is the default since, and its "off" arm is now
# --no-edge-panels). edge_panel's GPU test, then the public call without and with the edge
# panels at five float32 shapes (TT, NN) and two float64 NN ones, one round.
source .device/setup.sh && date -u > $OUT/date.txt \
    && EDGE_TEST_LIMIT=200 EDGE_LIMIT=60 bash benchmarks/gpu_session.sh edge-panel
