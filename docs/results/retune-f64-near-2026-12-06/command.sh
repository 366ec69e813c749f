# The device run of 2026-12-06 (NVIDIA H100 80GB HBM3), 14:12-14:18 UTC, on the tree of 8e3a7f9:
# float64's entries that cuBLAS held with the best own time within 1.3x of it, retuned with the
# current families and installed; its tuned.json is the shipped table since.
source .device/setup.sh > /dev/null 2>&1
NEAR_DTYPES=float64 NEAR_RATIO=1.3 RETUNE_MINUTES=6 RETUNE_SLACK_S=110 RETUNE_INSTALL=1 \
    bash benchmarks/gpu_session.sh retune-near
# Here, after the run: the table against its predecessor (table-diff.txt).
python3 benchmarks/table_diff.py 8e3a7f9 --prefix float64/
