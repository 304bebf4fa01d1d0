#!/usr/bin/env bash
# The HP green context's request end on the GPU (scripts/gpu/workloads/
# green_hp_check.py says why): ResNet-50 requests without the shim, under
# the shim as HP on the full GPU, and confined to MOSAIC_HP_SMS of a green
# context (HP_SMS, default "120 66"), each under MPS and the first and the
# 120-SM ones also without. Prints a table last; full lines in $OUT.
#   OUT=DIR BUILD=gpu-slim scripts/gpu/green_hp_check.sh
#   DRY=1: print the runs, run nothing.
set -uo pipefail
: "${OUT:?set OUT}" "${BUILD:=build-gpu}" "${HP_SMS:=120 66}" "${REQUESTS:=300}"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=$ROOT/scripts/gpu/workloads/green_hp_check.py
SHIM=$(cd "$ROOT" && realpath -m "$BUILD/lib/libmosaic.so")
mkdir -p "$OUT"
runs=("nomps:none" "nomps:shim")
for n in $HP_SMS; do runs+=("nomps:sms$n"); break; done
runs+=("mps:none" "mps:shim")
for n in $HP_SMS; do runs+=("mps:sms$n"); done
if [[ -n ${DRY:-} ]]; then printf '%s\n' "${runs[@]}"; exit 0; fi
[[ -e $SHIM ]] || { echo "green_hp_check: $SHIM missing (BUILD=$BUILD: build target mosaic)" >&2; exit 2; }
MPSCTL=$(command -v nvidia-cuda-mps-control || echo /usr/local/nvidia/bin/nvidia-cuda-mps-control)
mps_pipe=/tmp/green-hp-mps-$$
stop_mps() { [[ -d $mps_pipe ]] && CUDA_MPS_PIPE_DIRECTORY=$mps_pipe "$MPSCTL" <<<quit >/dev/null 2>&1; sleep 1; }
trap stop_mps EXIT
started=0
for r in "${runs[@]}"; do
  mode=${r%%:*} what=${r#*:}
  if [[ $mode == mps && $started == 0 ]]; then
    mkdir -p "$mps_pipe" "$OUT/mps-log"
    CUDA_MPS_PIPE_DIRECTORY=$mps_pipe CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log "$MPSCTL" -d || echo "mps: did not start"
    started=1; sleep 1
  fi
  envs=()
  [[ $mode == mps ]] && envs+=("CUDA_MPS_PIPE_DIRECTORY=$mps_pipe")
  case $what in
    none) ;;
    shim) envs+=("LD_PRELOAD=$SHIM" MOSAIC_ROLE=hp MOSAIC_LOG=info) ;;
    sms*) envs+=("LD_PRELOAD=$SHIM" MOSAIC_ROLE=hp MOSAIC_LOG=info "MOSAIC_HP_SMS=${what#sms}") ;;
  esac
  env "${envs[@]}" python3 "$PY" --requests "$REQUESTS" >"$OUT/$mode.$what.json" 2>"$OUT/$mode.$what.err"
  echo "$mode.$what rc=$?" >>"$OUT/rc.txt"
done
printf '%-12s %8s %8s %8s %8s %6s %6s  %s\n' run host50 host99 ev50 ev99 stale final shim-says
for r in "${runs[@]}"; do
  f=$OUT/${r/:/.}.json
  python3 - "$f" "${f%.json}.err" "$r" <<'PYEOF'
import json, sys
try:
    d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except Exception:
    print(f"{sys.argv[3]:<12} failed: " + (open(sys.argv[2]).read().strip().splitlines() or ["?"])[-1][:100]); sys.exit()
says = [l.strip()[:70] for l in open(sys.argv[2]) if "mosaic" in l and ("green" in l or "SM" in l)]
print(f"{sys.argv[3]:<12} {d['host_p50_ms']:8.3f} {d['host_p99_ms']:8.3f} {d['event_p50_ms']:8.3f} {d['event_p99_ms']:8.3f} {d['stale_after_sync']:6d} {str(d['final_ok']):>6}  {says[0] if says else ''}")
PYEOF
done
