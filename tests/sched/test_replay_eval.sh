#!/usr/bin/env bash
# Replay against the simulated GPU, side by side (docs/replay.md): the eval
# setup of scripts/arbiter_eval.sh recorded with `mosaic-sched record` (the
# HP service alone, the BE trainer alone, each under the shim), replayed
# through every policy at p in {1.1, 1.25, 1.6}, and compared with the real
# simulated-GPU runs that scripts/arbiter_eval.sh makes of the same
# programs and kernels. Prints a markdown table (HP p99 on the GPU span, as
# arbiter_eval scores it, and from the host, and BE steps/s of each, with
# the replay's % difference) and writes both results as JSON.
# With REPLAY_EVAL_REUSE=1 and OUT_DIR holding a run's traces and
# arbiter.json, only the replays and the table are made again.
# About 3 minutes on a loaded 2-core machine; not a ctest (the arbiter's own
# ctest already spends that long), run by hand for docs/replay.md.
#
#   tests/sched/test_replay_eval.sh BUILD_DIR [OUT_DIR]
set -euo pipefail
. "$(dirname "$0")/simgpu_env.sh"
sim_env replay-eval "${1:?usage: test_replay_eval.sh BUILD_DIR [OUT_DIR]}" hp_service be_trainer
out=${2:-$(mktemp -d)}
mkdir -p "$out"
trap sim_cleanup EXIT

# The eval setup's kernels and pacing, as scripts/arbiter_eval.sh has them.
hp_args=(--requests 150 --warmup 3 --gap-ms 16
  --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,8,16|block=8,8,1|dsmem=7808'
  --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976'
  --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=28,4,8|block=32,16,1|dsmem=24192')
be_args=(--seconds 3
  --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=16,4,32|block=16,16,1|dsmem=14976'
  --kernel '_Z9k_conv3x3PKfS0_Pfiiii|grid=1,16,8|block=16,16,1|dsmem=14976')

reuse=${REPLAY_EVAL_REUSE:-0}
[ "$reuse" = 1 ] || "$bin/simgpu" create "$MOSAIC_SIMGPU" >/dev/null
if [ "$reuse" != 1 ]; then
  sim_record "$out/hp.trace" hp "$out/record.log" "$bin/hp_service" "${hp_args[@]}" \
    > "$out/hp.record.json"
  sim_record "$out/be.trace" be "$out/record.log" "$bin/be_trainer" "${be_args[@]}" \
    > "$out/be.record.json"
  "$bin/simgpu" rm "$MOSAIC_SIMGPU" >/dev/null
fi

t0=$(date +%s.%N)
for p in 1.1 1.25 1.6; do
  for policy in none mps-priority hold-be orion mosaic; do
    "$bin/mosaic-sched" --config /dev/null --policy "$policy" --slo "$p" \
      --profile-dir "$profiles" --model-dir "$models" --log-level error \
      replay --mode full --warmup 3 --be-lead-ms 300 --json "$out/hp.trace" "$out/be.trace" \
      > "$out/replay-$policy-$p.json"
  done
done
t1=$(date +%s.%N)
echo "15 replays took $(python3 -c "print(f'{$t1 - $t0:.2f}')") s of wall time"

[ "$reuse" = 1 ] ||
  "$root/scripts/arbiter_eval.sh" --build "$build" --setups eval --json "$out/arbiter.json"

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
arb = json.load(open(os.path.join(out, "arbiter.json")))
st = arb["setups"][0]
real = {(r["p"], r["policy"]): r for r in st["runs"]}
rows, worst = [], {"hp": 0.0, "host": 0.0, "be": 0.0}
within = {"hp": 0, "host": 0, "be": 0}
def d(a, b):
    return 100.0 * (a - b) / b
print(f"arbiter_eval {arb['date']}: HP isolated p99 {st['hp_isolated_p99_ms']:.2f} ms GPU span, "
      f"{st['hp_isolated_host_p99_ms']:.2f} ms host, BE isolated {st['be_isolated_steps_per_s']:.1f} steps/s")
print("| p | policy | HP p99 ms, GPU span: real | replay | diff | HP p99 ms, host: real | replay | diff "
      "| % over p (GPU span): real | replay | BE steps/s: real | replay | diff |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for p in (1.1, 1.25, 1.6):
    for pol in ("none", "mps-priority", "hold-be", "orion", "mosaic"):
        rp = json.load(open(os.path.join(out, f"replay-{pol}-{p}.json")))
        r = real.get((p, pol))
        if r is None:
            print(f"| {p:.2f} | {pol} | - | {rp['hp_gpu_p99_ms']:.2f} | - | - | {rp['hp_p99_ms']:.2f} | - "
                  f"| - | {rp['over_p_gpu_pct']:.1f} | - | {rp['be_steps_per_s']:.1f} | - |")
            continue
        dh = d(rp["hp_gpu_p99_ms"], r["hp_p99_ms"])
        dt = d(rp["hp_p99_ms"], r["host_p99_ms"])
        db = d(rp["be_steps_per_s"], r["be_steps_per_s"])
        for k, v in (("hp", dh), ("host", dt), ("be", db)):
            worst[k] = max(worst[k], abs(v))
            within[k] += abs(v) <= 10.0
        rows.append({"p": p, "policy": pol, "real": r, "replay": rp, "hp_diff_pct": dh,
                     "host_diff_pct": dt, "be_diff_pct": db})
        print(f"| {p:.2f} | {pol} | {r['hp_p99_ms']:.2f} | {rp['hp_gpu_p99_ms']:.2f} | {dh:+.1f}% | "
              f"{r['host_p99_ms']:.2f} | {rp['hp_p99_ms']:.2f} | {dt:+.1f}% | "
              f"{r['over_p_pct']:.1f} | {rp['over_p_gpu_pct']:.1f} | {r['be_steps_per_s']:.1f} | "
              f"{rp['be_steps_per_s']:.1f} | {db:+.1f}% |")
n = len(rows)
print(f"within 10%: HP p99 GPU span {within['hp']}/{n}, host {within['host']}/{n}, BE {within['be']}/{n}; "
      f"largest |difference|: {worst['hp']:.1f}%, {worst['host']:.1f}%, {worst['be']:.1f}%")
json.dump({"schema": "mosaic-replay-eval/2", "arbiter": arb, "rows": rows, "worst": worst,
           "within_10pct": within},
          open(os.path.join(out, "replay_eval.json"), "w"), indent=1)
PY
