#!/usr/bin/env bash
# One GPU-machine session: GPU tests, then the benchmarks; logs to $OUT.
# Run there as:  source .device/setup.sh && bash benchmarks/gpu_session.sh [STEP ...]
# Steps (default: tests device precision host): tests (info and the GPU tests; GPU_TESTS names
# files to run instead of all of tests/, TESTS_LIMIT the seconds), tests-sharded (the same
# tests less the shipped table's, in SHARDS processes at once: gpu_tests_sharded.py), device
# (bench_device: public calls on device arrays against their peers), precision (bench_tf32),
# host (bench_host), tuning (bench_tuning), sanitize (compute-sanitizer over the shipped
# configs), fuzz (the differential fuzzer on the GPU backend), faults (the fault tests 20 times),
# ozaki (bench_ozaki), precision3 (bench_precision --quick), small (bench_host --small-only),
# dask (bench_multigpu's Dask part), wgmma (the tf32_wgmma family's GPU test and benchmark),
# newresult (profile_new_result, float32 and float64: a new device result against into c),
# newresult-torch (the same on torch tensors, float64, and profile_torch_alloc), graphs (graph
# replay of cuBLASLt calls: its GPU test and probe_graph_launch), batched
# (bench_device's batched matmul forms),
# advance (simt ADVANCE's GPU test and bench_kernels --advance), roll (the same for simt
# ROLL_K: test_simt_roll_gpu.py and bench_kernels --roll), ncu (Nsight Compute on those
# variants and cuBLAS: ncu_simt.py), around (simt EARLY_BARRIER's GPU test and bench_kernels
# --around: the table's config and its neighbours), order (the same for simt FMA_ORDER:
# test_simt_fma_order_gpu.py and bench_kernels --fma-order), reg-transpose (the same for simt
# REG_TRANSPOSE: test_twins_gpu.py and bench_kernels --reg-transpose), fused (dmma SPLITK_FUSED's GPU test,
# probe_call_cost, small float64 bench_device), squares (issue 15's 4096^3 and 8192^3 through
# the public call, own kernels only), memory (the public call's GB/s at memory-bound
# shapes: bench_memory_bound.py), gemv-probe (each panel config alone against cuBLAS:
# probe_gemv.py; GEMV_NCU=1 also under Nsight Compute), staged (gemm_gemv_staged.cu's
# first GPU run: its GPU tests, then gemv-probe), dgemm-layout (those DGEMM squares
# by operand layout, TT against NN: probe_dgemm_layout.py), random (bench_tuning's random shapes, no heatmap),
# dmma-advance (dmma ADVANCE's GPU test and bench_kernels --dmma-advance), dmma-steady (the
# same test, then bench_kernels --dmma-steady), simt-steady (simt STEADY_LOOP's GPU test and
# bench_kernels --simt-steady), simt-loop (the same test, then bench_kernels --simt-loop),
# simt-shift (simt's edge blocks in the steady loop: their GPU test, then bench_kernels
# --simt-shift), dmma-shift (the same for dmma), simt-clamp and dmma-clamp (the same tests,
# then bench_kernels --simt-clamp / --dmma-clamp: the clamp's sources), memcheck-edges
# (compute-sanitizer memcheck over both edge tests), edge-panel (edge_panel.py's GPU test and
# the call without and with it), reads-c (autotuning at beta != 0: its
# GPU tests, then probe_reads_c.py), host-ties (autotune.HOST_TIES: its GPU test, then
# probe_host_ties.py), medium-tiles (dmma's three-block tiles: their GPU test, then
# probe_medium_tiles.py), ring-pad (dmma's unpadded ring: its GPU tests,
# probe_ring_pad.py, Nsight Compute's bank conflicts), ring-public (the same through the
# public call, before and after), ncu-census (what kernels cuBLAS and our calls run at NCU_SHAPES),
# old-first (the epilogues' old values of
# C loaded first: GPU tests that read C, then bench_kernels --old-first),
# same-bits (same_bits.py against the kernels in .device/base-kernels), dmma-large
# (bench_kernels --dmma-large), splits (probe_skinny --splits around: k-splits that fill
# whole rounds of blocks, at the table's losing entries), dgemm-probe (what autotuning times
# and keeps at the DGEMM squares, probe_dgemm_squares.py), retune (the tuner regenerates the
# table's IEEE entries, RETUNE_* settings; see the step), retune-small (retune on the table's
# launch-bound entries), retune-rounds (retune on the entries that get whole-round k-splits:
# round_split_entries.py), wave-split (probe_wave_split.py), retune-near (retune on cuBLAS's
# near ties), retune-round-tiles (retune where autotuning times the round tiles),
# retune-wide-splits
# (retune where autotuning's splits go above 64 slices), retune-shapes (retune
# on RETUNE_LOG's entries), dmma-stream-k
# (probe_skinny --stream-k at float64's badly filled shapes), worst-float64 and worst-float32 (bench_tuning on each dtype's worst random shapes of the day), tiles-float64
# (probe_skinny --tiles: dmma tilings outside the tuner's space at float64's losing shapes),
# tiles-smallk (the same at float64's small-k entries of many tiles), swap (dmma SWAP_AB's
# GPU test, then tiles-smallk's best tilings with and without it),
# tiles-float32 (the same with simt tilings at float32's worst random shapes), tiles-two-warp
# (simt's 64-thread tiles: their GPU test, then the same at those shapes), narrow-two-warp
# (simt's narrow tiles as two warps, at skinny shapes), longk-float32 (bench_tuning and simt
# tilings at float32's long-k entries that cuBLAS holds), round-tiles (simt's three-block round
# tile: its GPU tests, then probe_round_tiles.py), layout-losers (simt tilings at TN's and
# TT's worst random float32 shapes), layout-routes (one TN product's shapes at TN, TT and
# NN: what transposing an operand first could gain), tn-large (simt's large tiles at TN and NN), pretranspose
# (TN and TT with A or B transposed first: its GPU test and probe_pretranspose.py),
# narrow-splits (simt's narrow tile by GROUP_M and split, then probe_narrow_splits.py), round-mirror
# (the round tile beside its 64 x 128 mirror at TT and NN, probe_skinny.py --tiles),
# reduce-grid (the split-K reduction's thread per element: its GPU test, its SASS,
# probe_reduce_grid.py), medium-simt (simt's medium tiles: their GPU test, ncu census,
# probe_skinny --tiles, the call at NN's and TN's medium shapes), tn-copies (TN's operands
# by 4-byte cp.async against through registers: ncu, probe_skinny --tiles), async-cursor
# (simt ASYNC_CURSOR: its GPU test, ncu, probe_skinny --tiles at TN), cursor-call (TN's
# cursor-copy twin: GPU tests, bench_tuning at TN's medium shapes), medium-floor (the medium
# tiles under plans.MEDIUM_FROM_FLOPS, against the call there), copy-step (TN's cursor-copy
# twin with its copies later in the k-tile: COPY_STEP, probe_skinny --tiles), lane-pairs and
# lane-call (simt LANE_PAIRS: kernels, then the call), wide-pairs-call (LANE_PAIRS at
# 8 x 8 thread tiles against without, through the call), kmajor-lanes (simt KMAJOR_LANES and
# REG_TRANSPOSE 2/3: GPU test, ncu's shared-store bank conflicts, kernel times at TN and NN),
# one-staged-call (TN's twin staging one operand against both, through the call), lds-wavefronts (probe_lds_wavefronts:
# LDS.128's wavefronts under ncu by which lanes share an address), register
# (probe_register), power (probe_power: SM clock and power while our call or
# cuBLAS runs alone), small-launch (probe_small_launch: own kernels' host and GPU time
# a launch at small shapes against cuBLASLt's), small-family (probe_small_family: the small
# family's whole space at launch-bound shapes against cuBLAS and the table's own configs),
# stream-k (autotuning's stream-K variants: their GPU test, then bench_tuning on float32's
# earlier worst random shapes without and with them),
# unverified (the GPU tests and benchmark of code written without a GPU), multigpu (on a
# machine of two or more GPUs: the multi-GPU, Dask and host-pipeline GPU tests, then the whole
# bench_multigpu, Dask and host products, on 1..N GPUs; MULTIGPU_HOST_DTYPES, MULTIGPU_PANELS:
# PANELS_PER_GPU values to try), multigpu-host (its host products), multigpu-profile (where a
# host product's time goes on each GPU), multigpu-ab (pipeline settings compared, MULTIGPU_AB),
# pack (last: all of $OUT in one archive, session.tgz, since at most 8 files come back). Each
# step has its own time limit, so that a hang costs that step only; a whole session can
# outlast one 10-minute call on a fresh machine (it compiles every kernel it meets): name
# the steps that fit.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
steps=${*:-tests device precision host}
# The tests import the working tree's package (editable install on a development machine):
# build the C short route there too.
python3 setup.py -q build_ext --inplace > "$OUT/build_ext.txt" 2>&1 || echo "build_ext failed"
# BENCH_ROUNDS=N: bench_kernels' variant steps time each variant list N rounds (default 2),
# every other one in reverse order.
# STAMP_TABLE=1: calls use the shipped table with its family hashes stamped from this tree's
# kernels, for runs of kernel text that changed in ways meant to keep its bits (development
# switches at their defaults); unstamped, such a table is stale and calls run the defaults.
# The stamped copy lies in $OUT, which `pack` archives and empties: it serves this script's
# steps, not commands run after it.
if [ "${STAMP_TABLE:-0}" = 1 ]; then
    python3 -c "
import json, sys
from tunedgemm import table
t = json.load(open('tunedgemm/tables/tuned.json'))
t['family_hashes'] = table.family_hashes()
json.dump(t, open(sys.argv[1], 'w'))" "$OUT/stamped-table.json" && export TUNEDGEMM_TABLE="$OUT/stamped-table.json"
    echo "table: the shipped one stamped with this tree's family hashes (${TUNEDGEMM_TABLE:-failed})"
fi

# The GPU tests of some files alone: gpu_test_files NAME SECONDS FILE... (writes gpu-NAME.txt)
gpu_test_files() {
    TUNEDGEMM_TEST_PRECOMPILE=0 timeout "$2" python3 -m pytest -q -m gpu -p no:cacheprovider \
        "${@:3}" > "$OUT/gpu-$1.txt" 2>&1
    echo "$1 tests: exit $?"; tail -4 "$OUT/gpu-$1.txt"
}
# A kernel variant's GPU test, then bench_kernels --NAME: variant_step NAME TEST TEST_LIMIT
# BENCH_LIMIT (writes gpu-NAME.txt and bench_NAME.txt).
variant_step() {
    gpu_test_files "$1" "$3" "$2"
    timeout "$4" python3 benchmarks/bench_kernels.py "--$1" --out "$OUT" \
        ${BENCH_ROUNDS:+--rounds $BENCH_ROUNDS} > "$OUT/bench_$1.txt" 2>&1
    echo "bench_kernels --$1: exit $?"; tail -10 "$OUT/bench_$1.txt"
}
# probe_skinny.py --tiles (padded): probe_tiles DTYPE SHAPES TILE... (writes
# probe_tiles-DTYPE.txt; TILES_SHAPES in place of SHAPES, TILES_LIMIT seconds, TILES_SPLITS
# and TILES_STREAM_K the splits and stream-K blocks an SM each tile is timed at,
# TILES_TRUST_PTXAS=1 keeps tiles that only the family's register estimate rules out,
# TILES_IGNORE=TEXT|TEXT those that only constraints holding one of them rule out)
probe_tiles() {
    local dtype=$1 shapes=$2
    shift 2
    timeout ${TILES_LIMIT:-400} python3 benchmarks/probe_skinny.py --dtype $dtype --padded \
        --tiles "$@" --shapes ${TILES_SHAPES:-$shapes} --out "$OUT" --trans ${TILES_TRANS:-NN} \
        --tile-splits=${TILES_SPLITS-1,2,3,4,6,8} --tile-stream-k=${TILES_STREAM_K-1,2} \
        ${TILES_TRUST_PTXAS:+--trust-ptxas} ${TILES_IGNORE:+--ignore-constraint "$TILES_IGNORE"} \
        > "$OUT/probe_tiles-$dtype${TILES_TRANS:+-$TILES_TRANS}.txt" 2>&1
    echo "probe_skinny --tiles: exit $?"; cat "$OUT/probe_tiles-$dtype${TILES_TRANS:+-$TILES_TRANS}.txt"
}
# bench_tuning on a list of shapes, own kernels and auto: bench_list DTYPE TRANS SHAPES TAG
# SECONDS (writes bench_tuning-TAG.txt and .json; BENCH_FLAGS: more of its options);
# bench_worst DTYPE SHAPES is it at NN with
# the tag worst-DTYPE and WORST_LIMIT seconds
bench_list() {
    timeout $5 python3 benchmarks/bench_tuning.py --no-heatmap --dtype $1 --trans $2 \
        --shape-list $3 --tag $4 --out "$OUT" ${BENCH_FLAGS:-} > "$OUT/bench_tuning-$4.txt" 2>&1
    echo "bench_tuning $4: exit $?"
    grep -v "^#" "$OUT/bench_tuning-$4.txt" | grep -v "best single"
}
bench_worst() { bench_list $1 NN $2 worst-$1 ${WORST_LIMIT:-240}; }
# RETUNE_INSTALL=1: a retuned table ($OUT/tuned.json) in the tree, which `python3 -m` run
# from the repository root imports (the tuner, pytest), and in the package setup.sh installed,
# which the scripts under benchmarks/ import (they run with benchmarks/, not the root, first on
# sys.path): before 2026-11-28 only the tree's copy was replaced, so benchmark steps after an
# install still ran the shipped table.
install_table() {
    [ "${RETUNE_INSTALL:-0}" = 1 ] || return 0
    cp "$OUT/tuned.json" tunedgemm/tables/tuned.json
    installed=$(cd /tmp && python3 -c "from tunedgemm import table; print(table.shipped_path())")
    if [ -f "$installed" ] && ! [ "$installed" -ef tunedgemm/tables/tuned.json ]; then
        cp "$OUT/tuned.json" "$installed" && echo "table installed: $installed"
    fi
}
# The tuner on the entries of a TUNEDGEMM_LOG_SHAPES file: retune_log FILE; resumes from
# retune/ckpt.jsonl as the retune step does. Both stop RETUNE_SLACK_S seconds (default 60)
# after RETUNE_MINUTES: the tuner compiles its configs before its budget starts, which on a
# fresh machine took most of a 6-minute call at 145 float32 NN entries (2026-11-27 21:00 UTC).
retune_log() {
    [ -f retune/ckpt.jsonl ] && cp retune/ckpt.jsonl "$OUT/retune-ckpt.jsonl"
    cp tunedgemm/tables/tuned.json "$OUT/tuned.json"
    timeout $(( ${RETUNE_MINUTES:-8} * 60 + ${RETUNE_SLACK_S:-60} )) python3 -m tunedgemm.tune \
        --shapes-log "$1" --max-evals ${RETUNE_MAX_EVALS:-8} \
        --time-budget ${RETUNE_MINUTES:-8} --checkpoint "$OUT/retune-ckpt.jsonl" \
        --out "$OUT/tuned.json" > "$OUT/retune.txt" 2>&1
    echo "retune on $1: exit $?"; tail -5 "$OUT/retune.txt"
    install_table
}
# How a retuned table section ($OUT/tuned.json, the GPU at hand's, which the tuner wrote) is
# held: by cuBLAS, by a tile at three blocks an SM (dmma's medium tiles, simt's 128 x 64 round
# tile), or by another own config; and at how many entries such a tile was the best own one:
# (three_block_census LABEL)
three_block_census() {
    python3 - "$OUT/tuned.json" "$1" <<'PY'
import json, sys
from collections import Counter
def three_blocks(config):
    return isinstance(config, dict) and config["params"].get("MIN_BLOCKS") == 3
shipped = {d["name"] for d in json.load(open("tunedgemm/tables/tuned.json"))["devices"]}
for device in json.load(open(sys.argv[1]))["devices"]:
    if device["name"] in shipped:  # the GPU at hand's section only, where the tuner wrote
        continue
    for key, entries in device["entries"].items():
        held = Counter("cublas" if e["choice"] == "cublas" else sys.argv[2]
                       if three_blocks(e["choice"]) else "other own" for e in entries)
        best_own = sum(three_blocks(e.get("own")) for e in entries)
        print(device["name"], key, f"{len(entries)} entries, held by:", dict(held),
              f"; the best own config a {sys.argv[2]} at {best_own}")
PY
}
for step in $steps; do
    case $step in
    tests)
        (cd /tmp && python3 -m tunedgemm info > "$OUT/info.txt" 2>&1)
        timeout ${TESTS_LIMIT:-330} python3 -m pytest -q -m gpu -p no:cacheprovider --maxfail=30 \
            --deselect tests/gpu/test_shipped_table.py ${GPU_TESTS:-tests} > "$OUT/gpu-tests.txt" 2>&1
        echo "GPU tests: exit $?"; tail -6 "$OUT/gpu-tests.txt" ;;
    tests-sharded)  # the GPU tests in SHARDS (default 12) pytest processes at once, each its
        # own kernel cache (gpu_tests_sharded.py), the shipped-table test left out (its 3,000-odd
        # compiles are the shipped step's); SHARDS_LIMIT seconds for all of them. For a few
        # compile-bound files the tests step is faster: each shard compiles the kernels its
        # tests meet, so shards of one module compile many of the same ones (twins and cursor
        # tests: 54 of 146 in 110 s sharded, against 215 tests of four files in 274 s in one
        # process; H200, 2026-12-03)
        timeout $(( ${SHARDS_LIMIT:-400} + 60 )) python3 benchmarks/gpu_tests_sharded.py \
            --shards ${SHARDS:-12} --limit ${SHARDS_LIMIT:-400} --out "$OUT" \
            --skip tests/gpu/test_shipped_table.py ${GPU_TESTS:-tests} > "$OUT/gpu-tests.txt" 2>&1
        echo "GPU tests, sharded: exit $?"; cat "$OUT/gpu-tests.txt" ;;
    shipped)  # every config of the shipped table (slow on a fresh machine: it compiles them)
        timeout 400 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_shipped_table.py \
            > "$OUT/gpu-shipped.txt" 2>&1
        echo "shipped table: exit $?"; tail -3 "$OUT/gpu-shipped.txt" ;;
    device)  # bench_device (every array kind, auto mode); DEVICE_LIMIT seconds: at 240 it
        # stopped in float64's batched matmuls on a fresh machine (2026-11-29 00:56 UTC)
        timeout ${DEVICE_LIMIT:-300} python3 benchmarks/bench_device.py --out "$OUT" --plot \
            > "$OUT/bench_device.txt" 2>&1
        echo "bench_device: exit $?"; tail -24 "$OUT/bench_device.txt" ;;
    precision)
        timeout 200 python3 benchmarks/bench_tf32.py --out "$OUT" > "$OUT/bench_tf32.txt" 2>&1
        echo "bench_tf32: exit $?"; tail -30 "$OUT/bench_tf32.txt" ;;
    host)
        timeout 150 python3 benchmarks/bench_host.py --skip-small --out "$OUT" > "$OUT/bench_host.txt" 2>&1
        echo "bench_host: exit $?"; tail -30 "$OUT/bench_host.txt" ;;
    tuning)
        timeout 240 python3 benchmarks/bench_tuning.py --out "$OUT" > "$OUT/bench_tuning.txt" 2>&1
        grep -v heatmap "$OUT/bench_tuning.txt" ;;
    sanitize)  # SANITIZE_TOOLS (default all three), SANITIZE_LIMIT seconds: on a fresh H200
        # (2026-11-29 18:02 UTC) the compiles alone took 297 s of the 480, and every tool
        # over every config did not fit in one call
        timeout ${SANITIZE_LIMIT:-480} python3 benchmarks/sanitize.py ${SANITIZE_TOOLS:+--tools $SANITIZE_TOOLS} \
            ${SANITIZE_CONFIGS:+--max-configs $SANITIZE_CONFIGS} > "$OUT/sanitize.txt" 2>&1
        echo "sanitize: exit $?"; tail -12 "$OUT/sanitize.txt" ;;
    fuzz)
        timeout ${FUZZ_LIMIT:-300} python3 benchmarks/fuzz.py --calls ${FUZZ_CALLS:-10000} --backend gpu --out "$OUT" \
            ${FUZZ_ROUTINE:+--routine $FUZZ_ROUTINE} > "$OUT/fuzz.txt" 2>&1
        echo "fuzz: exit $?"; tail -8 "$OUT/fuzz.txt"
        # (one routine's run kept apart from the next's: fuzz.py names its file by backend)
        if [ -n "${FUZZ_ROUTINE:-}" ]; then
            mv "$OUT/fuzz.txt" "$OUT/fuzz-$FUZZ_ROUTINE.txt"
            mv "$OUT/fuzz-gpu.json" "$OUT/fuzz-gpu-$FUZZ_ROUTINE.json"
        fi ;;
    faults)  # the fault tests, 20 runs in a row (issue 14's floor); stops at the first failure
        for i in $(seq 1 20); do
            timeout 60 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_faults.py \
                > "$OUT/faults-$i.txt" 2>&1 || { echo "faults: run $i failed"; tail -5 "$OUT/faults-$i.txt"; break; }
            echo "faults run $i: $(tail -1 "$OUT/faults-$i.txt")"
        done ;;
    ozaki)
        timeout 150 python3 benchmarks/bench_ozaki.py --out "$OUT" > "$OUT/bench_ozaki.txt" 2>&1
        echo "bench_ozaki: exit $?"; tail -30 "$OUT/bench_ozaki.txt" ;;
    precision3)  # the public-call precision benchmark (bench_precision.py, quick shapes)
        timeout 150 python3 benchmarks/bench_precision.py --quick --out "$OUT" --plot \
            > "$OUT/bench_precision.txt" 2>&1
        echo "bench_precision: exit $?"; tail -40 "$OUT/bench_precision.txt" ;;
    small)  # the small host forms on this machine's CPU (one BLAS thread, as NumPy's peers)
        OPENBLAS_NUM_THREADS=1 timeout 90 python3 benchmarks/bench_host.py --small-only \
            --out "$OUT" > "$OUT/bench_host_small.txt" 2>&1
        echo "bench_host small: exit $?"; tail -24 "$OUT/bench_host_small.txt" ;;
    wgmma)  # the tf32_wgmma family: its GPU test, then its benchmark against mma.sync and cuBLAS
        timeout ${WGMMA_LIMIT:-150} python3 -m pytest -q -x -p no:cacheprovider tests/gpu/test_tf32_wgmma_gpu.py \
            > "$OUT/gpu-wgmma.txt" 2>&1
        echo "wgmma tests: exit $?"; tail -15 "$OUT/gpu-wgmma.txt"
        timeout 120 python3 benchmarks/bench_tf32_wgmma.py --out "$OUT" > "$OUT/bench_tf32_wgmma.txt" 2>&1
        echo "bench_tf32_wgmma: exit $?"; tail -30 "$OUT/bench_tf32_wgmma.txt" ;;
    newresult)  # where a new device result's time goes at 512^3 and 256^3 (issue 13)
        for dtype in float32 float64; do for n in 512 256; do
            timeout 120 python3 benchmarks/profile_new_result.py --size $n --dtype $dtype \
                > "$OUT/profile_new_result-$dtype-$n.txt" 2>&1
            echo "profile_new_result $dtype $n: exit $?"
            grep -v "^ \|List reduced\|cProfile" "$OUT/profile_new_result-$dtype-$n.txt"
        done; done ;;
    graphs)  # graph replay of cuBLASLt calls: its GPU test and probe_graph_launch (then name
        # newresult-torch for what a public call costs)
        timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_graph_replay_gpu.py \
            > "$OUT/gpu-graphs.txt" 2>&1
        echo "graph replay tests: exit $?"; tail -4 "$OUT/gpu-graphs.txt"
        timeout 120 python3 benchmarks/probe_graph_launch.py > "$OUT/probe_graph_launch.txt" 2>&1
        echo "probe_graph_launch: exit $?"; cat "$OUT/probe_graph_launch.txt" ;;
    newresult-torch)  # the same on torch tensors, float64 (issue 13's short rows)
        for n in 512 256; do
            timeout 90 python3 benchmarks/profile_new_result.py --lib torch --size $n \
                --dtype float64 > "$OUT/profile_new_result-torch-float64-$n.txt" 2>&1
            echo "profile_new_result torch float64 $n: exit $?"
            grep -v "^ \|List reduced\|cProfile" "$OUT/profile_new_result-torch-float64-$n.txt"
        done
        timeout 120 python3 benchmarks/profile_torch_alloc.py > "$OUT/profile_torch_alloc.txt" 2>&1
        echo "profile_torch_alloc: exit $?"; cat "$OUT/profile_torch_alloc.txt" ;;
    batched)  # issue 13's batched matmul forms (autotuning over cuBLASLt's batched algorithms)
        timeout 200 python3 benchmarks/bench_device.py --out "$OUT" --forms matmul \
            --libs cupy,torch --name bench_device-batched \
            --shapes 64x512x512x512,8x2048x2048x2048,256x128x128x128,16x1024x64x1024 \
            > "$OUT/bench_device-batched.txt" 2>&1
        echo "bench_device batched: exit $?"; tail -30 "$OUT/bench_device-batched.txt" ;;
    multigpu)  # issue 20: every GPU this machine has
        (cd /tmp && nvidia-smi topo -m > "$OUT/topology.txt" 2>&1; python3 -m tunedgemm info > "$OUT/info.txt" 2>&1)
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${MULTIGPU_TESTS_LIMIT:-120} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_multigpu.py tests/gpu/test_dask_gpu.py \
            tests/gpu/test_host_pipeline.py -k "not test_host_pipeline or segments or tiled_pipeline" \
            > "$OUT/gpu-multigpu-tests.txt" 2>&1
        echo "multi-GPU tests: exit $?"; tail -6 "$OUT/gpu-multigpu-tests.txt"
        # Dask first, then host products, each with its own limit and folder (a hang in one
        # costs that part only).
        timeout ${MULTIGPU_DASK_LIMIT:-250} python3 benchmarks/bench_multigpu.py --skip host \
            --out "$OUT/dask" > "$OUT/bench_multigpu-dask.txt" 2>&1
        echo "bench_multigpu dask: exit $?"; grep -v "distributed\." "$OUT/bench_multigpu-dask.txt" | tail -20
        timeout ${MULTIGPU_HOST_LIMIT:-220} python3 benchmarks/bench_multigpu.py --skip dask \
            --dtypes ${MULTIGPU_HOST_DTYPES:-float32 float64} \
            ${MULTIGPU_PANELS:+--panels-per-gpu $MULTIGPU_PANELS} \
            --out "$OUT/host" > "$OUT/bench_multigpu-host.txt" 2>&1
        echo "bench_multigpu host: exit $?"; tail -16 "$OUT/bench_multigpu-host.txt" ;;
    multigpu-host)  # host products only, on 1..N GPUs (MULTIGPU_HOST_DTYPES, default both)
        timeout ${MULTIGPU_HOST_LIMIT:-300} python3 benchmarks/bench_multigpu.py --skip dask \
            --dtypes ${MULTIGPU_HOST_DTYPES:-float32 float64} --out "$OUT/host" \
            ${MULTIGPU_PANELS:+--panels-per-gpu $MULTIGPU_PANELS} \
            > "$OUT/bench_multigpu-host.txt" 2>&1
        echo "bench_multigpu host: exit $?"; tail -16 "$OUT/bench_multigpu-host.txt" ;;
    multigpu-profile)  # per GPU: first product, busy and idle time, staging rate (1 and 2 GPUs)
        for devices in ${MULTIGPU_PROFILE_DEVICES:-0 0,1}; do
            for n in ${MULTIGPU_PROFILE_SIZES:-16384}; do
                TUNEDGEMM_DEVICES=$devices timeout 120 python3 benchmarks/profile_multigpu_host.py \
                    --n $n --out "$OUT/profile" 2>&1 | tail -16
            done
        done ;;
    multigpu-ab)  # pipeline settings compared (MULTIGPU_AB: BENCH_PIPELINE values; default
        # EARLY_PRODUCTS off and on): the GPU tests of the multi-GPU host path
        # (MULTIGPU_AB_TESTS=0: none), then for each setting the profile at 16384^2 and host
        # float32 at 16384^2 on 1 and 2 GPUs (MULTIGPU_AB_SIZES: other sizes)
        if [ "${MULTIGPU_AB_TESTS:-1}" = 1 ]; then
            timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_multigpu.py \
                > "$OUT/gpu-multigpu-ab-tests.txt" 2>&1
            echo "multi-GPU host tests: exit $?"; tail -4 "$OUT/gpu-multigpu-ab-tests.txt"
        fi
        for knobs in ${MULTIGPU_AB:-EARLY_PRODUCTS=0 EARLY_PRODUCTS=1}; do
            name=$(echo "$knobs" | tr ',=' '-_')
            BENCH_PIPELINE=$knobs TUNEDGEMM_DEVICES=0,1 timeout 90 python3 \
                benchmarks/profile_multigpu_host.py --n 16384 --out "$OUT/profile" 2>&1 \
                | grep -v Warning | tail -14
            BENCH_PIPELINE=$knobs timeout ${MULTIGPU_HOST_LIMIT:-200} python3 \
                benchmarks/bench_multigpu.py --skip dask --gpus 2 --dtypes float32 \
                --sizes ${MULTIGPU_AB_SIZES:-16384} --out "$OUT/host-$name" \
                > "$OUT/bench_multigpu-host-$name.txt" 2>&1
            echo "bench_multigpu host, $knobs: exit $?"
            grep -A6 "^dtype" "$OUT/bench_multigpu-host-$name.txt"
        done ;;
    unverified)  # what was written with no GPU to run on (2026-11-25): stream-K, the staged
        # dmma epilogue's diagnostics; then stream-K's speed against the default and cuBLAS
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${UNVERIFIED_LIMIT:-240} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_stream_k_gpu.py tests/gpu/test_dmma_epilogue_gpu.py \
            -rxf > "$OUT/gpu-unverified.txt" 2>&1
        echo "unverified GPU tests: exit $?"; grep -E "passed|failed|XFAIL|FAILED" "$OUT/gpu-unverified.txt" | tail -30
        timeout 200 python3 benchmarks/bench_kernels.py --stream-k --out "$OUT" \
            > "$OUT/bench_stream_k.txt" 2>&1
        echo "bench_kernels --stream-k: exit $?"; tail -20 "$OUT/bench_stream_k.txt" ;;
    advance)  # simt ADVANCE (issue 15, item 3; measured 2026-11-26 06:05 UTC): its GPU test
        # (results against float64, bit-equal to ADVANCE=0), then its speed against
        # ADVANCE=0 and cuBLAS on the table's own-kernel configs
        variant_step advance tests/gpu/test_simt_advance_gpu.py 200 200 ;;
    roll)  # simt ROLL_K (issue 15, item 3; written 2026-11-26 without a GPU): the same, its
        # speed against the unrolled loop (ADVANCE 0 and 1); about 4 minutes at most on a
        # fresh machine
        variant_step roll tests/gpu/test_simt_roll_gpu.py 140 100 ;;
    ncu)  # Nsight Compute on one launch of each simt variant (NCU_VARIANTS, labels of
        # bench_kernels --around) and cuBLAS at NCU_SHAPE (default 4096^3): stall reasons per
        # kernel (ncu-simt-raw.csv) and per SASS instruction (ncu-simt-sass-N.csv), issue slots;
        # NCU_DTYPE=float64: the own dmma config a dgemm call runs there and cuBLAS's DGEMM
        # instead (files ncu-dmma*), and that config with each of NCU_DMMA_CHANGES; float32:
        # the table's config with each of NCU_SIMT_CHANGES too; NCU_CALL=1 (float32): the own
        # config an sgemm call runs instead of the variants, at NCU_SHAPE in NCU_TRANS (default
        # NN; several shapes space-separated); NCU_SAMPLING: ncu's --warp-sampling-interval (short
        # kernels give few warp-state samples at its default); NCU_STALLS: the per-instruction
        # stall summary (ncu_sass_mix.py --stalls NCU_STALLS) too
        export PATH=$PATH:/usr/local/cuda/bin
        name=ncu-simt; [ "${NCU_DTYPE:-float32}" = float64 ] && name=ncu-dmma
        # A call's own configs (NCU_CALL, float64) are found first, outside ncu (ncu_simt.py
        # --choices says why).
        choices="--choices $OUT/$name-choices.json"
        [ -n "${NCU_CALL:-}" ] || [ $name = ncu-dmma ] && python3 benchmarks/ncu_simt.py \
            --plan-only $choices --shape ${NCU_SHAPE:-4096x4096x4096} ${NCU_DTYPE:+--dtype $NCU_DTYPE} \
            ${NCU_CALL:+--call} ${NCU_TRANS:+--trans $NCU_TRANS} > "$OUT/$name-plan.txt" 2>&1
        timeout ${NCU_LIMIT:-240} ncu --clock-control none --profile-from-start off \
            ${NCU_SAMPLING:+--warp-sampling-interval $NCU_SAMPLING} \
            --section WarpStateStats --section SchedulerStats --section SourceCounters \
            --section ComputeWorkloadAnalysis --section InstructionStats --section LaunchStats \
            --section Occupancy --section MemoryWorkloadAnalysis --section SpeedOfLight \
            -o "$OUT/$name" python3 benchmarks/ncu_simt.py --shape ${NCU_SHAPE:-4096x4096x4096} \
            ${NCU_VARIANTS:+--variants $NCU_VARIANTS} ${NCU_DTYPE:+--dtype $NCU_DTYPE} \
            ${NCU_DMMA_CHANGES:+--dmma-changes $NCU_DMMA_CHANGES} \
            ${NCU_SIMT_CHANGES:+--simt-changes $NCU_SIMT_CHANGES} \
            ${NCU_CALL:+--call} ${NCU_TRANS:+--trans $NCU_TRANS} $choices > "$OUT/$name-run.txt" 2>&1
        echo "ncu: exit $?"; tail -12 "$OUT/$name-run.txt"
        ncu --import "$OUT/$name.ncu-rep" --page details > "$OUT/$name.txt" 2>&1
        ncu --import "$OUT/$name.ncu-rep" --page raw --csv > "$OUT/$name-raw.csv" 2>&1
        for id in 0 1 2 3 4 5 6 7 8 9 10 11; do
            ncu --import "$OUT/$name.ncu-rep" --page source --csv --print-source sass \
                --launch-skip $id --launch-count 1 > "$OUT/$name-sass-$id.csv" 2>&1
            [ -s "$OUT/$name-sass-$id.csv" ] || rm -f "$OUT/$name-sass-$id.csv"
        done
        # Each kernel's opcode mix and its instructions per warp by how often each ran (the k
        # loop's against the once-a-tile set-up and epilogue).
        python3 benchmarks/ncu_sass_mix.py "$OUT"/$name-sass-*.csv > "$OUT/$name-sass-mix.txt" 2>&1
        tail -8 "$OUT/$name-sass-mix.txt"
        [ -n "${NCU_STALLS:-}" ] && python3 benchmarks/ncu_sass_mix.py --stalls "$NCU_STALLS" \
            "$OUT"/$name-sass-*.csv > "$OUT/$name-stalls.txt" 2>&1
        grep -E "^  [a-zA-Z_0-9]|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Duration|\
L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Cluster Size|Registers Per|\
Block Size|Grid Size|L1/TEX Hit|L2 Hit" "$OUT/$name.txt" | head -90
        python3 - "$OUT/$name-raw.csv" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names, body = rows[head], [r for r in rows[head + 2:] if r]
stalls = [i for i, n in enumerate(names) if "average_warps_issue_stalled" in n and n.endswith("_per_issue_active.ratio")]
for r in body:
    top = sorted(((float(r[i].replace(",", "") or 0), names[i].split("stalled_")[1].split("_per")[0]) for i in stalls), reverse=True)[:9]
    print(r[names.index("Kernel Name")][:24], " ".join(f"{n} {v:.2f}" for v, n in top))
PY
        ;;
    ncu-census)  # what each kernel is at NCU_SHAPES (space-separated; NCU_DTYPE, default
        # float64; NCU_TRANS, default NN): the own config a call runs there (own kernels only) and cuBLAS's, by
        # Nsight Compute's launch statistics alone: name, grid, block, registers, shared
        # memory, time, SM and DRAM throughput (ncu-census.txt)
        export PATH=$PATH:/usr/local/cuda/bin
        timeout ${NCU_LIMIT:-240} ncu -f --clock-control none --profile-from-start off \
            --section LaunchStats --section SpeedOfLight --section Occupancy \
            -o "$OUT/ncu-census" python3 benchmarks/ncu_simt.py --call \
            --dtype ${NCU_DTYPE:-float64} --trans ${NCU_TRANS:-NN} \
            --shape ${NCU_SHAPES:-6904x698x3920} > "$OUT/ncu-census-run.txt" 2>&1
        echo "ncu census: exit $?"; grep -v "^==PROF==" "$OUT/ncu-census-run.txt" | tail -30
        ncu --import "$OUT/ncu-census.ncu-rep" --page raw --csv > "$OUT/ncu-census-raw.csv" 2>&1
        python3 - "$OUT/ncu-census-raw.csv" > "$OUT/ncu-census.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names, units, body = rows[head], rows[head + 1], [r for r in rows[head + 2:] if r]
print("time unit:", units[names.index("gpu__time_duration.sum")] if "gpu__time_duration.sum" in names else "?")
def get(r, *keys):
    for key in keys:
        if key in names:
            return r[names.index(key)]
    return "?"
for r in body:
    print(get(r, "Kernel Name")[:90], "| grid", get(r, "launch__grid_size"),
          "block", get(r, "launch__block_size"), "regs", get(r, "launch__registers_per_thread"),
          "smem", get(r, "launch__shared_mem_per_block"), "waves", get(r, "launch__waves_per_multiprocessor"),
          "| time", get(r, "gpu__time_duration.sum"),
          "sm%", get(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
          "dram%", get(r, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"))
PY
        cat "$OUT/ncu-census.txt" ;;
    around)  # simt EARLY_BARRIER (issue 15, item 3; written 2026-11-26 from ncu's stall
        # samples): its GPU test, then bench_kernels --around (the table's 4096^3 and 8192^3
        # config, its neighbours, each with EARLY_BARRIER 0 and 1)
        variant_step around tests/gpu/test_simt_early_barrier_gpu.py 240 240 ;;
    dmma-tiles)  # cuBLAS's DGEMM tile (128 x 64, 2 blocks per SM) in our dmma kernel against
        # the table's configs at large float64 squares (bench_kernels --dmma)
        timeout ${DMMA_LIMIT:-300} python3 benchmarks/bench_kernels.py --dmma --out "$OUT" \
            > "$OUT/bench_dmma_tiles.txt" 2>&1
        echo "bench_kernels --dmma: exit $?"; tail -8 "$OUT/bench_dmma_tiles.txt" ;;
    dmma-advance)  # dmma ADVANCE (issue 15, item 3: cursors for the k-tile copies): its GPU
        # test, then bench_kernels --dmma-advance
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${DMMA_TEST_LIMIT:-240} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_dmma_advance_gpu.py > "$OUT/gpu-dmma-advance.txt" 2>&1
        echo "dmma ADVANCE tests: exit $?"; tail -4 "$OUT/gpu-dmma-advance.txt"
        timeout ${DMMA_LIMIT:-300} python3 benchmarks/bench_kernels.py --dmma-advance --out "$OUT" \
            > "$OUT/bench_dmma_advance.txt" 2>&1
        echo "bench_kernels --dmma-advance: exit $?"; tail -8 "$OUT/bench_dmma_advance.txt" ;;
    dmma-steady)  # dmma's steady-state loop (STEADY_LOOP: whole k-tiles in a branch-free loop
        # of their own): ADVANCE's GPU test (bit-equal to ADVANCE=0), then bench_kernels
        # --dmma-steady
        variant_step dmma-steady tests/gpu/test_dmma_advance_gpu.py ${DMMA_TEST_LIMIT:-240} \
            ${DMMA_LIMIT:-300} ;;
    simt-steady)  # simt's steady-state loop (STEADY_LOOP): its GPU test (bit-equal to one
        # loop), then bench_kernels --simt-steady
        variant_step simt-steady tests/gpu/test_simt_steady_gpu.py ${SIMT_TEST_LIMIT:-300} \
            ${SIMT_LIMIT:-300} ;;
    simt-loop)  # where the steady loop issues its cp.async copies (COPY_STEP): simt
        # STEADY_LOOP's GPU test (bit-equal across them), then bench_kernels --simt-loop
        variant_step simt-loop tests/gpu/test_simt_steady_gpu.py ${SIMT_TEST_LIMIT:-300} \
            ${SIMT_LIMIT:-300} ;;
    simt-shift)  # simt's edge blocks in the steady loop (SHIFT_EDGE, CLAMP_EDGE): their GPU
        # test (bit-equal with both off), then bench_kernels --simt-shift
        variant_step simt-shift tests/gpu/test_simt_shift_gpu.py ${SIMT_TEST_LIMIT:-300} \
            ${SIMT_LIMIT:-300} ;;
    dmma-shift)  # dmma's edge blocks in the steady loop (SHIFT_EDGE, CLAMP_EDGE): their GPU
        # test (bit-equal with both off), then bench_kernels --dmma-shift
        variant_step dmma-shift tests/gpu/test_dmma_shift_gpu.py ${DMMA_TEST_LIMIT:-300} \
            ${DMMA_LIMIT:-300} ;;
    simt-clamp)  # simt's clamp at C's edge (CLAMP_SPREAD, SHIFT_FIRST): the edge test
        # (bit-equal across the switches), then bench_kernels --simt-clamp
        variant_step simt-clamp tests/gpu/test_simt_shift_gpu.py ${SIMT_TEST_LIMIT:-300} \
            ${SIMT_LIMIT:-300} ;;
    dmma-clamp)  # dmma's clamp at C's edge (CLAMP_SPREAD): the edge test, then
        # bench_kernels --dmma-clamp
        variant_step dmma-clamp tests/gpu/test_dmma_shift_gpu.py ${DMMA_TEST_LIMIT:-300} \
            ${DMMA_LIMIT:-300} ;;
    old-first)  # the epilogues' old values of C loaded first (OLD_FIRST, both families):
        # the GPU tests that read C at beta != 0 in interior tiles (dmma's staged epilogue
        # against the direct one, both families' edge tests), then bench_kernels --old-first
        # (beta 0 and 1); same_bits (now at beta != 0 too) is the step same-bits
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${OLD_TEST_LIMIT:-300} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_dmma_epilogue_gpu.py tests/gpu/test_dmma_shift_gpu.py \
            tests/gpu/test_simt_shift_gpu.py > "$OUT/gpu-old-first.txt" 2>&1
        echo "old-first tests: exit $?"; tail -4 "$OUT/gpu-old-first.txt"
        timeout ${OLD_LIMIT:-300} python3 benchmarks/bench_kernels.py --old-first --out "$OUT" \
            ${BENCH_ROUNDS:+--rounds $BENCH_ROUNDS} > "$OUT/bench_old_first.txt" 2>&1
        echo "bench_kernels --old-first: exit $?"; grep -v "^#" "$OUT/bench_old_first.txt" | tail -40 ;;
    memcheck-edges)  # compute-sanitizer memcheck over the edge tests of MEMCHECK_FAMILIES
        # (default dmma simt), the bases whose ids match MEMCHECK_DMMA / MEMCHECK_SIMT (pytest
        # -k): the clamped copies read only inside the operands. Each selection runs once
        # without the sanitizer first, so that its kernels are compiled (the disk cache) before
        # it: under the sanitizer the simt test's compiles crashed (2026-11-29 09:13 UTC).
        for fam in ${MEMCHECK_FAMILIES:-dmma simt}; do
            if [ $fam = dmma ]; then sel=${MEMCHECK_DMMA:-narrow or 64x64 or split4}
            else sel=${MEMCHECK_SIMT:-64_x_128 or 4_stages or split-K_3}; fi
            for tool in "" "/usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9"; do
                TUNEDGEMM_TEST_PRECOMPILE=0 PYTHONFAULTHANDLER=1 timeout ${MEMCHECK_LIMIT:-200} \
                    $tool python3 -m pytest -q -m gpu -p no:cacheprovider \
                    tests/gpu/test_${fam}_shift_gpu.py -k "$sel" > "$OUT/memcheck-$fam-edges.txt" 2>&1
                echo "${tool:+memcheck }$fam edges: exit $?"; grep -E "ERROR SUMMARY|passed|failed" \
                    "$OUT/memcheck-$fam-edges.txt" | tail -3
            done
        done ;;
    reads-c)  # autotuning at beta != 0 (GemmKey.reads_c, 2026-11-29): the GPU tests of calls
        # that read C, then probe_reads_c.py (READS_C_SEED; cuBLAS a candidate): each random
        # shape's beta-0 and beta-1 plans, both timed at beta 1 where they differ
        timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -k "read_c or tiled_pipeline or out_of_core" \
            tests/gpu/test_plans_gpu.py tests/gpu/test_host_pipeline.py > "$OUT/gpu-tests-reads-c.txt" 2>&1
        echo "GPU tests (reads C): exit $?"; tail -3 "$OUT/gpu-tests-reads-c.txt"
        timeout ${READS_C_LIMIT:-300} python3 benchmarks/probe_reads_c.py ${READS_C_SEED:+--seed $READS_C_SEED} \
            --out "$OUT" > "$OUT/probe_reads_c.txt" 2>&1
        echo "probe_reads_c: exit $?"; cat "$OUT/probe_reads_c.txt" ;;
    host-ties)  # autotune.HOST_TIES (2026-11-29): its GPU test and those of calls that read C,
        # then probe_host_ties.py (HOST_TIES_PASSES, default 3; HOST_TIES_OWN=1: own kernels
        # only): picks and the public call's times at launch-bound shapes, before and after
        timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -k "host_bound or read_c" \
            tests/gpu/test_plans_gpu.py > "$OUT/gpu-tests-host-ties.txt" 2>&1
        echo "GPU tests (host ties): exit $?"; tail -3 "$OUT/gpu-tests-host-ties.txt"
        timeout ${HOST_TIES_LIMIT:-300} python3 benchmarks/probe_host_ties.py \
            --passes ${HOST_TIES_PASSES:-3} ${HOST_TIES_OWN:+--own-only} --out "$OUT" \
            > "$OUT/probe_host_ties.txt" 2>&1
        echo "probe_host_ties: exit $?"; cat "$OUT/probe_host_ties.txt" ;;
    medium-tiles)  # dmma's medium tiles (2026-11-29: three blocks an SM, timed by autotuning at
        # skinny and medium shapes): their GPU test, then probe_medium_tiles.py (own kernels
        # only, then auto; MEDIUM_PASSES, default 2) through the public dgemm call
        timeout ${MEDIUM_TESTS_LIMIT:-200} python3 -m pytest -q -m gpu -p no:cacheprovider \
            tests/gpu/test_dmma_medium_tiles_gpu.py > "$OUT/gpu-tests-medium-tiles.txt" 2>&1
        echo "GPU tests (medium tiles): exit $?"; tail -3 "$OUT/gpu-tests-medium-tiles.txt"
        for mode in own auto; do
            timeout ${MEDIUM_LIMIT:-200} python3 benchmarks/probe_medium_tiles.py \
                --passes ${MEDIUM_PASSES:-2} $([ $mode = own ] && echo --own-only) \
                ${MEDIUM_SHAPES:+--shapes $MEDIUM_SHAPES} --out "$OUT" \
                > "$OUT/probe_medium_tiles-$mode.txt" 2>&1
            echo "probe_medium_tiles ($mode): exit $?"; cat "$OUT/probe_medium_tiles-$mode.txt"
        done ;;
    ring-pad)  # dmma's unpadded ring (RING_PAD=0, 2026-12-01), in RING_PARTS (default all of
        # "tests nn tn ncu"): its GPU tests (bit-equal to the padded ring; the medium tiles,
        # which run it), probe_ring_pad.py at the launch level at RING_SHAPES (default its
        # own) in NN and at RING_TN_SHAPES in TN, then Nsight Compute's shared-memory
        # wavefronts and bank conflicts of the call's pick at RING_NCU_SHAPE, unpadded and not;
        # part "sanitize" (asked for by name) runs compute-sanitizer over the GPU test
        parts=" ${RING_PARTS:-tests nn tn ncu} "
        if [[ $parts == *" tests "* ]]; then
            timeout ${RING_TESTS_LIMIT:-300} python3 -m pytest -q -m gpu -p no:cacheprovider \
                tests/gpu/test_dmma_ring_pad_gpu.py tests/gpu/test_dmma_medium_tiles_gpu.py \
                > "$OUT/gpu-tests-ring-pad.txt" 2>&1
            echo "GPU tests (ring pad): exit $?"; tail -3 "$OUT/gpu-tests-ring-pad.txt"
        fi
        if [[ $parts == *" nn "* ]]; then
            timeout ${RING_LIMIT:-240} python3 benchmarks/probe_ring_pad.py \
                ${RING_SHAPES:+--shapes $RING_SHAPES} --out "$OUT" > "$OUT/probe_ring_pad.txt" 2>&1
            echo "probe_ring_pad: exit $?"; cat "$OUT/probe_ring_pad.txt"
        fi
        if [[ $parts == *" tn "* ]]; then
            mkdir -p "$OUT/tn"
            timeout ${RING_LIMIT:-240} python3 benchmarks/probe_ring_pad.py --trans TN \
                --shapes ${RING_TN_SHAPES:-1952x307x6314,6904x698x3920} --out "$OUT/tn" \
                > "$OUT/probe_ring_pad-tn.txt" 2>&1
            echo "probe_ring_pad TN: exit $?"; cat "$OUT/probe_ring_pad-tn.txt"
        fi
        if [[ $parts == *" sanitize "* ]]; then   # (not in the default parts)
            # memcheck over the ring test's bases matching RING_MEMCHECK_K, and racecheck over
            # RING_RACECHECK_K where set (it crashed at start-up on 2026-12-01); each selection
            # runs once plain first, so that its kernels are compiled. pytest runs with
            # os.cpu_count() at 2, which sizes the test's parallel precompile: with 16 compile
            # threads the sanitizer crashed (SIGSEGV) before the first test (2026-12-01 23:50).
            for check in "memcheck:${RING_MEMCHECK_K:-medium or small-k}" \
                         ${RING_RACECHECK_K:+"racecheck:$RING_RACECHECK_K"}; do
                tool=${check%%:*} sel=${check#*:}
                for run in "" "/usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 9"; do
                    TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${RING_SANITIZE_LIMIT:-200} $run python3 -c \
                        "import os, sys, pytest; os.cpu_count = lambda: 2; sys.exit(pytest.main(
                        ['-q', '-m', 'gpu', '-p', 'no:cacheprovider', '-k', sys.argv[1],
                         'tests/gpu/test_dmma_ring_pad_gpu.py']))" "$sel" \
                        > "$OUT/ring-pad-$tool.txt" 2>&1
                    echo "${run:+$tool }ring pad ($sel): exit $?"
                    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" "$OUT/ring-pad-$tool.txt" | tail -3
                done
            done
        fi
        [[ $parts == *" ncu "* ]] || continue
        export PATH=$PATH:/usr/local/cuda/bin
        timeout ${NCU_LIMIT:-180} ncu --clock-control none --profile-from-start off \
            --section LaunchStats --section MemoryWorkloadAnalysis_Tables \
            -o "$OUT/ncu-ring-pad" python3 benchmarks/ncu_simt.py --dtype float64 \
            --shape ${RING_NCU_SHAPE:-6904x698x3920} --dmma-changes RING_PAD=1 RING_PAD=0 \
            RING_PAD=0,STAGES=4 > "$OUT/ncu-ring-pad-run.txt" 2>&1
        echo "ncu ring pad: exit $?"; grep -v "^==PROF==" "$OUT/ncu-ring-pad-run.txt" | tail -8
        ncu --import "$OUT/ncu-ring-pad.ncu-rep" --page raw --csv > "$OUT/ncu-ring-pad-raw.csv" 2>&1
        python3 - "$OUT/ncu-ring-pad-raw.csv" <<'PY' | tee "$OUT/ncu-ring-pad.txt"
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names, body = rows[head], [r for r in rows[head + 2:] if r]
keep = [i for i, name in enumerate(names) if re.search(
    r"bank_conflicts|wavefronts_mem_shared|sass_inst_executed_op_shared|gpu__time_duration.sum"
    r"|registers_per_thread|shared_mem_per_block_dynamic|occupancy_limit_shared", name)]
for r in body:
    print(r[names.index("Kernel Name")][:60])
    for i in keep:
        print(f"    {names[i]}: {r[i]}")
PY
        ;;
    ring-public)  # the unpadded ring through the public dgemm call (probe_ring_pad.py --public:
        # before, the medium tiles padded and no unpadded twin), own kernels only, then auto;
        # RING_PASSES (default 2), RING_PUBLIC_SHAPES (default its own), RING_PUBLIC_TRANS
        # (default NN), RING_PUBLIC_MODES (default "own auto"), RING_PUBLIC_LIMIT
        for mode in ${RING_PUBLIC_MODES:-own auto}; do
            timeout ${RING_PUBLIC_LIMIT:-240} python3 benchmarks/probe_ring_pad.py --public \
                --passes ${RING_PASSES:-2} $([ $mode = own ] && echo --own-only) \
                --trans ${RING_PUBLIC_TRANS:-NN} \
                ${RING_PUBLIC_SHAPES:+--shapes $RING_PUBLIC_SHAPES} --out "$OUT" \
                > "$OUT/probe_ring_pad-$mode.txt" 2>&1
            echo "probe_ring_pad --public ($mode): exit $?"; cat "$OUT/probe_ring_pad-$mode.txt"
        done ;;
    same-bits)  # same_bits.py: the shipped configs of SAME_BITS_FAMILY (default dmma) give the
        # bits they gave at the commit whose kernels/ lies in .device/base-kernels/kernels (the
        # device machine has no git history), SAME_BITS_LIMIT configs (default 24)
        timeout ${SAME_BITS_TIME:-300} python3 benchmarks/same_bits.py ${SAME_BITS_FAMILY:-dmma} \
            --base-dir .device/base-kernels/kernels --limit ${SAME_BITS_LIMIT:-24} --out "$OUT" \
            > "$OUT/same_bits.txt" 2>&1
        echo "same_bits: exit $?"; tail -6 "$OUT/same_bits.txt" ;;
    dmma-large)  # dmma with ADVANCE=1 and neighbours at 8192^3 and 4096^3 (bench_kernels --dmma-large)
        timeout ${DMMA_LIMIT:-300} python3 benchmarks/bench_kernels.py --dmma-large --out "$OUT" \
            > "$OUT/bench_dmma_large.txt" 2>&1
        echo "bench_kernels --dmma-large: exit $?"; tail -6 "$OUT/bench_dmma_large.txt" ;;
    dmma-tail)  # dmma stream-K against the last wave of tiles at the DGEMM squares (issue 15's
        # 0.95 at 8192^3; bench_kernels --dmma-tail)
        timeout ${TAIL_LIMIT:-240} python3 benchmarks/bench_kernels.py --dmma-tail --out "$OUT" \
            > "$OUT/bench_dmma_tail.txt" 2>&1
        echo "bench_kernels --dmma-tail: exit $?"; cat "$OUT/bench_dmma_tail.txt" ;;
    wave-split)  # the DGEMM squares' last wave as its own split-K launch on a second stream
        # beside the rest of C (probe_wave_split.py; issue 15's 0.95 at 8192^3)
        timeout ${WAVE_LIMIT:-200} python3 benchmarks/probe_wave_split.py --out "$OUT" \
            > "$OUT/probe_wave_split.txt" 2>&1
        echo "probe_wave_split: exit $?"; cat "$OUT/probe_wave_split.txt" ;;
    dgemm-probe)  # issue 15's DGEMM squares: what autotuning times and keeps, 3 passes a
        # shape, each pick against cuBLAS, with nvidia-smi's clocks (probe_dgemm_squares.py)
        TUNEDGEMM_CUBLAS=0 timeout ${DGEMM_PROBE_LIMIT:-300} python3 benchmarks/probe_dgemm_squares.py \
            --out "$OUT" > "$OUT/probe_dgemm_squares.txt" 2>&1
        echo "probe_dgemm_squares: exit $?"; cat "$OUT/probe_dgemm_squares.txt" ;;
    order)  # simt FMA_ORDER (issue 15, item 3; written 2026-11-26 from ncu's dispatch stalls on
        # FFMAs): its GPU test, then bench_kernels --fma-order (the table's configs, each order)
        variant_step fma-order tests/gpu/test_simt_fma_order_gpu.py 300 240 ;;
    reg-transpose)  # simt REG_TRANSPOSE (issue 15, item 4; written 2026-11-27: TN's operands
        # through registers, as TN's layout twin): the twins' GPU test, then bench_kernels
        # --reg-transpose (the table's TN configs, their loop twins and TN twins)
        variant_step reg-transpose tests/gpu/test_twins_gpu.py 300 240 ;;
    squares)  # issue 15's square floors through the public call: sgemm/dgemm on GPUArrays, new
        # result and into c, own kernels only (TUNEDGEMM_CUBLAS=0; autotuning times the
        # table's candidates and their twins), against cuBLAS into c, at 4096^3 and 8192^3
        TUNEDGEMM_CUBLAS=0 timeout ${SQUARES_LIMIT:-300} python3 benchmarks/bench_device.py \
            --libs pycuda --forms gemm --shapes 4096x4096x4096,8192x8192x8192 --out "$OUT" \
            --name bench_device-own-squares > "$OUT/bench_device-own-squares.txt" 2>&1
        echo "bench_device own squares: exit $?"; tail -12 "$OUT/bench_device-own-squares.txt" ;;
    memory)  # issue 15's memory-bound shapes (item 2): the public call's GB/s, own kernels only
        # and with cuBLAS a candidate, against cuBLAS's and a device copy's
        # (bench_memory_bound.py; MEMORY_TRANS: transpose pairs, default NN; MEMORY_SHAPES;
        # MEMORY_ARGS more arguments, MEMORY_NAME the files' stem)
        name=${MEMORY_NAME:-bench_memory_bound}
        timeout ${MEMORY_LIMIT:-300} python3 benchmarks/bench_memory_bound.py --plot --out "$OUT" \
            --trans ${MEMORY_TRANS:-NN} ${MEMORY_SHAPES:+--shapes $MEMORY_SHAPES} --name "$name" \
            ${MEMORY_ARGS:-} > "$OUT/$name.txt" 2>&1
        echo "bench_memory_bound: exit $?"; cat "$OUT/$name.txt" ;;
    gemv-probe)  # the panel configs autotuning times at GEMV_SHAPES in GEMV_TRANS, each alone
        # against cuBLAS (probe_gemv.py); GEMV_NCU=1: then one launch of each under Nsight
        # Compute (ncu-gemv.txt: throughputs, L2 and shared-memory traffic, occupancy)
        export PATH=$PATH:/usr/local/cuda/bin
        gemv_args="${GEMV_SHAPES:+--shapes $GEMV_SHAPES} --trans ${GEMV_TRANS:-NN,TN}"
        timeout ${GEMV_LIMIT:-150} python3 benchmarks/probe_gemv.py $gemv_args \
            --json "$OUT/probe_gemv.json" > "$OUT/probe_gemv.txt" 2>&1
        echo "probe_gemv: exit $?"; cat "$OUT/probe_gemv.txt"
        if [ -n "${GEMV_NCU:-}" ]; then
            timeout ${NCU_LIMIT:-200} ncu -f --clock-control none --profile-from-start off \
                --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
                --section LaunchStats --section WarpStateStats -o "$OUT/ncu-gemv" \
                python3 benchmarks/probe_gemv.py $gemv_args --profile > "$OUT/ncu-gemv-run.txt" 2>&1
            echo "ncu: exit $?"; tail -4 "$OUT/ncu-gemv-run.txt"
            ncu --import "$OUT/ncu-gemv.ncu-rep" --page details > "$OUT/ncu-gemv.txt" 2>&1
            grep -E "^  [a-zA-Z_0-9]|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache \
Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size|Block Size|Warp Cycles \
Per Issued|Shared Memory Configuration|Theoretical Occupancy|Mem Busy|Max Bandwidth|L2 Hit" \
                "$OUT/ncu-gemv.txt" | head -200
        fi ;;
    staged)  # kernels/gemm_gemv_staged.cu's first GPU run (gemv_like.STAGED_ENABLED waits on
        # it): its GPU tests beside gemm_gemv.cu's, the plans' and device arrays' (raw_plan's
        # dynamic shared memory), then gemv-probe at the along-k 16- to 4-wide shapes, with
        # Nsight Compute (STAGED_NCU= empty: without); STAGED_SHAPES in place of those shapes
        gpu_test_files staged 200 tests/gpu/test_gemv_like_gpu.py
        gpu_test_files plans 150 tests/gpu/test_plans_gpu.py tests/gpu/test_device_arrays.py
        GEMV_SHAPES=${STAGED_SHAPES:-16x8192x8192,8x8192x8192,4x8192x8192,8192x16x8192} \
            GEMV_TRANS=NN,TN GEMV_LIMIT=150 GEMV_NCU=${STAGED_NCU-1} bash "$0" gemv-probe ;;
    dgemm-layout)  # the DGEMM squares by operand layout (probe_dgemm_layout.py): the public
        # call, its plan's config and neighbours at TT (bench_device's C-order operands) and
        # NN, against cuBLAS, with nvidia-smi's clocks over long runs; LAYOUT_SHAPES, LAYOUT_LIMIT
        TUNEDGEMM_CUBLAS=0 timeout ${LAYOUT_LIMIT:-420} python3 benchmarks/probe_dgemm_layout.py \
            ${LAYOUT_SHAPES:+--shapes $LAYOUT_SHAPES} --out "$OUT" > "$OUT/probe_dgemm_layout.txt" 2>&1
        echo "probe_dgemm_layout: exit $?"; cat "$OUT/probe_dgemm_layout.txt" ;;
    retune)  # regenerate the shipped table's IEEE entries (issue 15, item 5): the tuner on
        # RETUNE_SHAPES for RETUNE_DTYPES x RETUNE_TRANS, RETUNE_MAX_EVALS sampled configs a shape
        # plus the seeds (what autotuning times there under the installed table), merged into a
        # copy of the shipped table ($OUT/tuned.json) within RETUNE_MINUTES; resumes from
        # retune/ckpt.jsonl if the tree holds one (a previous call's $OUT/retune-ckpt.jsonl);
        # RETUNE_INSTALL=1 installs the result for the steps after it
        [ -f retune/ckpt.jsonl ] && cp retune/ckpt.jsonl "$OUT/retune-ckpt.jsonl"
        cp tunedgemm/tables/tuned.json "$OUT/tuned.json"
        timeout $(( ${RETUNE_MINUTES:-8} * 60 + ${RETUNE_SLACK_S:-60} )) python3 -m tunedgemm.tune \
            --dtype ${RETUNE_DTYPES:-float32 float64} --trans ${RETUNE_TRANS:-NN} \
            --shapes ${RETUNE_SHAPES:-default+benchmark+mid} --max-evals ${RETUNE_MAX_EVALS:-8} \
            --time-budget ${RETUNE_MINUTES:-8} --checkpoint "$OUT/retune-ckpt.jsonl" \
            --out "$OUT/tuned.json" > "$OUT/retune.txt" 2>&1
        echo "retune: exit $?"; tail -5 "$OUT/retune.txt"
        install_table ;;
    retune-rounds)  # the retune step on the entries where autotuning now times whole-round
        # k-splits (benchmarks/round_split_entries.py, ROUNDS_DTYPES: default both), through
        # a TUNEDGEMM_LOG_SHAPES file; resumes from retune/ckpt.jsonl as retune does
        python3 benchmarks/round_split_entries.py --dtypes ${ROUNDS_DTYPES:-float32 float64} \
            --out "$OUT/round-split-shapes.jsonl" > "$OUT/round-split-entries.txt" 2>&1
        cat "$OUT/round-split-entries.txt"
        retune_log "$OUT/round-split-shapes.jsonl" ;;
    retune-near)  # the retune step on the entries that cuBLAS holds with the best own time
        # under NEAR_RATIO (default 1.10) times cuBLAS's (round_split_entries.py --near;
        # NEAR_DTYPES, default both), where a change of autotuning's candidates (the raster
        # twins) may turn a near tie; resumes from retune/ckpt.jsonl as retune does
        python3 benchmarks/round_split_entries.py --dtypes ${NEAR_DTYPES:-float32 float64} \
            --near ${NEAR_RATIO:-1.10} --out "$OUT/near-shapes.jsonl" > "$OUT/near-entries.txt" 2>&1
        cat "$OUT/near-entries.txt"
        retune_log "$OUT/near-shapes.jsonl" ;;
    retune-medium)  # the retune step on the entries that cuBLAS holds where autotuning now
        # times the medium tiles (round_split_entries.py --medium; MEDIUM_DTYPES, default
        # float64), then how many an own config took on this GPU (its table section, which the
        # tuner wrote; none if the shipped table has one for it), and how many a medium tile
        python3 benchmarks/round_split_entries.py --dtypes ${MEDIUM_DTYPES:-float64} --medium \
            --out "$OUT/medium-shapes.jsonl" > "$OUT/medium-entries.txt" 2>&1
        cat "$OUT/medium-entries.txt"
        retune_log "$OUT/medium-shapes.jsonl"
        three_block_census "medium tile" ;;
    retune-round-tiles)  # the retune step on the entries that cuBLAS holds where autotuning times
        # the round tiles (round_split_entries.py --round-tiles; ROUND_TILES_DTYPES, default
        # float32: since 2026-12-02 simt's 128 x 64 is at three blocks an SM, its splits at one to
        # three rounds, and timed where the first candidate splits long k; ROUND_TILES_PAIRS:
        # the transpose pairs, default all four), then how many an
        # own config took on this GPU and how many that 128 x 64 tile
        python3 benchmarks/round_split_entries.py --dtypes ${ROUND_TILES_DTYPES:-float32} \
            --round-tiles ${ROUND_TILES_PAIRS:+--pairs $ROUND_TILES_PAIRS} \
            --out "$OUT/round-tile-shapes.jsonl" > "$OUT/round-tile-entries.txt" 2>&1
        cat "$OUT/round-tile-entries.txt"
        retune_log "$OUT/round-tile-shapes.jsonl"
        three_block_census "three-block tile" ;;
    retune-wide-splits)  # the retune step on the entries, whoever holds them, where
        # autotuning's wave-filling splits go above 64 slices (plans.MAX_SPLIT_K 64 -> 128,
        # 2026-11-28; round_split_entries.py --split-above 64)
        python3 benchmarks/round_split_entries.py --split-above 64 \
            --out "$OUT/wide-split-shapes.jsonl" > "$OUT/wide-split-entries.txt" 2>&1
        cat "$OUT/wide-split-entries.txt"
        retune_log "$OUT/wide-split-shapes.jsonl" ;;
    retune-shapes)  # the retune step on the entries of RETUNE_LOG (a TUNEDGEMM_LOG_SHAPES
        # file in the tree, as round_split_entries.py writes)
        retune_log "$RETUNE_LOG" ;;
    retune-small)  # the retune step on the table's launch-bound entries (cuBLAS under
        # SMALL_BELOW ms, default 0.02; benchmarks/small_entries.py): NN's, then NT/TN/TT's,
        # both dtypes, each installed for what follows (retune-nn.txt, retune.txt; the
        # checkpoint holds both)
        nn=$(python3 benchmarks/small_entries.py --pairs NN --below ${SMALL_BELOW:-0.02})
        other=$(python3 benchmarks/small_entries.py --pairs NT TN TT --below ${SMALL_BELOW:-0.02})
        RETUNE_TRANS=NN RETUNE_SHAPES=$nn RETUNE_MINUTES=${RETUNE_MINUTES:-3} RETUNE_INSTALL=1 \
            bash "$0" retune
        mv "$OUT/retune.txt" "$OUT/retune-nn.txt"
        RETUNE_TRANS="NT TN TT" RETUNE_SHAPES=$other RETUNE_MINUTES=${RETUNE_MINUTES:-3} \
            RETUNE_INSTALL=1 bash "$0" retune ;;
    random)  # issue 15's random-shape floors: bench_tuning on 24 fresh log-uniform shapes in
        # [32, 16384], own kernels and with cuBLAS as a candidate, no heatmap (RANDOM_TRANS:
        # the transpose pair, default NN; RANDOM_UNPADDED=1: leading dimensions as given,
        # which runs the unaligned kernels at odd sizes, as device arrays of odd rows do;
        # RANDOM_BETA: beta of every call, default 0; the file is then bench_tuning-betaB.txt)
        # RANDOM_TAG=T: bench_tuning-T.json and .txt, so that runs at several pairs in one call
        # keep their files (2026-12-04: TN's overwrote NN's)
        timeout ${RANDOM_LIMIT:-420} python3 benchmarks/bench_tuning.py --no-heatmap ${RANDOM_SEED:+--seed $RANDOM_SEED} \
            ${RANDOM_UNPADDED:+--unpadded} ${RANDOM_BETA:+--beta $RANDOM_BETA --tag beta$RANDOM_BETA} \
            ${RANDOM_TAG:+--tag $RANDOM_TAG} \
            --dtype ${RANDOM_DTYPES:-float32 float64} --trans ${RANDOM_TRANS:-NN} --out "$OUT" \
            > "$OUT/bench_tuning${RANDOM_BETA:+-beta$RANDOM_BETA}${RANDOM_TAG:+-$RANDOM_TAG}.txt" 2>&1
        echo "bench_tuning: exit $?"
        grep -E "^#|geometric|best single|public call|GPU time alone" \
            "$OUT/bench_tuning${RANDOM_BETA:+-beta$RANDOM_BETA}${RANDOM_TAG:+-$RANDOM_TAG}.txt" ;;
    fused)  # dmma SPLITK_FUSED (issues 13 and 15; written 2026-11-26): its GPU test, then what
        # each split-K candidate and its fused twin cost a call at 256^3 and 512^3 float64, then
        # the public float64 calls there against cuBLAS (autotuning times the twins too)
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider \
            tests/gpu/test_dmma_fused_splitk_gpu.py > "$OUT/gpu-fused.txt" 2>&1
        echo "fused tests: exit $?"; tail -4 "$OUT/gpu-fused.txt"
        for n in 256 512; do
            timeout 120 python3 benchmarks/probe_call_cost.py --size $n > "$OUT/probe_call_cost-$n.txt" 2>&1
            echo "probe_call_cost $n: exit $?"; cat "$OUT/probe_call_cost-$n.txt"
        done
        timeout 150 python3 benchmarks/bench_device.py --libs torch,cupy --dtypes float64 \
            --shapes 256x256x256,512x512x512,1024x1024x1024 --forms gemm --out "$OUT" \
            --name bench_device-f64-small > "$OUT/bench_device-f64-small.txt" 2>&1
        echo "bench_device: exit $?"; tail -16 "$OUT/bench_device-f64-small.txt" ;;
    power)  # SM clock and power while our call or cuBLAS runs alone at POWER_SHAPES
        # (POWER_DTYPE, default float64; own kernels only: probe_power.py)
        TUNEDGEMM_CUBLAS=0 timeout ${POWER_LIMIT:-200} python3 benchmarks/probe_power.py \
            --dtype ${POWER_DTYPE:-float64} --shapes ${POWER_SHAPES:-1626x342x9572,8192x8192x8192} \
            --out "$OUT" > "$OUT/probe_power.txt" 2>&1
        echo "probe_power: exit $?"; cat "$OUT/probe_power.txt" ;;
    register)  # page-locking host operands in place against staging them (probe_register.py)
        timeout 120 python3 benchmarks/probe_register.py --out "$OUT" > "$OUT/probe_register.txt" 2>&1
        echo "probe_register: exit $?"; tail -16 "$OUT/probe_register.txt" ;;
    splits)  # k-splits that fill whole rounds of blocks over the SMs (issue 15): the table's
        # first own candidate at the table entries that lose most where its power-of-two
        # split leaves the last round part-empty (probe_skinny.py --splits around, padded)
        f64=${SPLITS_F64:-384x384x8192,384x384x384,384x384x3072,384x384x1024,3072x128x3072,1024x128x384}
        f32=${SPLITS_F32:-1024x384x8192,3072x128x3072,128x3072x8192,384x384x3072,384x1024x1024}
        for dt in float64 float32; do
            shapes=$([ $dt = float64 ] && echo $f64 || echo $f32)
            timeout ${SPLITS_LIMIT:-240} python3 benchmarks/probe_skinny.py --dtype $dt --padded \
                --splits around --shapes $shapes --out "$OUT" > "$OUT/probe_splits-$dt.txt" 2>&1
            echo "probe_skinny --splits $dt: exit $?"; cat "$OUT/probe_splits-$dt.txt"
        done ;;
    stream-k)  # autotuning's stream-K variants (issue 15): their GPU test (cursors and
        # per-tile addresses, bit-equal to each other), then float32's worst random shapes of
        # 2026-11-27 05:37 and 05:54 UTC through bench_tuning without and with them
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${STREAM_K_TEST_LIMIT:-300} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_stream_k_gpu.py > "$OUT/gpu-stream-k.txt" 2>&1
        echo "stream-K tests: exit $?"; tail -4 "$OUT/gpu-stream-k.txt"
        worst=948x2190x1017,33x7560x6071,85x11039x494,1560x886x890,2839x305x5447,256x13726x3982
        worst=$worst,1238x935x1771,5148x179x1989,10665x110x298,444x5933x269,141x525x5933
        worst=$worst,1766x1186x193,2134x560x7148,335x2064x213
        for arm in without with; do
            timeout ${STREAM_K_LIMIT:-240} python3 benchmarks/bench_tuning.py --no-heatmap \
                --dtype float32 --shape-list $worst --tag worst-$arm-stream-k \
                $([ $arm = without ] && echo --no-stream-k) --out "$OUT" \
                > "$OUT/bench_tuning-worst-$arm-stream-k.txt" 2>&1
            echo "bench_tuning $arm stream-K: exit $?"
            grep -v "^#" "$OUT/bench_tuning-worst-$arm-stream-k.txt" | grep -v "best single"
        done ;;
    dmma-stream-k)  # dmma's stream-K (issue 15; its GPU test, with simt's, through the tests
        # step: tests/gpu/test_dmma_stream_k_gpu.py): the table's first own candidate at
        # float64 entries that lose where its tiles fill the SMs badly, and at the worst random
        # shapes, at its splits around and as stream-K at 1-4 blocks an SM (probe_skinny.py
        # --stream-k, padded)
        probe=128x1024x1024,384x1024x384,256x256x256,128x3072x3072,384x1024x3072,384x3072x1024
        probe=$probe,3072x384x1024,1387x230x8557,600x508x2782,962x302x1607
        timeout ${SPLITS_LIMIT:-240} python3 benchmarks/probe_skinny.py --dtype float64 --padded \
            --stream-k --shapes ${DMMA_SK_SHAPES:-$probe} --out "$OUT" \
            > "$OUT/probe_stream_k-float64.txt" 2>&1
        echo "probe_skinny --stream-k: exit $?"; cat "$OUT/probe_stream_k-float64.txt" ;;
    tiles-float64)  # dmma tilings outside the tuner's space (cuBLAS's 128 x 64 blocks of eight
        # 32 x 32 warp tiles at m16n8k16 and k-tiles of 32, which need the cursors) against the
        # table's first own candidate, at float64's losing entries and worst random shapes, a
        # few k-splits and stream-K each (probe_skinny.py --tiles, padded; TILES_SHAPES)
        tiles="BM=128,BN=64,WM=32,WN=32,MMA_K=16,BK=32,STAGES=3,MIN_BLOCKS=1,ADVANCE=1"
        tiles="$tiles BM=128,BN=64,WM=32,WN=32,MMA_K=8,BK=32,STAGES=3,MIN_BLOCKS=1,ADVANCE=1"
        tiles="$tiles BM=64,BN=128,WM=32,WN=32,MMA_K=16,BK=32,STAGES=3,MIN_BLOCKS=1,ADVANCE=1"
        tiles="$tiles BM=128,BN=64,WM=64,WN=32,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=2,ADVANCE=1"
        tiles="$tiles BM=64,BN=64,WM=32,WN=32,MMA_K=16,BK=32,STAGES=2,MIN_BLOCKS=2,ADVANCE=1"
        shapes=600x508x2782,1387x230x8557,962x302x1607,128x3072x3072,384x1024x3072,384x3072x1024
        shapes=$shapes,5742x893x364,664x2507x3458,1024x1024x384,2048x2048x2048,512x4096x512
        shapes=$shapes,2220x7562x186
        probe_tiles float64 $shapes $tiles ;;
    tiles-smallk)  # dmma tilings with the cursors at float64's small-k entries of many tiles
        # that cuBLAS holds (k 64-512, m x n from 3M to 268M; where C's stores and the L2
        # reads of small tiles weigh), unsplit, no stream-K; plain grid order
        # (GROUP_M=1: blocks walk down C's columns, so the blocks in flight store one run of
        # memory; at 8192x8192x128 the table's 64 x 64 tile ran 0.89x cuBLAS with it, 0.73 with
        # GROUP_M=8, 2026-11-27 20:36 UTC)
        order="ADVANCE=1,GROUP_M=1"
        tiles="$order BM=128,BN=128,WM=32,WN=32,MMA_K=4,BK=16,STAGES=2,MIN_BLOCKS=1,$order"
        tiles="$tiles BM=128,BN=64,WM=64,WN=32,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=2,$order"
        tiles="$tiles BM=128,BN=64,WM=64,WN=32,MMA_K=4,BK=16,STAGES=2,MIN_BLOCKS=2,$order"
        tiles="$tiles BM=128,BN=64,WM=32,WN=32,MMA_K=8,BK=32,STAGES=3,MIN_BLOCKS=1,$order"
        tiles="$tiles BM=64,BN=128,WM=32,WN=64,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=2,$order"
        tiles="$tiles BM=64,BN=64,WM=32,WN=16,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=2,$order"
        tiles="$tiles BM=64,BN=64,WM=32,WN=32,MMA_K=4,BK=16,STAGES=2,MIN_BLOCKS=3,$order"
        tiles="$tiles BM=64,BN=64,WM=32,WN=32,MMA_K=4,BK=16,STAGES=2,MIN_BLOCKS=4,$order"
        # cuBLAS's own kernel at these shapes (Nsight Compute at 8192x8192x128, 2026-11-27
        # 20:35 UTC: 64 x 128 x 16, 3 stages, 2 x 2 warps, m16n8k8, 248 registers, 2 blocks an
        # SM); ptxas gives ours 248 registers and no spills, dmma's estimate 256 (hence trust)
        tiles="$tiles BM=64,BN=128,WM=32,WN=64,MMA_K=8,BK=16,STAGES=3,MIN_BLOCKS=2,$order"
        shapes=4096x4096x64,16384x4096x64,3072x3072x128,1024x8192x128,8192x8192x128
        shapes=$shapes,4096x4096x256,8192x8192x384,4096x4096x512,16384x512x512,3072x8192x1024
        TILES_SPLITS=${TILES_SPLITS-1} TILES_STREAM_K=${TILES_STREAM_K-} TILES_TRUST_PTXAS=1 \
            probe_tiles float64 $shapes $tiles ;;
    swap)  # dmma SWAP_AB (issue 15, item 4: 16-byte C stores; written 2026-11-28 without a
        # GPU): its GPU test, then tiles-smallk's best five tilings each with and without it
        if [ "${SWAP_TEST_LIMIT:-240}" != 0 ]; then   # 0: the probe only
            TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${SWAP_TEST_LIMIT:-240} python3 -m pytest -q -m gpu \
                -p no:cacheprovider tests/gpu/test_dmma_swap_gpu.py > "$OUT/gpu-swap.txt" 2>&1
            echo "swap tests: exit $?"; tail -4 "$OUT/gpu-swap.txt"
        fi
        order="ADVANCE=1,GROUP_M=1" tiles=""
        for tile in BM=64,BN=128,WM=32,WN=64,MMA_K=8,BK=16,STAGES=3,MIN_BLOCKS=2 \
                    BM=64,BN=64,WM=32,WN=16,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=2 \
                    BM=64,BN=64,WM=32,WN=16,MMA_K=8,BK=16,STAGES=4,MIN_BLOCKS=2 \
                    BM=128,BN=64,WM=64,WN=32,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=2 \
                    BM=128,BN=128,WM=64,WN=32,MMA_K=4,BK=16,STAGES=3,MIN_BLOCKS=1; do
            tiles="$tiles $tile,$order $tile,$order,SWAP_AB=1"
        done
        shapes=4096x4096x64,16384x4096x64,3072x3072x128,1024x8192x128,8192x8192x128
        shapes=$shapes,4096x4096x256,8192x8192x384,4096x4096x512,16384x512x512,3072x8192x1024
        TILES_SPLITS=${TILES_SPLITS-1} TILES_STREAM_K=${TILES_STREAM_K-} TILES_TRUST_PTXAS=1 \
            probe_tiles float64 $shapes $tiles ;;
    tiles-float32)  # simt tilings at whole-round splits against the table's first own candidate
        # at float32's worst random shapes of 2026-11-27 (probe_skinny.py --tiles, padded; the
        # loop twin's main loop on each; TILES_SHAPES)
        twin="ADVANCE=1,FMA_ORDER=1"
        tiles="BM=128,BN=128,BK=16,WM=64,WN=64,TM=16,TN=8,STAGES=2,MIN_BLOCKS=1,GROUP_M=8,$twin"
        tiles="$tiles BM=256,BN=128,BK=16,WM=64,WN=64,TM=16,TN=8,STAGES=2,MIN_BLOCKS=1,GROUP_M=16,$twin"
        tiles="$tiles BM=128,BN=64,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=2,GROUP_M=8,$twin"
        tiles="$tiles BM=64,BN=128,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=1,GROUP_M=16,$twin"
        tiles="$tiles BM=128,BN=128,BK=8,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=2,GROUP_M=16,$twin"
        shapes=183x767x14563,85x14612x963,1920x774x1096,118x1391x3260,77x10737x4312,267x3099x502
        shapes=$shapes,2756x503x193,2445x275x1106,813x398x14465,664x2507x3458
        probe_tiles float32 $shapes $tiles ;;
    tiles-two-warp)  # simt's two-warp tiles (64 threads, 8 x 8 a thread): their GPU test, then
        # probe_skinny.py --tiles at float32's worst random shapes of 2026-11-27/28 beside the
        # narrow tiles, the round tile and the 128-thread 64 x 64 (padded; TILES_SHAPES)
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${TWO_WARP_TEST_LIMIT:-150} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_two_warp_tiles_gpu.py > "$OUT/gpu-two-warp.txt" 2>&1
        echo "two-warp tests: exit $?"; tail -3 "$OUT/gpu-two-warp.txt"
        twin="ADVANCE=1,FMA_ORDER=1,BK=16,STAGES=3,GROUP_M=8"
        tiles=""
        for tile in BM=64,BN=64,WM=32,WN=64,TM=8,TN=8,MIN_BLOCKS=4 \
                    BM=128,BN=32,WM=64,WN=32,TM=8,TN=8,MIN_BLOCKS=4 \
                    BM=32,BN=128,WM=32,WN=64,TM=8,TN=8,MIN_BLOCKS=4 \
                    BM=64,BN=64,WM=32,WN=32,TM=8,TN=4,MIN_BLOCKS=2 \
                    BM=128,BN=32,WM=32,WN=32,TM=8,TN=4,MIN_BLOCKS=2 \
                    BM=32,BN=128,WM=32,WN=32,TM=8,TN=4,MIN_BLOCKS=2 \
                    BM=128,BN=64,WM=32,WN=64,TM=8,TN=8,MIN_BLOCKS=2; do
            tiles="$tiles $tile,$twin"
        done
        shapes=183x767x14563,85x14612x963,1920x774x1096,118x1391x3260,77x10737x4312,267x3099x502
        shapes=$shapes,2756x503x193,2445x275x1106,813x398x14465,664x2507x3458,60x13147x390,440x3563x183
        TILES_STREAM_K=${TILES_STREAM_K-} TILES_IGNORE="threads per block|element copies" \
            probe_tiles float32 $shapes $tiles ;;
    narrow-two-warp)  # simt's narrow tiles (128 x 32, 32 x 128) as two warps of 8 x 8 at BK 16
        # and 8, beside the four-warp narrow tiles, at skinny float32 shapes that lost
        # (probe_skinny.py --tiles, padded; TILES_SHAPES)
        twin="ADVANCE=1,FMA_ORDER=1,STAGES=3,GROUP_M=8"
        tiles=""
        for tile in BM=32,BN=128,WM=32,WN=64,TM=8,TN=8,MIN_BLOCKS=4 \
                    BM=128,BN=32,WM=64,WN=32,TM=8,TN=8,MIN_BLOCKS=4 \
                    BM=32,BN=128,WM=32,WN=32,TM=8,TN=4,MIN_BLOCKS=2 \
                    BM=128,BN=32,WM=32,WN=32,TM=8,TN=4,MIN_BLOCKS=2; do
            tiles="$tiles $tile,BK=16,$twin $tile,BK=8,$twin"
        done
        shapes=85x14612x963,1920x774x1096,77x10737x4312,60x13147x390,33x7560x6071
        shapes=$shapes,10662x56x12626,85x11039x494,2445x275x1106
        TILES_SPLITS=${TILES_SPLITS-1,2,4,8,16} TILES_STREAM_K=${TILES_STREAM_K-} \
            TILES_IGNORE="threads per block|element copies" probe_tiles float32 $shapes $tiles ;;
    worst-float64)  # bench_tuning on float64's worst random shapes of 2026-11-27 14:36 and
        # 14:41 UTC (bench_tuning-worst-float64.txt)
        worst=1387x230x8557,962x302x1607,600x508x2782,2404x152x1073,5742x893x364,664x2507x3458
        worst=$worst,813x398x14465,6089x175x2306,4476x330x577,81x1267x2816
        bench_worst float64 $worst ;;
    worst-float32)  # bench_tuning on float32's worst random shapes of 2026-11-27
        # (bench_tuning-worst-float32.txt)
        worst=183x767x14563,85x14612x963,1920x774x1096,118x1391x3260,77x10737x4312
        worst=$worst,267x3099x502,2756x503x193,2445x275x1106,813x398x14465,664x2507x3458
        bench_worst float32 $worst ;;
    round-tiles)  # simt's round tile at three blocks an SM and its new splits (2026-12-02), and
        # its TN layout twin, in ROUND_PARTS (default "tests probe"): its GPU test and the
        # round-tile cases of the split-K determinism test, then probe_round_tiles.py (the
        # public call, before and after ROUND_CHANGE: three-blocks (the default), tn-registers,
        # mirror, stream-k-first or unsplit-grids;
        # own kernels only; ROUND_PASSES, default 2; ROUND_SHAPES; ROUND_TRANS, default the
        # change's; ROUND_DTYPE, default float32: float64 times dmma's round tiles, which come
        # where a split first candidate has long k too)
        parts=${ROUND_PARTS:-tests probe}
        if [[ " $parts " == *" tests "* ]]; then
            TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${ROUND_TEST_LIMIT:-200} python3 -m pytest -q -m gpu \
                -p no:cacheprovider tests/gpu/test_simt_round_tile_gpu.py \
                "tests/gpu/test_split_k_deterministic.py::test_whole_round_splits_are_bit_equal_run_to_run_and_accurate" \
                > "$OUT/gpu-round-tiles.txt" 2>&1
            echo "round-tile tests: exit $?"; tail -3 "$OUT/gpu-round-tiles.txt"
        fi
        if [[ " $parts " == *" probe "* ]]; then
            dtype=${ROUND_DTYPE:-float32}
            change=${ROUND_CHANGE:-three-blocks}
            log="$OUT/probe_round_tiles-$change-own-$dtype${ROUND_TRANS:+-$ROUND_TRANS}.txt"
            timeout ${ROUND_PROBE_LIMIT:-300} python3 benchmarks/probe_round_tiles.py --own-only \
                --change $change --dtype $dtype --passes ${ROUND_PASSES:-2} \
                ${ROUND_SHAPES:+--shapes $ROUND_SHAPES} ${ROUND_TRANS:+--trans $ROUND_TRANS} \
                --out "$OUT" > "$log" 2>&1
            echo "probe_round_tiles: exit $?"; grep -v "Warning\|routine(" "$log"
        fi ;;
    layout-routes)  # which layout's own kernels run a TN product's shapes fastest (2026-12-04:
        # TN's worst random float32 shapes were large m, n in the hundreds, where transposing B,
        # about 8 n k bytes, costs far less than A, 8 m k): bench_tuning, own kernels and auto,
        # float32, at LAYOUT_SHAPES in each pair of LAYOUT_TRANS (default TN TT NN)
        for trans in ${LAYOUT_TRANS:-TN TT NN}; do
            bench_list float32 $trans ${LAYOUT_SHAPES:-6906x530x1593,13198x40x2444,12998x584x5749,13756x574x7518,12552x3847x1288,627x1738x2098,1317x812x232,2925x440x178,3000x700x2000,8000x300x1000} \
                layout-$trans ${LAYOUT_LIMIT:-150}
        done ;;
    layout-losers)  # simt tilings at TN's and TT's worst random float32 shapes of 2026-12-02
        # (probe_skinny.py --tiles, padded, at splits 1-8 and as stream-K; TN's through
        # registers): the round tile, its mirror, the two-warp 64 x 64, 128 x 128 at two blocks
        # and at one, the table's 64 x 128 and the two-warp narrow tiles; LOSERS_TN and
        # LOSERS_TT the shapes, LOSERS_LIMIT seconds a layout; LOSERS_CURSORS=1: TN's tiles
        # copied from cursors too (simt ASYNC_CURSOR, TN's second layout twin since
        # 2026-12-03; TN's worst random shapes that day: 627x1738x2098, 50x3468x3777,
        # 80x5961x2440, 9619x89x324 and 220x1856x1905, 0.88-0.95 own kernels only);
        # LOSERS_TRANS the layouts (default TN TT)
        twin="ADVANCE=1,FMA_ORDER=1,GROUP_M=8,BK=16"
        tiles=""
        for tile in BM=128,BN=64,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=3 \
                    BM=64,BN=128,WM=64,WN=32,TM=8,TN=8,STAGES=3,MIN_BLOCKS=3 \
                    BM=64,BN=64,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4 \
                    BM=128,BN=128,WM=32,WN=64,TM=8,TN=8,STAGES=2,MIN_BLOCKS=2 \
                    BM=128,BN=128,WM=64,WN=64,TM=16,TN=8,STAGES=2,MIN_BLOCKS=1 \
                    BM=64,BN=128,WM=32,WN=64,TM=8,TN=8,STAGES=2,MIN_BLOCKS=2 \
                    BM=128,BN=32,WM=64,WN=32,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4 \
                    BM=32,BN=128,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4; do
            tiles="$tiles $tile,$twin"
        done
        for trans in ${LOSERS_TRANS:-TN TT}; do
            if [ $trans = TN ]; then
                shapes=${LOSERS_TN:-273x10224x374,307x9899x517,2166x342x1628,4013x590x3661,389x676x16253,126x1257x8863}
                layout_tiles=$(for t in $tiles; do printf '%s ' "$t,REG_TRANSPOSE=1"
                    [ "${LOSERS_CURSORS:-0}" = 1 ] && printf '%s ' "$t,REG_TRANSPOSE=0,ASYNC_CURSOR=1"
                done)
            else
                shapes=${LOSERS_TT:-146x5866x434,384x3072x8192,512x4096x16384,4096x512x16384}
                layout_tiles=$tiles
            fi
            timeout ${LOSERS_LIMIT:-200} python3 benchmarks/probe_skinny.py --padded --trans $trans \
                --shapes $shapes --tile-splits 1,2,3,4,6,8 --tile-stream-k 1,2 \
                --ignore-constraint "threads per block|element copies" \
                --tiles $layout_tiles --out "$OUT" > "$OUT/probe_losers-$trans.txt" 2>&1
            echo "layout-losers $trans: exit $?"; grep -v "Warning" "$OUT/probe_losers-$trans.txt" | head -120
        done ;;
    tn-large)  # simt's large tiles at TN, through registers and through 4-byte copies,
        # beside the same tiles at NN, at TN's worst large random float32 shapes of 2026-12-02
        # (probe_skinny.py --tiles, padded, unsplit, split 2 and as stream-K; TN_LARGE_SHAPES;
        # TN_LARGE_TRANS the layouts, default "TN NN")
        shapes=${TN_LARGE_SHAPES:-827x4994x7378,3297x2367x1173,7110x1102x3327,4096x4096x4096}
        twin="ADVANCE=1,FMA_ORDER=1,BK=16"
        tiles="BM=256,BN=128,WM=64,WN=64,TM=16,TN=8,STAGES=2,MIN_BLOCKS=1,GROUP_M=16,$twin"
        tiles="$tiles BM=128,BN=128,WM=64,WN=64,TM=16,TN=8,STAGES=2,MIN_BLOCKS=1,GROUP_M=8,$twin"
        tiles="$tiles BM=128,BN=64,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=3,GROUP_M=8,$twin"
        for trans in ${TN_LARGE_TRANS:-TN NN}; do
            layout_tiles=$tiles
            if [ $trans = TN ]; then
                layout_tiles="$tiles $(for t in $tiles; do printf '%s ' "$t,REG_TRANSPOSE=1"; done)"
            fi
            timeout ${TN_LARGE_LIMIT:-150} python3 benchmarks/probe_skinny.py --padded --trans $trans \
                --shapes $shapes --tile-splits 1,2 --tile-stream-k 1,2 --tiles $layout_tiles \
                --out "$OUT" > "$OUT/probe_tn_large-$trans.txt" 2>&1
            echo "tn-large $trans: exit $?"; grep -v "Warning" "$OUT/probe_tn_large-$trans.txt" | head -70
        done ;;
    pretranspose)  # TN and TT products with an operand transposed first, then an own kernel
        # (tunedgemm/pretranspose.py): its GPU test, then probe_pretranspose.py (the public call,
        # before and after, own kernels only; PRETRANSPOSE_DTYPES, default float32 float64;
        # PRETRANSPOSE_SHAPES; PRETRANSPOSE_TRANS, default TN; PRETRANSPOSE_FROM_N, _FROM_M and
        # _FROM_FLOPS, the gates "after" times the runners from; PRETRANSPOSE_TAG names the
        # probe's log; PRETRANSPOSE_PARTS, default "tests probe")
        parts=${PRETRANSPOSE_PARTS:-tests probe}
        if [[ " $parts " == *" tests "* ]]; then
            TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${PRETRANSPOSE_TEST_LIMIT:-200} python3 -m pytest -q \
                -m gpu -p no:cacheprovider tests/gpu/test_pretranspose_gpu.py \
                > "$OUT/gpu-pretranspose.txt" 2>&1
            echo "pretranspose tests: exit $?"; tail -5 "$OUT/gpu-pretranspose.txt"
        fi
        if [[ " $parts " == *" probe "* ]]; then
            # (a tagged probe writes apart first: its JSON's name has no tag, and overwrote an
            # untagged run's on 2026-12-04)
            probe_out="$OUT"; [ -n "${PRETRANSPOSE_TAG:-}" ] && probe_out=$(mktemp -d)
            timeout ${PRETRANSPOSE_LIMIT:-300} python3 benchmarks/probe_pretranspose.py --own-only \
                --dtype ${PRETRANSPOSE_DTYPES:-float32 float64} --passes ${PRETRANSPOSE_PASSES:-2} \
                ${PRETRANSPOSE_SHAPES:+--shapes $PRETRANSPOSE_SHAPES} \
                ${PRETRANSPOSE_TRANS:+--trans $PRETRANSPOSE_TRANS} --out "$probe_out" \
                ${PRETRANSPOSE_FROM_N:+--from-n $PRETRANSPOSE_FROM_N} \
                ${PRETRANSPOSE_FROM_M:+--from-m $PRETRANSPOSE_FROM_M} \
                ${PRETRANSPOSE_FROM_FLOPS:+--from-flops $PRETRANSPOSE_FROM_FLOPS} \
                > "$OUT/probe_pretranspose-${PRETRANSPOSE_TRANS:-TN}${PRETRANSPOSE_TAG:+-$PRETRANSPOSE_TAG}.txt" 2>&1
            echo "probe_pretranspose: exit $?"
            grep -v "Warning\|routine(" "$OUT/probe_pretranspose-${PRETRANSPOSE_TRANS:-TN}${PRETRANSPOSE_TAG:+-$PRETRANSPOSE_TAG}.txt"
            if [ -n "${PRETRANSPOSE_TAG:-}" ]; then
                for f in "$probe_out"/probe_pretranspose-*.json; do
                    f_name=$(basename "${f%.json}")
                    mv "$f" "$OUT/$f_name-$PRETRANSPOSE_TAG.json"
                done
            fi
        fi ;;
    narrow-splits)  # simt's 32 x 128 narrow tile at GROUP_M 1, 4, 8, 16 and splits 2-4 at
        # NARROW_SPLITS_SHAPES (default TT float32's 146x5866x434, probe_skinny.py --tiles,
        # padded), then probe_narrow_splits.py (the public call, before and after the least
        # split, own kernels only; NARROW_SPLITS_PROBE_SHAPES, default its own)
        tile="BM=32,BN=128,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4,ADVANCE=1,FMA_ORDER=1,BK=16"
        timeout ${NARROW_SPLITS_LIMIT:-90} python3 benchmarks/probe_skinny.py --padded --trans TT \
            --shapes ${NARROW_SPLITS_SHAPES:-146x5866x434} --tile-splits 2,3,4 --tile-stream-k "" \
            --tiles $(for g in 1 4 8 16; do printf '%s ' "$tile,GROUP_M=$g"; done) --out "$OUT" \
            > "$OUT/probe_narrow_group_m.txt" 2>&1
        echo "narrow tiles by GROUP_M: exit $?"; grep -v "Warning" "$OUT/probe_narrow_group_m.txt" | head -16
        timeout ${NARROW_SPLITS_PROBE_LIMIT:-300} python3 benchmarks/probe_narrow_splits.py --own-only \
            --passes 2 ${NARROW_SPLITS_PROBE_SHAPES:+--shapes $NARROW_SPLITS_PROBE_SHAPES} \
            --out "$OUT" > "$OUT/probe_narrow_splits.txt" 2>&1
        echo "probe_narrow_splits: exit $?"; grep -v "Warning\|routine(" "$OUT/probe_narrow_splits.txt" ;;
    reduce-grid)  # the split-K reduction's thread per element (launch.Plan.reduce_grid,
        # 2026-12-02): its GPU test, the reduction's load pattern in SASS (SPLIT_K 64, the tree's
        # common.cuh and, where .device/base-kernels/kernels holds a commit's, that one's:
        # reduce-*.sass, LDG and add counts and the most loads issued in a row), then
        # probe_reduce_grid.py (own kernels only; REDUCE_DTYPES, default float32 float64)
        export PATH=$PATH:/usr/local/cuda/bin
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${REDUCE_TEST_LIMIT:-200} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_reduce_grid_gpu.py > "$OUT/gpu-reduce-grid.txt" 2>&1
        echo "reduce-grid tests: exit $?"; tail -3 "$OUT/gpu-reduce-grid.txt"
        for dir in kernels .device/base-kernels/kernels; do
            [ -f "$dir/common.cuh" ] || continue
            tag=$([ $dir = kernels ] && echo tree || echo base)
            for source in sgemm_simt.cu:0 dgemm_mma.cu:1; do
                sass="$OUT/reduce-$tag-${source%.cu:*}.sass"
                nvcc -cubin -arch=sm_90a -DSPLIT_K=64 -DALIGNED=1 -DDTYPE=${source#*:} \
                    -o /tmp/reduce.cubin "$dir/${source%:*}" \
                    && cuobjdump -sass -fun splitk_reduce /tmp/reduce.cubin > "$sass"
                awk -v what="$tag ${source%:*}" '/LDG/ {l++; run++; if (run > most) most = run}
                    /FADD|DADD/ {a++; run = 0}
                    END {print what ": LDG " l ", adds " a ", most loads in a row " most}' "$sass"
            done
        done | tee "$OUT/reduce-sass.txt"
        timeout ${REDUCE_LIMIT:-300} python3 benchmarks/probe_reduce_grid.py --own-only \
            --dtype ${REDUCE_DTYPES:-float32 float64} --passes ${REDUCE_PASSES:-2} \
            ${REDUCE_SHAPES:+--shapes $REDUCE_SHAPES} --out "$OUT" > "$OUT/probe_reduce_grid.txt" 2>&1
        echo "probe_reduce_grid: exit $?"; grep -v "Warning\|routine(" "$OUT/probe_reduce_grid.txt" ;;
    medium-simt)  # simt's medium tiles (64 x 64 x 8 and 64 x 32 x 8, 2026-12-02): their GPU
        # test, Nsight Compute's census at NN's medium short-k shapes (MEDIUM_NCU_SHAPES), both
        # tiles at splits 1-4 there (probe_skinny.py --tiles, padded NN), then the call, own
        # kernels and auto, at NN's and TN's medium shapes (bench_tuning-medium-NN/TN.txt)
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${MEDIUM_TESTS_LIMIT:-200} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_simt_medium_tile_gpu.py > "$OUT/gpu-simt-medium.txt" 2>&1
        echo "simt medium tests: exit $?"; tail -3 "$OUT/gpu-simt-medium.txt"
        nn=3477x273x169,4955x899x119,2756x503x193,1301x546x536
        NCU_DTYPE=float32 NCU_SHAPES="${MEDIUM_NCU_SHAPES:-3477x273x169 4955x899x119}" bash "$0" ncu-census
        tiles=$(python3 -c "from tunedgemm.families import simt
print(' '.join(','.join(f'{k}={v}' for k, v in t.items()) for t in simt.MEDIUM_TILES))")
        TILES_SPLITS=1,2,3,4 TILES_STREAM_K= TILES_LIMIT=${MEDIUM_TILES_LIMIT:-200} \
            probe_tiles float32 $nn $tiles
        for pair in NN:$nn TN:2925x440x178,5173x795x285,1317x812x232; do
            bench_list float32 ${pair%%:*} ${pair#*:} medium-${pair%%:*} ${MEDIUM_LIMIT:-200}
        done ;;
    tn-copies)  # TN's two k-major operands copied into shared memory by 4-byte cp.async
        # (REG_TRANSPOSE=0, as cuBLAS's 64 x 64 x 8 kernel at TN's medium shapes does: ncu,
        # H200, 2026-12-03) against through registers (1, what autotuning times there):
        # Nsight Compute's stall reasons of the call's config both ways and cuBLAS's at
        # COPIES_NCU_SHAPES, then simt's medium and round tiles both ways at splits 1-3
        # (probe_skinny --tiles, padded TN) at COPIES_SHAPES
        NCU_CALL=1 NCU_TRANS=TN NCU_SHAPE="${COPIES_NCU_SHAPES:-2925x440x178 1317x812x232}" \
            NCU_SIMT_CHANGES="REG_TRANSPOSE=0 REG_TRANSPOSE=0,STAGES=4" NCU_SAMPLING=0 \
            NCU_STALLS=1500 bash "$0" ncu
        tiles=$(python3 -c "from tunedgemm.families import simt
print(' '.join(','.join(f'{k}={v}' for k, v in {**t, 'REG_TRANSPOSE': r}.items())
               for t in simt.MEDIUM_TILES + simt.ROUND_TILES[:2] for r in (0, 1)))")
        TILES_TRANS=TN TILES_SPLITS=${TILES_SPLITS-1,2,3} TILES_STREAM_K= \
            TILES_LIMIT=${COPIES_TILES_LIMIT:-300} probe_tiles float32 \
            ${COPIES_SHAPES:-2925x440x178,1317x812x232,194x2770x88,349x6462x212} $tiles ;;
    async-cursor)  # simt ASYNC_CURSOR (TN's 4-byte cp.async copies walk cursors, in the
        # steady loop): its GPU test, Nsight Compute on the call's config with it (and four
        # stages) beside cuBLAS's at COPIES_NCU_SHAPES, then simt's medium and round tiles
        # through registers and by the cursor copies at splits 1-3 (probe_skinny --tiles,
        # padded TN) at COPIES_SHAPES
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${CURSOR_TESTS_LIMIT:-240} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_simt_async_cursor_gpu.py > "$OUT/gpu-async-cursor.txt" 2>&1
        echo "async-cursor tests: exit $?"; tail -3 "$OUT/gpu-async-cursor.txt"
        NCU_CALL=1 NCU_TRANS=TN NCU_SHAPE="${COPIES_NCU_SHAPES:-2925x440x178 1317x812x232}" \
            NCU_SIMT_CHANGES="REG_TRANSPOSE=0,ASYNC_CURSOR=1 REG_TRANSPOSE=0,ASYNC_CURSOR=1,STAGES=4" \
            NCU_SAMPLING=0 NCU_STALLS=1500 bash "$0" ncu
        tiles=$(python3 -c "from tunedgemm.families import simt
print(' '.join(','.join(f'{k}={v}' for k, v in {**t, **c}.items())
               for t in simt.MEDIUM_TILES + simt.ROUND_TILES[:2]
               for c in ({'REG_TRANSPOSE': 1}, {'REG_TRANSPOSE': 0, 'ASYNC_CURSOR': 1})))")
        TILES_TRANS=TN TILES_SPLITS=${TILES_SPLITS-1,2,3} TILES_STREAM_K= \
            TILES_LIMIT=${COPIES_TILES_LIMIT:-300} probe_tiles float32 \
            ${COPIES_SHAPES:-2925x440x178,1317x812x232,194x2770x88,349x6462x212,5173x795x285} $tiles ;;
    cursor-call)  # TN's cursor-copy twin (simt ASYNC_CURSOR, 2026-12-03) through the call: the
        # GPU tests of it, the twins and the plans (CURSOR_TESTS_LIMIT seconds: on a fresh
        # H200 the first 159 of their 215 took 220 s, the last 69 another 97, 2026-12-03), then
        # bench_tuning, own kernels and auto, at TN's medium shapes (CURSOR_SHAPES)
        GPU_TESTS="tests/gpu/test_simt_async_cursor_gpu.py tests/gpu/test_twins_gpu.py \
            tests/gpu/test_simt_medium_tile_gpu.py tests/gpu/test_plans_gpu.py" \
            TESTS_LIMIT=${CURSOR_TESTS_LIMIT:-360} bash "$0" tests
        bench_list float32 TN \
            ${CURSOR_SHAPES:-2925x440x178,1317x812x232,194x2770x88,349x6462x212,5173x795x285} \
            cursor-TN ${CURSOR_LIMIT:-240} ;;
    copy-step)  # where TN's cursor-copy twin issues its copies in the k-tile (COPY_STEP, a
        # development define; BK / 4 = 2 at simt's medium tiles): Nsight Compute's source pages
        # put cuBLAS's copies 50-68% of the way through its k-tile, ours 29-35% (H200,
        # 2026-12-03 13:41 UTC). simt's medium tiles through registers and copied from cursors
        # with COPY_STEP of COPY_STEPS (default "3 4 5 6"), probe_skinny --tiles (padded TN),
        # at COPIES_SHAPES
        tiles=$(python3 -c "from tunedgemm.families import simt
regs, cursors = simt.LAYOUT_TWINS[(True, False)]
steps = [{}] + [{'COPY_STEP': int(s)} for s in '${COPY_STEPS:-3 4 5 6}'.split()]
print(' '.join(','.join(f'{k}={v}' for k, v in {**t, **c}.items())
               for t in simt.MEDIUM_TILES for c in [regs] + [{**cursors, **s} for s in steps]))")
        TILES_TRANS=TN TILES_SPLITS=${TILES_SPLITS-1} TILES_STREAM_K= \
            TILES_IGNORE="unknown parameter COPY_STEP" TILES_LIMIT=${COPY_STEP_LIMIT:-240} \
            probe_tiles float32 ${COPIES_SHAPES:-2925x440x178,1317x812x232,194x2770x88,349x6462x212} \
            $tiles ;;
    lane-pairs)  # simt LANE_PAIRS (2026-12-03, written without a GPU: lanes 2i and 2i+1 share
        # their rows, so that an A fragment's LDS.128 takes two shared wavefronts, not four):
        # its GPU test, then the kernels with and without it (probe_skinny --tiles, padded):
        # the medium tiles at TN (both layout twins) and NN medium shapes (LANE_TN, LANE_NN)
        # and the 4096^3 NN table config with the loop twin at LANE_SQUARES
        timeout ${LANE_TEST_LIMIT:-240} python3 -m pytest -q -m gpu -p no:cacheprovider \
            tests/gpu/test_simt_lane_pairs_gpu.py > "$OUT/gpu-lane-pairs.txt" 2>&1
        echo "lane-pairs GPU test: exit $?"; tail -3 "$OUT/gpu-lane-pairs.txt"
        lane_tiles() {  # the change sets of $1 (medium-TN, medium-NN or tuned), LANE_PAIRS 0 and 1
            (cd tests && python3 -c "import sys
from tunedgemm.families import simt
from simt_variants import TUNED
twins = {'medium-TN': simt.LAYOUT_TWINS[(True, False)], 'medium-NN': [simt.LOOP_TWIN]}
bases = [{**t, **w} for t in simt.MEDIUM_TILES for w in twins.get(sys.argv[1], [])] or \\
    [{**TUNED, **simt.LOOP_TWIN}]
print(' '.join(','.join(f'{k}={v}' for k, v in {**b, 'LANE_PAIRS': p}.items())
               for b in bases for p in (0, 1)))" $1)
        }
        for part in medium-TN medium-NN tuned; do
            case $part in
                medium-TN) trans=TN; shapes=${LANE_TN:-2925x440x178,1317x812x232,349x6462x212,5173x795x285} ;;
                medium-NN) trans=NN; shapes=${LANE_NN:-1301x546x536,4955x899x119,3477x273x169,777x3333x1555} ;;
                tuned) trans=NN; shapes=${LANE_SQUARES:-4096x4096x4096,8192x8192x8192} ;;
            esac
            splits=1,2,3; [ $part = tuned ] && splits=1
            TILES_TRANS=$trans TILES_SPLITS=$splits TILES_STREAM_K= TILES_LIMIT=${LANE_LIMIT:-150} \
                probe_tiles float32 $shapes $(lane_tiles $part)
            mv "$OUT/probe_tiles-float32-$trans.txt" "$OUT/lane-pairs-$part.txt"
            # (probe_skinny names its NN file without the layout)
            for json in "$OUT"/probe_skinny-float32-padded-tiles*.json; do
                mv "$json" "$OUT/lane-pairs-$part.json"
            done
        done
        python3 benchmarks/lane_pairs_summary.py "$OUT"/lane-pairs-*.json ;;
    lds-wavefronts)  # shared wavefronts of a warp's LDS.128 by which lanes read one address
        # (2026-12-04: the rule LANE_PAIRS rests on came from two lane layouts at one shape):
        # probe_lds_wavefronts.py's launches under ncu, and its SASS (the loads 16-byte ones)
        export PATH=$PATH:/usr/local/cuda/bin
        python3 benchmarks/probe_lds_wavefronts.py --source /tmp/lds.cu
        (cd /tmp && nvcc -cubin -arch=sm_90a -o lds.cubin lds.cu && cuobjdump -sass lds.cubin \
            | grep -E "LDS|FADD" | head -12) > "$OUT/lds-wavefronts-sass.txt" 2>&1
        cat "$OUT/lds-wavefronts-sass.txt"
        timeout ${LDS_LIMIT:-180} ncu --csv --metrics \
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__inst_executed_op_shared_ld.sum \
            python3 benchmarks/probe_lds_wavefronts.py > "$OUT/lds-wavefronts-ncu.csv" \
            2> "$OUT/lds-wavefronts-ncu.err"
        echo "lds-wavefronts under ncu: exit $?"; tail -3 "$OUT/lds-wavefronts-ncu.err"
        python3 benchmarks/probe_lds_wavefronts.py --ncu-csv "$OUT/lds-wavefronts-ncu.csv" \
            --json "$OUT/lds-wavefronts.json" 2>&1 | tee "$OUT/lds-wavefronts.txt" ;;
    lane-call)  # paired lanes through the call (LANE_PAIRS=1 in simt's loop twin, 2026-12-03):
        # bench_tuning, own kernels and auto, float32, at LANE_CALL_TN and LANE_CALL_NN (the
        # layouts LANE_CALL_TRANS, default "TN NN"), as shipped and with the loop twin unpaired
        # in the installed package's families/simt.py, which the step puts back after
        simt_py=$(cd /tmp && python3 -c "import tunedgemm.families.simt as s; print(s.__file__)")
        for trans in ${LANE_CALL_TRANS:-TN NN}; do
            shapes=${LANE_CALL_NN:-1301x546x536,4955x899x119,3477x273x169,2756x503x193,777x3333x1555,1000x300x200,3000x1000x500,300x2000x100}
            [ $trans = TN ] && shapes=${LANE_CALL_TN:-2925x440x178,1317x812x232,349x6462x212,5173x795x285,194x2770x88,627x1738x2098,777x3333x1555,220x1856x1905}
            bench_list float32 $trans $shapes lanes-$trans ${LANE_CALL_LIMIT:-150}
            cp "$simt_py" /tmp/simt.py.shipped
            sed -i 's/^\(LOOP_TWIN = {.*"LANE_PAIRS": \)LANE_PAIRS_ON\[0\]}/\10}/' "$simt_py"
            grep -n "^LOOP_TWIN" "$simt_py"
            bench_list float32 $trans $shapes lanes-$trans-unpaired ${LANE_CALL_LIMIT:-150}
            cp /tmp/simt.py.shipped "$simt_py"
        done ;;
    wide-pairs-call)  # pairing 8 x 8 thread tiles through the call (2026-12-04: 12 -> 8 shared
        # wavefronts a k-step by probe_lds_wavefronts' rule): bench_tuning, own kernels and
        # auto, float32, at LANE_CALL_TN and LANE_CALL_NN (the layouts LANE_CALL_TRANS, default
        # "TN NN"), as shipped ("narrow") and with PAIR_LANES opened to 8 x 8 tiles in the
        # installed package's kernel and simt.pairs_lanes, the table stamped for that kernel
        # ("wide"), which the step puts back after; WIDE_ROUNDS rounds (default 1), every
        # second one wide first. Autotuning times each 8 x 8 candidate and its loop twin, paired
        # in the wide runs: lane_pairs_summary.py sets those times side by side per shape
        pkg=$(cd /tmp && python3 -c "import os, tunedgemm; print(os.path.dirname(tunedgemm.__file__))")
        cp "$pkg/kernels/sgemm_simt.cu" /tmp/sgemm_simt.cu.shipped
        cp "$pkg/families/simt.py" /tmp/simt.py.shipped
        wide_pairs() {  # $1: narrow (as shipped) or wide
            cp /tmp/sgemm_simt.cu.shipped "$pkg/kernels/sgemm_simt.cu"
            cp /tmp/simt.py.shipped "$pkg/families/simt.py"
            unset TUNEDGEMM_TABLE
            [ "$1" = wide ] || return 0
            sed -i 's/^#define PAIR_LANES .*/#define PAIR_LANES (LANE_PAIRS \&\& (TN == 4 || (TM == 8 \&\& TN == 8)))/' \
                "$pkg/kernels/sgemm_simt.cu"
            sed -i 's/LANE_PAIRS")) and p.get("TN") == 4$/LANE_PAIRS")) and (p.get("TN") == 4 or (p.get("TM"), p.get("TN")) == (8, 8))/' \
                "$pkg/families/simt.py"
            grep -n "^#define PAIR_LANES" "$pkg/kernels/sgemm_simt.cu"
            grep -n "LANE_PAIRS\")) and" "$pkg/families/simt.py"
            (cd /tmp && python3 -c "
import json, sys
from tunedgemm import table
t = json.load(open(sys.argv[1]))
t['family_hashes'] = table.family_hashes()
json.dump(t, open(sys.argv[2], 'w'))" "$pkg/tables/tuned.json" "$OUT/wide-table.json") \
                && export TUNEDGEMM_TABLE="$OUT/wide-table.json"
        }
        for round in $(seq ${WIDE_ROUNDS:-1}); do
            order="narrow wide"; [ $((round % 2)) = 0 ] && order="wide narrow"
            for trans in ${LANE_CALL_TRANS:-TN NN}; do
                shapes=${LANE_CALL_NN:-1301x546x536,4955x899x119,3477x273x169,2756x503x193,777x3333x1555,1000x300x200,3000x1000x500,300x2000x100}
                [ $trans = TN ] && shapes=${LANE_CALL_TN:-2925x440x178,1317x812x232,349x6462x212,5173x795x285,194x2770x88,627x1738x2098,777x3333x1555,220x1856x1905}
                for pairs in $order; do
                    wide_pairs $pairs
                    bench_list float32 $trans $shapes $pairs-$trans-$round ${LANE_CALL_LIMIT:-150}
                done
            done
        done
        wide_pairs narrow
        python3 benchmarks/lane_pairs_summary.py "$OUT"/bench_tuning-*-[0-9].json ;;
    one-staged-call)  # TN's twin staging the block tile's longer side's operand (REG_TRANSPOSE=4,
        # 2026-12-05) against the twin it replaced, both operands staged (bench_tuning
        # --both-staged-tn-twin), through the call: own kernels and auto, float32 TN at
        # ONE_CALL_TN, ONE_ROUNDS rounds (default 1), every second one the new twin first;
        # then each shape's times side by side (own only, auto, cuBLAS, ms)
        shapes=${ONE_CALL_TN:-475x2751x6475,6906x530x1593,627x1738x2098,2925x440x178,777x3333x1555,1317x812x232,4096x4096x4096}
        for round in $(seq ${ONE_ROUNDS:-1}); do
            order="both one"; [ $((round % 2)) = 0 ] && order="one both"
            for arm in $order; do
                flag=""; [ $arm = both ] && flag=--both-staged-tn-twin
                BENCH_FLAGS=$flag bench_list float32 TN $shapes $arm-TN-$round ${ONE_CALL_LIMIT:-200}
            done
        done
        python3 benchmarks/twin_sets.py --calls "$OUT" | tee "$OUT/one-staged-call.txt"
        ;;
    edge-panel)  # tunedgemm/edge_panel.py (a nearly empty last block column or row of C as a
        # narrow launch of its own, written without a GPU on 2026-12-06, on since 2026-12-07):
        # its GPU test, then the call without and with it (bench_tuning --no-edge-panels) in
        # EDGE_ROUNDS alternating rounds (default 1), float32 at EDGE_TT (TT) and EDGE_NN (NN),
        # float64 NN at EDGE_NN64; then each shape's times side by side (twin_sets.py --calls)
        TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${EDGE_TEST_LIMIT:-240} python3 -m pytest -q -m gpu \
            -p no:cacheprovider tests/gpu/test_edge_panel_gpu.py > "$OUT/gpu-edge-panel.txt" 2>&1
        echo "edge-panel GPU test: exit $?"; tail -4 "$OUT/gpu-edge-panel.txt"
        for round in $(seq ${EDGE_ROUNDS:-1}); do
            order="off on"; [ $((round % 2)) = 0 ] && order="on off"
            for arm in $order; do
                flag=""; [ $arm = off ] && flag=--no-edge-panels
                for job in "float32 TT ${EDGE_TT:-7557x390x14408,2054x4102x3000}" \
                        "float32 NN ${EDGE_NN:-390x7557x14408,4101x2048x4096,2600x1030x3000}" \
                        "float64 NN ${EDGE_NN64:-4101x2048x4096,2600x1030x3000}"; do
                    set -- $job
                    BENCH_FLAGS=$flag bench_list $1 $2 $3 $arm-$2-$1-$round ${EDGE_LIMIT:-150}
                done
            done
        done
        for dtype in float32 float64; do
            python3 benchmarks/twin_sets.py --calls "$OUT" --arms off on --dtype $dtype
        done | tee "$OUT/edge-panel.txt" ;;
    kmajor-lanes)  # simt KMAJOR_LANES (the k-major copies laid over the lanes for
        # conflict-free shared stores) and REG_TRANSPOSE 2/3 (one of TN's operands through
        # registers), written without a GPU on 2026-12-05, in KL_PARTS (default "tests ncu tn
        # nn"): their GPU test; Nsight Compute's shared-store wavefronts and bank conflicts of
        # the table's config at KL_NCU_SHAPES in TN, each way of copying TN's operands with
        # KMAJOR_LANES 0 and 1; kernel times (probe_skinny --tiles, padded, split 1) of the
        # medium, round and 4096^3 tiles at TN's shapes (KL_TN) the same eight ways, and at
        # NN's (KL_NN) with KMAJOR_LANES 0 and 1; lane_pairs_summary.py pairs the times
        parts=" ${KL_PARTS:-tests ncu tn nn} "
        if [[ $parts == *" tests "* ]]; then
            TUNEDGEMM_TEST_PRECOMPILE=0 timeout ${KL_TESTS_LIMIT:-400} python3 -m pytest -q -m gpu \
                -p no:cacheprovider tests/gpu/test_simt_kmajor_lanes_gpu.py > "$OUT/gpu-kmajor-lanes.txt" 2>&1
            echo "kmajor-lanes GPU test: exit $?"; tail -3 "$OUT/gpu-kmajor-lanes.txt"
        fi
        # TN's ways of copying its operands (REG_TRANSPOSE, ASYNC_CURSOR), as in kmajor_banks.py
        copies="REG_TRANSPOSE=1,ASYNC_CURSOR=0 REG_TRANSPOSE=0,ASYNC_CURSOR=1 REG_TRANSPOSE=2,ASYNC_CURSOR=1 REG_TRANSPOSE=3,ASYNC_CURSOR=1"
        if [[ $parts == *" ncu "* ]]; then
            export PATH=$PATH:/usr/local/cuda/bin
            changes=$(for c in $copies; do for l in 0 1; do
                printf '%s ' "ADVANCE=1,FMA_ORDER=1,LANE_PAIRS=1,$c,KMAJOR_LANES=$l"; done; done)
            timeout ${KL_NCU_LIMIT:-200} ncu --clock-control none --profile-from-start off \
                --section LaunchStats --section MemoryWorkloadAnalysis_Tables \
                -o "$OUT/ncu-kmajor-lanes" python3 benchmarks/ncu_simt.py --trans TN --variants none \
                --shape ${KL_NCU_SHAPES:-4096x4096x4096 2925x440x178} --simt-changes $changes \
                > "$OUT/ncu-kmajor-lanes-run.txt" 2>&1
            echo "ncu kmajor-lanes: exit $?"; grep -v "^==PROF==" "$OUT/ncu-kmajor-lanes-run.txt" | tail -4
            ncu --import "$OUT/ncu-kmajor-lanes.ncu-rep" --page raw --csv > "$OUT/ncu-kmajor-lanes-raw.csv" 2>&1
            python3 - "$OUT/ncu-kmajor-lanes-raw.csv" "$OUT/ncu-kmajor-lanes-run.txt" <<'PY' | tee "$OUT/ncu-kmajor-lanes.txt"
import csv, re, sys
rows = list(csv.reader(open(sys.argv[1])))
labels = [line.strip().split(": ")[0] for line in open(sys.argv[2]) if re.match(r"\d+x\d+x\d+ ", line)]
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names, body = rows[head], [r for r in rows[head + 2:] if r]
keep = [i for i, name in enumerate(names) if re.search(
    r"(bank_conflicts|wavefronts)_?.*mem_shared_op_(st|ldgsts|ld)\.sum$|inst_executed_op_(shared_st|ldgsts)"
    r"|gpu__time_duration.sum|registers_per_thread", name)]
for n, r in enumerate(body):
    print(labels[n] if n < len(labels) else r[names.index("Kernel Name")][:60])
    for i in keep:
        print(f"    {names[i]}: {r[i]}")
PY
        fi
        tiles_of() {  # $1: TN (each tile the eight ways) or NN (KMAJOR_LANES 0 and 1)
            (cd tests && python3 -c "import sys
from tunedgemm.families import simt
from simt_variants import TUNED
copies = [{'REG_TRANSPOSE': r, 'ASYNC_CURSOR': a} for r, a in ((1, 0), (0, 1), (2, 1), (3, 1))]
tiles = [*simt.MEDIUM_TILES, *simt.ROUND_TILES[:2], TUNED]
ways = copies if sys.argv[1] == 'TN' else [{}]
print(' '.join(','.join(f'{k}={v}' for k, v in {**t, **simt.LOOP_TWIN, **w, 'KMAJOR_LANES': l}.items())
               for t in tiles for w in ways for l in (0, 1)))" $1)
        }
        for trans in TN NN; do
            [[ $parts == *" ${trans,,} "* ]] || continue
            shapes=${KL_NN:-1301x546x536,4955x899x119,777x3333x1555,4096x4096x4096}
            [ $trans = TN ] && shapes=${KL_TN:-475x2751x6475,6906x530x1593,627x1738x2098,2925x440x178,4096x4096x4096}
            TILES_TRANS=$trans TILES_SPLITS=1 TILES_STREAM_K= TILES_LIMIT=${KL_LIMIT:-300} \
                probe_tiles float32 $shapes $(tiles_of $trans)
            mv "$OUT/probe_tiles-float32-$trans.txt" "$OUT/kmajor-lanes-$trans.txt"
            for json in "$OUT"/probe_skinny-float32-padded-tiles*.json; do
                mv "$json" "$OUT/kmajor-lanes-$trans.json"
            done
        done
        ls "$OUT"/kmajor-lanes-*.json > /dev/null 2>&1 && python3 benchmarks/lane_pairs_summary.py \
            --tunable KMAJOR_LANES "$OUT"/kmajor-lanes-*.json | tee "$OUT/kmajor-lanes-summary.txt" ;;
    medium-floor)  # whether plans.MEDIUM_FROM_FLOPS (2e8) should come down (written
        # 2026-12-03 without a GPU): at 194x2770x88 TN (9.5e7 flops) the call ran a round tile
        # at 0.84x cuBLAS where the 64 x 32 medium tile copied from cursors ran 0.91 as a
        # kernel (the floor is 5e7 since). In FLOOR_DTYPE (default float32), in each of
        # FLOOR_TRANS (default "NN TN"), at FLOOR_SHAPES (6.7e7-1.3e8 flops) and in FLOOR_PARTS
        # (default "tiles call at"): simt's medium tiles (at TN as its layout twins;
        # probe_skinny --tiles, padded; float32 only), the call as it is (bench_tuning, own
        # kernels and auto), and the call with the floor at FLOOR_AT (default 2e8, the old
        # one) in the installed package's plans.py, which the step puts back after
        shapes=${FLOOR_SHAPES:-194x2770x88,512x512x128,1000x300x200,300x2000x100,2000x200x150,128x4096x128,700x700x100,3000x150x120}
        parts=" ${FLOOR_PARTS:-tiles call at} " dtype=${FLOOR_DTYPE:-float32}
        plans=$(cd /tmp && python3 -c "import tunedgemm.plans as p; print(p.__file__)")
        for trans in ${FLOOR_TRANS:-NN TN}; do
            if [[ $parts == *" tiles "* ]]; then
                tiles=$(python3 -c "from tunedgemm.families import simt
twins = simt.LAYOUT_TWINS[(True, False)] if '$trans' == 'TN' else ({},)
print(' '.join(','.join(f'{k}={v}' for k, v in {**t, **c}.items())
               for t in simt.MEDIUM_TILES for c in twins))")
                TILES_TRANS=$trans TILES_SPLITS=1,2 TILES_STREAM_K= \
                    TILES_LIMIT=${FLOOR_TILES_LIMIT:-150} probe_tiles $dtype $shapes $tiles
            fi
            [[ $parts == *" call "* ]] && bench_list $dtype $trans $shapes floor-$dtype-$trans ${FLOOR_LIMIT:-150}
            if [[ $parts == *" at "* ]]; then
                cp "$plans" /tmp/plans.py.shipped
                sed -i "s/^\(MEDIUM_UPTO, MEDIUM_FROM_FLOPS = [0-9]*, \).*$/\1${FLOOR_AT:-2e8}/" "$plans"
                grep -n "^MEDIUM_UPTO" "$plans"
                bench_list $dtype $trans $shapes floor-$dtype-$trans-at-${FLOOR_AT:-2e8} ${FLOOR_LIMIT:-150}
                cp /tmp/plans.py.shipped "$plans"
            fi
        done ;;
    sass)  # sass_of.py: cuobjdump -sass and the opcode mix of simt's base tile with each of
        # SASS_CHANGES (space-separated) in SASS_TRANS (default TN); SASS_BASE another base
        export PATH=$PATH:/usr/local/cuda/bin
        timeout ${SASS_LIMIT:-120} python3 benchmarks/sass_of.py --trans ${SASS_TRANS:-TN} \
            ${SASS_BASE:+--base $SASS_BASE} --out "$OUT/sass" $SASS_CHANGES > "$OUT/sass.txt" 2>&1
        echo "sass: exit $?"; cat "$OUT/sass.txt" ;;
    cublas-tiles)  # simt at the tilings of cuBLAS's own FFMA kernels at TN's worst random
        # float32 shapes (Nsight Compute's census, step ncu-census with NCU_TRANS=TN, H200,
        # 2026-12-02 19:03 UTC: 64 x 64 x 8 tiles, three stages, 128 threads at 2925x440x178 and
        # 1317x812x232; 128 x 128 x 8, 128 threads, k split 7-9 at 95x3514x13401 and
        # 639x853x10054; 64 x 256 x 8 split 7 at 5087x430x7000), each through registers at TN,
        # probe_skinny --tiles (padded) in CUBLAS_TILES_TRANS (default TN) at splits 1-12
        twin="ADVANCE=1,FMA_ORDER=1,GROUP_M=8"
        [ "${CUBLAS_TILES_TRANS:-TN}" = TN ] && twin="$twin,REG_TRANSPOSE=1"
        tiles=""
        for tile in BM=64,BN=64,WM=32,WN=32,TM=8,TN=4,BK=8,STAGES=3,MIN_BLOCKS=4 \
                    BM=64,BN=64,WM=32,WN=32,TM=8,TN=4,BK=16,STAGES=3,MIN_BLOCKS=4 \
                    BM=64,BN=64,WM=64,WN=16,TM=8,TN=4,BK=8,STAGES=3,MIN_BLOCKS=4 \
                    BM=128,BN=128,WM=64,WN=64,TM=16,TN=8,BK=8,STAGES=3,MIN_BLOCKS=1 \
                    BM=64,BN=256,WM=64,WN=64,TM=16,TN=8,BK=8,STAGES=3,MIN_BLOCKS=1; do
            tiles="$tiles $tile,$twin"
        done
        shapes=2925x440x178,1317x812x232,2166x342x1628,95x3514x13401,639x853x10054,5087x430x7000
        TILES_TRANS=${CUBLAS_TILES_TRANS:-TN} TILES_SPLITS=${TILES_SPLITS-1,2,3,4,6,7,8,9,12} \
            TILES_IGNORE="threads per block|element copies" TILES_LIMIT=${CUBLAS_TILES_LIMIT:-300} \
            probe_tiles float32 $shapes $tiles ;;
    round-mirror)  # simt's 128 x 64 round tile beside its mirror, 64 x 128 (both warp
        # arrangements), three blocks an SM, the loop twin, at splits 1-16 (probe_skinny.py
        # --tiles, padded), in each of MIRROR_TRANS (default "TT NN"; TT stages A's 128 rows
        # through registers where NN stages B's 64 columns) at MIRROR_SHAPES
        shapes=${MIRROR_SHAPES:-512x512x16384,384x3072x8192,4096x64x16384,512x4096x16384,4096x512x16384,512x4096x4096,16384x64x4096,64x4096x16384}
        twin="ADVANCE=1,FMA_ORDER=1,GROUP_M=8,STREAM_K=0"
        tile="BK=16,TM=8,TN=8,STAGES=3,MIN_BLOCKS=3,$twin"
        for trans in ${MIRROR_TRANS:-TT NN}; do
            timeout ${MIRROR_LIMIT:-150} python3 benchmarks/probe_skinny.py --padded --trans $trans \
                --shapes $shapes --tile-splits 1,2,3,4,6,8,12,16 --tile-stream-k "" \
                --tiles BM=128,BN=64,WM=32,WN=64,$tile BM=64,BN=128,WM=64,WN=32,$tile \
                BM=64,BN=128,WM=32,WN=64,$tile --out "$OUT" > "$OUT/probe_mirror-$trans.txt" 2>&1
            echo "round-mirror $trans: exit $?"; grep -v "Warning" "$OUT/probe_mirror-$trans.txt" | head -80
        done ;;
    longk-float32)  # float32's long-k entries that cuBLAS holds in the shipped table (2026-12-02:
        # 0.77-0.86 there): bench_tuning through the public call, then simt tilings at their
        # splits (probe_skinny.py --tiles, padded); LONGK_PARTS (default "worst tiles"), shapes
        # LONGK_SHAPES (comma-separated). What cuBLAS runs there: NCU_DTYPE=float32
        # NCU_SHAPES="..." ncu-census.
        longk=${LONGK_SHAPES:-384x3072x8192,3072x128x8192,8192x128x8192,512x512x16384,4096x64x16384,3072x384x8192,183x1144x6161}
        parts=${LONGK_PARTS:-worst tiles}
        [[ " $parts " == *" worst "* ]] && bench_worst float32 $longk
        if [[ " $parts " == *" tiles "* ]]; then
            twin="ADVANCE=1,FMA_ORDER=1,GROUP_M=8"
            tiles=""
            for tile in BM=128,BN=128,BK=16,WM=64,WN=64,TM=16,TN=8,STAGES=2,MIN_BLOCKS=1 \
                        BM=128,BN=128,BK=8,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=2 \
                        BM=128,BN=64,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=2 \
                        BM=64,BN=128,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=2 \
                        BM=64,BN=64,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4 \
                        BM=128,BN=32,BK=16,WM=64,WN=32,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4 \
                        BM=32,BN=128,BK=16,WM=32,WN=64,TM=8,TN=8,STAGES=3,MIN_BLOCKS=4; do
                tiles="$tiles $tile,$twin"
            done
            TILES_SPLITS=${TILES_SPLITS-1,2,3,4,6,8,12,16} TILES_STREAM_K=${TILES_STREAM_K-} \
                TILES_IGNORE="threads per block|element copies" probe_tiles float32 $longk $tiles
        fi ;;
    small-family)  # the small family's whole space against cuBLAS and the table's own configs
        # at launch-bound shapes (probe_small_family.py)
        timeout ${SMALL_FAMILY_LIMIT:-360} python3 benchmarks/probe_small_family.py --out "$OUT" \
            > "$OUT/probe_small_family.txt" 2>&1
        echo "probe_small_family: exit $?"; grep -v "^   " "$OUT/probe_small_family.txt" ;;
    small-launch)  # own kernels against cuBLASLt at small shapes: host or GPU time a launch
        # (probe_small_launch.py: direct, one-call graph replay, GPU time of a 20-call graph)
        timeout ${SMALL_LAUNCH_LIMIT:-240} python3 benchmarks/probe_small_launch.py \
            > "$OUT/probe_small_launch.txt" 2>&1
        echo "probe_small_launch: exit $?"; cat "$OUT/probe_small_launch.txt" ;;
    dask)
        timeout 200 python3 benchmarks/bench_multigpu.py --skip host --repeats 1 --out "$OUT" \
            > "$OUT/bench_multigpu.txt" 2>&1
        echo "bench_multigpu dask: exit $?"; grep -v "distributed\." "$OUT/bench_multigpu.txt" | tail -12 ;;
    pack)  # last: everything under $OUT into one archive, as the device tool returns at
        # most 8 files (JSON and plots in subfolders were left behind before, 2026-11-26)
        (cd "$OUT" && tar czf /tmp/session.tgz --exclude=session.tgz . && find . -mindepth 1 -delete \
            && mv /tmp/session.tgz session.tgz && echo "packed: $(du -h session.tgz | cut -f1)") ;;
    *) echo "unknown step $step" ;;
    esac
done
