#!/usr/bin/env bash
# `argus ws ls|show|gc|fork` (docs/argus-workspace.md): a version tree made
# and shown, a damaged object named and refused, collection, and
# workspace directories that must not be used.
# usage: test_ws_cli.sh ARGUS WORK_DIR
set -euo pipefail
argus=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && chmod 700 "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() { # expect_rc RC CMD...: runs CMD, checks its status, keeps stdout and stderr
    local want=$1; shift
    set +e; "$@" >"$work/out" 2>"$work/err"; local rc=$?; set -e
    [[ $rc == "$want" ]] || { cat "$work/out" "$work/err" >&2; fail "$* exited $rc, not $want"; }
}
ws=$work/ws
printf 'gemm v0\n' >"$work/v0.cubin"
printf 'gemm v1 BK=64\n' >"$work/v1.cubin"
printf 'gemm v2 BK=32\n' >"$work/v2.cubin"

# Nothing there yet: ls says so and creates nothing.
expect_rc 1 "$argus" ws --ws "$ws" ls
grep -q 'No such file' "$work/err" || fail "missing workspace: $(cat "$work/err")"
[[ ! -e $ws ]] || fail "ls created the workspace"

expect_rc 0 "$argus" ws --ws "$ws" fork "$work/v0.cubin" --label baseline
root=$(cat "$work/out")
[[ $root =~ ^[0-9a-f]{64}$ ]] || fail "fork printed '$root'"
expect_rc 0 "$argus" ws --ws "$ws" fork --from "${root:0:10}" "$work/v1.cubin" --label BK=64
v1=$(cat "$work/out")
expect_rc 0 "$argus" ws --ws "$ws" fork --from "$v1" "$work/v2.cubin" --label "BK=64 then 32"
v2=$(cat "$work/out")
[[ $(stat -c %a "$ws") == 700 ]] || fail "workspace mode $(stat -c %a "$ws")"

expect_rc 0 "$argus" ws --ws "$ws" ls
grep -q '0 tasks (0 damaged), 3 versions, 3 objects' "$work/out" || fail "ls: $(cat "$work/out")"
grep -q "${root:0:16}  parent (root)" "$work/out" || fail "ls root: $(cat "$work/out")"

# show walks a version's ancestry to the root.
expect_rc 0 "$argus" ws --ws "$ws" show "${v2:0:12}"
[[ $(grep -c '^ *version ' "$work/out") == 3 ]] || fail "show ancestry: $(cat "$work/out")"
grep -q "^    version $root \"baseline\"" "$work/out" || fail "show root: $(cat "$work/out")"

# An object is shown with its checked size; a damaged one is named.
art=$(sha256sum "$work/v1.cubin" | cut -d' ' -f1)
expect_rc 0 "$argus" ws --ws "$ws" show "$art"
grep -q 'bytes   14 (hash checked)' "$work/out" || fail "show object: $(cat "$work/out")"
printf 'gemm v1 BK=6' >"$ws/objects/${art:0:2}/$art"
expect_rc 1 "$argus" ws --ws "$ws" show "${art:0:8}"
grep -q "truncated or altered" "$work/err" || fail "damaged object: $(cat "$work/err")"
grep -q "$art" "$work/err" || fail "damaged object not named"

# Forking from something that is not a version, or from nothing.
expect_rc 1 "$argus" ws --ws "$ws" fork --from "${art:0:8}" "$work/v2.cubin"
grep -q 'is an object, not a program version' "$work/err" || fail "fork --from object"
expect_rc 1 "$argus" ws --ws "$ws" fork --from ffff0000 "$work/v2.cubin"
expect_rc 2 "$argus" ws --ws "$ws" show xyz
expect_rc 2 "$argus" ws --ws "$ws" frobnicate

# gc keeps the versions' programs and drops a loose object and stale temp files.
printf 'loose' >"$work/loose"
loose=$(sha256sum "$work/loose" | cut -d' ' -f1)
mkdir -p "$ws/objects/${loose:0:2}" && cp "$work/loose" "$ws/objects/${loose:0:2}/$loose"
printf 'partial' >"$ws/tmp/123.0.dead" && touch -d '-5 min' "$ws/tmp/123.0.dead"
expect_rc 0 "$argus" ws --ws "$ws" gc --dry-run
grep -q 'would remove 1 objects (5 bytes), 0 damaged manifests, 1 stale' "$work/out" || fail "gc dry: $(cat "$work/out")"
[[ -e $ws/objects/${loose:0:2}/$loose ]] || fail "dry run removed"
expect_rc 0 "$argus" ws --ws "$ws" gc
[[ ! -e $ws/objects/${loose:0:2}/$loose && ! -e $ws/tmp/123.0.dead ]] || fail "gc kept garbage"

# Directories that must not be used.
mkfifo "$work/fifo"
expect_rc 1 "$argus" ws --ws "$work/fifo" fork "$work/v0.cubin"
grep -q 'is a FIFO, not a workspace directory' "$work/err" || fail "fifo: $(cat "$work/err")"
ln -s "$ws" "$work/link"
expect_rc 1 "$argus" ws --ws "$work/link" ls
grep -q 'symbolic link' "$work/err" || fail "symlink: $(cat "$work/err")"
mkdir -m 777 "$work/open" && chmod 777 "$work/open"
expect_rc 1 "$argus" ws --ws "$work/open/ws" fork "$work/v0.cubin"
grep -q 'no sticky bit' "$work/err" || fail "world-writable parent: $(cat "$work/err")"
echo "argus ws CLI: ok"
