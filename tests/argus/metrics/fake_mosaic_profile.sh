#!/usr/bin/env bash
# A stand-in for `mosaic-profile capture` (no GPU here): argus-shim
# --hw-metrics runs it as `mosaic-profile capture -o OUT -- CMD...`. It
# checks those arguments, runs CMD (as the capture does), writes the
# profile FAKE_PROFILE_SRC to OUT with FAKE_PROFILE_PROBLEM (if set) as its
# one problem and every counter removed (what a refused counter session
# leaves), and exits FAKE_PROFILE_RC (mosaic-profile's statuses: 0, 2, 3,
# 4, 5).
set -euo pipefail
[[ $1 == capture && $2 == -o && $4 == -- ]] || { echo "fake mosaic-profile: bad arguments: $*" >&2; exit 1; }
out=$3
shift 4
"$@" >/dev/null 2>&1 || true
python3 - "$FAKE_PROFILE_SRC" "$out" "${FAKE_PROFILE_PROBLEM:-}" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
if sys.argv[3]:
    p["problems"] = [sys.argv[3]]
    p["complete"] = False
    for k in p["kernels"]:
        k["metrics"] = {key: None for key in k["metrics"]}
json.dump(p, open(sys.argv[2], "w"))
PY
exit "${FAKE_PROFILE_RC:-0}"
