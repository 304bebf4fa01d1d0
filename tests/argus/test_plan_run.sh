#!/usr/bin/env bash
# argus query --run: a plan executed through the runtime on a workspace
# (docs/argus-plan.md, "Running a plan"), with a stand-in executor that
# writes its arguments as the artifacts and evidence. Checked: every task
# done and the CONTROL task's probe branches added while running; the
# evidence of each run holds its variant and backends; a second run reuses
# everything; a branch whose executor fails fails alone (the rest done, the
# final synthesis skipped) and the next run runs only that branch; a plan
# with a CONTROL task and no --discovered, and --run without --executor,
# are refused.
# usage: test_plan_run.sh ARGUS SRC_DIR WORK_DIR
set -euo pipefail
argus=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
has() { grep -qF -- "$2" "$work/$1" || { cat "$work/$1" >&2; fail "$1 lacks: $2"; }; }
count() { grep -c -E -- "$2" "$work/$1" || true; }

expect_rc 0 "$argus" registry "$src/kernel_known.cu" -o "$work/known.argus.json"
touch "$work/known"
cat >"$work/ops.json" <<'JSON'
[{"id": "0x23ce102.0", "kind": "cp.async", "completion": "cp.async.wait_group", "in_loop": true},
 {"id": "0x23ce102.1", "kind": "tma", "completion": "mbarrier", "in_loop": true}]
JSON
# The executor: a transformation writes what it made from what; a run
# writes, per collection, its variant, backends and the artifact's first
# line. With $work/fail present it fails every probe of iteration 5.
cat >"$work/exec.sh" <<EXEC_END
#!/bin/sh
kind=\$1; shift
case "\$*" in *iter=5*) [ -e "$work/fail" ] && { echo "cannot build \$2" >&2; exit 3; } ;; esac
case \$kind in
transform) printf 'variant %s by %s from %s\n' "\$2" "\$1" "\$(head -n1 "\$3" 2>/dev/null)" >"\$6" ;;
run) v=\$1 b=\$2 a=\$3; shift 3
     for o; do printf 'run of %s with %s on %s\n' "\$v" "\$b" "\$(head -n1 "\$a")" >"\$o"; done ;;
*) exit 9 ;;
esac
EXEC_END
chmod +x "$work/exec.sh"
q=(--program "$work/known" --region outer --signal region_time,async_latency --iter 4:5
   --assume-all --discovered "$work/ops.json" --executor "$work/exec.sh")

expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws" --run
# 1 transform + 1 run + 2 syntheses + control before; 4 branches of 3 after;
# the final synthesis: 17 runtime tasks.
[[ $(count out '^done ') == 17 ]] || { cat "$work/out"; fail "17 tasks done"; }
has out "t4 = control:discover_async_ops@v1"
has out "run0 = v1: collect:region_trace@v1 collect:host_ranges@v1"
has out "= v5: collect:probe_trace@v5"
# The evidence of the probe runs names their variants, built from the
# marked variant.
python3 - "$work/ws" <<'PY'
import glob, sys
texts = [open(p).read() for p in glob.glob(sys.argv[1] + "/objects/*/*")]
probes = [t for t in texts if t.startswith("run of known+markers_on+probe(")]
assert len(probes) == 4, texts
assert all(" with region_runtime on variant known+markers_on+probe(" in t for t in probes), probes
base = [t for t in texts if t.startswith("run of known+markers_on with region_runtime,nvtx on "
                                         "variant known+markers_on by markers_on")]
assert len(base) == 1, texts  # both collections wrote the same bytes: one object
PY

# The same query again: everything reused but the CONTROL task, which
# always runs (its branches exist only in memory).
expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws" --run
[[ $(count out '^reused ') == 16 ]] || { cat "$work/out"; fail "16 tasks reused"; }
[[ $(count out '^done ') == 1 ]] || fail "only the control task runs"

# A failing branch on a fresh workspace: iteration 5's probes fail.
touch "$work/fail"
expect_rc 1 "$argus" query "${q[@]}" --ws "$work/ws2" --run
has err "some tasks failed"
[[ $(count out '^failed .*cannot build known\+markers_on\+probe\(op=0x23ce102\.[01],iter=5\)') == 2 ]] \
    || { cat "$work/out"; fail "two failed probe transforms"; }
[[ $(count out '^done ') == 10 ]] || { cat "$work/out"; fail "10 tasks done beside the failed branches"; }
[[ $(count out '^skipped ') == 5 ]] || { cat "$work/out"; fail "2 x 2 branch tasks and the final synthesis skipped"; }
# Fixed: only the failed branches (and the final synthesis) run again.
rm "$work/fail"
expect_rc 0 "$argus" query "${q[@]}" --ws "$work/ws2" --run
[[ $(count out '^done ') == 8 ]] || { cat "$work/out"; fail "2 branches x 3, the control and the final synthesis done"; }
[[ $(count out '^reused ') == 9 ]] || { cat "$work/out"; fail "9 reused"; }

# Refused.
expect_rc 1 "$argus" query --program "$work/known" --signal async_latency --assume-all --run \
    --executor "$work/exec.sh" --ws "$work/ws3"
has err "give what it finds with --discovered"
expect_rc 1 "$argus" query --program "$work/known" --signal region_time --assume-all --run \
    --ws "$work/ws3"
has err "running a plan needs an executor"
echo "argus_plan_run: ok"
