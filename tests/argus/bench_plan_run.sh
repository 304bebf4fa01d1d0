#!/usr/bin/env bash
# The planner's and workspace's own cost with the synthesis running
# (docs/argus-plan.md, "The planner's own cost"): `argus query --run` of
# async_latency,region_time on region mainloop of async_cpasync's registry
# with N = 1, 2, 4, 8 operations given by --discovered (outside loops: one
# probe each), a fresh workspace each time, an sh executor that writes
# argus.evidence v1 with a device-model region buffer (gen_async_raw,
# 2 CTAs x 4 warps, 3,968 B raw) per region_runtime collection; wall time
# of the whole command, median of REPEATS; the files' bytes, du -sb (files
# and directory entries) and the number of files.
# usage: bench_plan_run.sh ARGUS GEN_ASYNC_RAW SRC_DIR WORK [REPEATS]
set -euo pipefail
argus=$1 gen=$(realpath "$2") src=$3 work=$4 reps=${5:-3}
rm -rf "$work" && mkdir -p "$work"
"$argus" registry "$src/async_cpasync.cu" -o "$work/cp.argus.json" >/dev/null
touch "$work/cp"
cat >"$work/exec.sh" <<EOF
#!/bin/sh
kind=\$1; shift
if [ "\$kind" = transform ]; then printf 'variant %s\n' "\$2" >"\$6"; exit 0; fi
v=\$1 b=\$2; shift 3
"$gen" "$work/raw.\$\$"
raw=\$(base64 -w0 "$work/raw.\$\$"); rm -f "$work/raw.\$\$"
for be in \$(echo "\$b" | tr , ' '); do
  case \$be in
  region_runtime) extra=",\"launches\":[{\"kernel\":\"k\",\"raw_base64\":\"\$raw\",\"clock_ghz\":1.98}]" ;;
  nvtx) extra=',"report":{"schema":"argus.report","version":1,"regions":[]}' ;;
  *) extra='' ;;
  esac
  printf '{"schema":"argus.evidence","version":1,"backend":"%s","variant":"%s","status":"ok"%s}' \
      "\$be" "\$v" "\$extra" >"\$1"; shift
done
EOF
chmod +x "$work/exec.sh"
printf '| probes | wall (ms) | file bytes | du -sb bytes | files | again, all reused (ms) |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
for n in 1 2 4 8; do
    python3 - "$n" >"$work/ops$n.json" <<'PY'
import json, sys
print(json.dumps([{"id": "0xe693e43.%d" % k, "kind": "cp.async", "completion": "cp.async.wait_group",
                   "in_loop": False} for k in range(int(sys.argv[1]))]))
PY
    walls=() agains=()
    for r in $(seq "$reps"); do
        ws=$work/ws$n.$r
        t0=$(date +%s%N)
        "$argus" query --program "$work/cp" --registry "$work/cp.argus.json" --region mainloop \
            --signal async_latency,region_time --assume-all --discovered "$work/ops$n.json" \
            --executor "$work/exec.sh" --ws "$ws" --run >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
        t1=$(date +%s%N)
        "$argus" query --program "$work/cp" --registry "$work/cp.argus.json" --region mainloop \
            --signal async_latency,region_time --assume-all --discovered "$work/ops$n.json" \
            --executor "$work/exec.sh" --ws "$ws" --run >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
        t2=$(date +%s%N)
        walls+=($(( (t1 - t0) / 1000000 ))) agains+=($(( (t2 - t1) / 1000000 )))
    done
    med() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
    ws=$work/ws$n.1
    printf '| %d | %s | %s | %s | %s | %s |\n' "$n" "$(med "${walls[@]}")" \
        "$(find "$ws" -type f -printf '%s\n' | awk '{s += $1} END {print s}')" \
        "$(du -sb "$ws" | cut -f1)" "$(find "$ws" -type f | wc -l)" "$(med "${agains[@]}")"
done
