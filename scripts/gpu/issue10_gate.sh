#!/usr/bin/env bash
# The arbiter's device-side gate on the GPU (issue 10, docs/sched.md "Where
# a BE kernel waits"): builds scripts/gpu/probes/issue10_gate.cu for sm_90
# (CUDA runtime + driver API only: no cJSON, no build tree) and measures
#   - wake: a host write of a registered memfd word -> the stream waiting
#     behind cuStreamWaitValue32 (GEQ) passes: host round trip to a
#     cuStreamWriteValue32 ack and to a store made by the kernel at its
#     start (host CLOCK_MONOTONIC, spinning), and the kernel's %globaltimer
#     minus the host's CLOCK_REALTIME at the write (offset uncalibrated);
#   - write64: what a cuStreamWriteValue64 after each launch costs, host ns
#     per launch and GPU us per launch (events), with and without;
#   - lazyload / funcload: a kernel's first launch behind an unreleased
#     wait under lazy module loading, and which driver call loads a kernel
#     (module or library, waits on the same or another stream) without
#     waiting for the grant (the shim's load before its gate);
#   - twoproc: the gate across two processes (the parent writes the grant),
#     without MPS and, when nvidia-cuda-mps-control can be started, under
#     MPS.
# Prints a short table last; full results (JSON lines, logs) under $OUT.
#
#   OUT=/tmp/out scripts/gpu/issue10_gate.sh [--dry-run] [WAKE_N] [WRITE64_N]
# --dry-run: build only, no GPU needed. Needs nvcc (13.0 tested) and gcc.
set -euo pipefail
cd "$(dirname "$0")/../.."
dry=0
if [[ ${1:-} == --dry-run ]]; then dry=1; shift; fi
wake_n=${1:-300}
w64_n=${2:-5000}
OUT=${OUT:-$PWD/out-issue10-gate}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
work=$OUT/build
mkdir -p "$work"
log() { printf '[issue10_gate] %s\n' "$*" | tee -a "$OUT/script.log" >&2; }

cuda_lib=$(dirname "$NVCC")/../lib64
log "building scripts/gpu/probes/issue10_gate.cu for sm_90 into $work"
"$NVCC" -std=c++17 -O2 -arch=sm_90 scripts/gpu/probes/issue10_gate.cu -o "$work/issue10_gate" \
    -L"$cuda_lib" -L"$cuda_lib/stubs" -lcuda >"$work/nvcc.log" 2>&1 ||
    { cat "$work/nvcc.log"; log "nvcc failed"; exit 1; }
"$NVCC" -cubin -arch=sm_90 scripts/gpu/probes/issue10_probe_kernel.cu -o "$work/k_probe.cubin" \
    >>"$work/nvcc.log" 2>&1 || { cat "$work/nvcc.log"; log "nvcc -cubin failed"; exit 1; }
if [[ $dry == 1 ]]; then
    log "dry run: built $work/issue10_gate; not run"
    exit 0
fi
bin=$work/issue10_gate
res=$OUT/results.jsonl
: >"$res"
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv;
  "$NVCC" --version | tail -2; } >"$OUT/env.txt" 2>&1 || true

run() { # NAME ARGS...: one probe, its JSON lines into $res tagged with NAME
    local name=$1; shift
    log "$name: $bin $*"
    if timeout -k 5 "${PROBE_TIMEOUT:-60}" "$bin" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"; then
        sed "s/^{/{\"run\":\"$name\",/" "$OUT/$name.out" >>"$res"
    else
        log "$name failed (rc $?): $(tail -3 "$OUT/$name.err" | tr '\n' ' ')"
        echo "{\"run\":\"$name\",\"failed\":true}" >>"$res"
    fi
}

run wake wake "$wake_n"
run write64 write64 "$w64_n"
run twoproc twoproc
run lazyload lazyload
CUDA_MODULE_LOADING=EAGER run lazyload_eager lazyload
run funcload funcload "$work/k_probe.cubin"
CUDA_MODULE_LOADING=EAGER run funcload_eager funcload "$work/k_probe.cubin"

# MPS: started here only if no control daemon is running already; stopped
# again at the end (only the one started here).
mps_ctl=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
mps_state="not tried"
if [[ -x $mps_ctl ]]; then
    export CUDA_MPS_PIPE_DIRECTORY=$OUT/mps-pipe CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if "$mps_ctl" -d >>"$OUT/script.log" 2>&1; then
        sleep 1
        mps_state="started"
        run twoproc_mps twoproc
        run wake_mps wake 100
        echo quit | "$mps_ctl" >>"$OUT/script.log" 2>&1 || true
    else
        mps_state="could not start"
    fi
else
    mps_state="no nvidia-cuda-mps-control"
fi
log "MPS: $mps_state"

python3 - "$res" "$mps_state" <<'PY' || cat "$res"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def get(run, probe, **kw):
    for r in rows:
        if r.get("run") == run and r.get("probe") == probe and all(r.get(k) == v for k, v in kw.items()):
            return r
    return {}
w = get("wake", "wake"); a = get("wake", "attributes")
off = get("write64", "write64", completion_write=False); on = get("write64", "write64", completion_write=True)
print("issue10 gate on the GPU (method in results.jsonl)")
print(f"  host-pointer registered mem attribute : {a.get('can_use_host_pointer_for_registered_mem', '?')}")
print(f"  wake, host write -> wait passes (RT, write ack) p50/p99 us : {w.get('rt_write_us_p50', '?')} / {w.get('rt_write_us_p99', '?')}")
print(f"  wake, host write -> kernel start store (RT) p50/p99 us     : {w.get('rt_kernel_us_p50', '?')} / {w.get('rt_kernel_us_p99', '?')}")
print(f"  wake, gtimer - host realtime (one way, uncalibrated) p50 us: {w.get('one_way_us_p50', '?')}")
if off and on:
    print(f"  launch host ns without / with cuStreamWriteValue64 : {off['host_ns_per_launch']} / {on['host_ns_per_launch']} (+{on['host_ns_per_launch'] - off['host_ns_per_launch']:.1f})")
    print(f"  launch GPU us  without / with cuStreamWriteValue64 : {off['gpu_us_per_launch']} / {on['gpu_us_per_launch']} (+{on['gpu_us_per_launch'] - off['gpu_us_per_launch']:.3f})")
for run in ("lazyload", "lazyload_eager"):
    t = get(run, "lazyload")
    print(f"  {run:14s}: first launch behind a wait {t.get('first_launch_ms', 'FAILED')} ms, waited for the grant: {t.get('waited_for_grant', '?')}")
for run in ("funcload", "funcload_eager"):
    for r in rows:
        if r.get("run") == run and r.get("probe") == "funcload":
            print(f"  {run:14s} {r['case']:31s}: call {r['call_ms']:8.3f} ms, launch {r['launch_ms']:8.3f} ms, loaded {r['state_before']} -> {r['state_after']}")
for run in ("twoproc", "twoproc_mps"):
    t = get(run, "twoproc")
    if t:
        print(f"  {run:12s}: gated {t.get('gated')}, sync {t.get('sync_after_grant_us')} us after the grant")
    elif any(r.get("run") == run for r in rows):
        print(f"  {run:12s}: FAILED")
print(f"  MPS: {sys.argv[2]}")
PY
