#!/usr/bin/env bash
# Prediction latency of this tree against an older revision, measured in one
# session so that both see the same machine load (issue 9):
#
#   tests/predictor/bench_compare.sh OLD_REV [RUNS] [CORE] [CALLS]
#
# Builds bench_predict twice in a temporary directory: from this working
# tree, and from OLD_REV (git archive, nothing checked out) with this
# tree's bench_predict.c copied in, so that both libraries are measured by
# the same protocol. Then runs them in turn, RUNS times each (default 5),
# pinned to CORE (default 1), and prints every table, then per row the
# range of p50 and p99 over the runs. Release builds (-O3), as a scheduler
# would link the library.
set -euo pipefail
old=${1:?usage: bench_compare.sh OLD_REV [RUNS] [CORE] [CALLS]}
runs=${2:-5}
core=${3:-1}
calls=${4:-20000}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mosaic-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
rev=$(git -C "$root" rev-parse --short "$old")

mkdir -p "$tmp/old-src"
git -C "$root" archive "$old" | tar -x -C "$tmp/old-src"
cp "$root/tests/predictor/bench_predict.c" "$tmp/old-src/tests/predictor/bench_predict.c"
for v in new old; do
  src=$root
  [ "$v" = old ] && src=$tmp/old-src
  cmake -S "$src" -B "$tmp/$v" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$tmp/$v" -j2 --target bench_predict >/dev/null
done

data=$root/profiler/data/h200
models=$root/predictor/models/h200
for i in $(seq 1 "$runs"); do
  for v in old new; do
    echo "== run $i, $v ($([ "$v" = old ] && echo "$rev" || echo "working tree"))"
    taskset -c "$core" "$tmp/$v/bin/bench_predict" "$data" "$models" "$calls" 2>/dev/null |
      tee "$tmp/$v.$i.txt"
  done
done

echo
echo "| library | mode | cache | p50 ns (min-max over $runs runs) | p99 ns (min-max) |"
echo "| --- | --- | --- | --- | --- |"
for v in old new; do
  cat "$tmp/$v".*.txt | awk -F' [|] ' -v lib="$([ "$v" = old ] && echo "$rev" || echo "this tree")" '
    /^[|] (partitioned|shared) / {
      m = substr($1, 3); k = m SUBSEP $2
      if (!(k in n)) { order[++rows] = k; lo50[k] = hi50[k] = $3; lo99[k] = hi99[k] = $4 }
      n[k]++
      if ($3 + 0 < lo50[k] + 0) lo50[k] = $3
      if ($3 + 0 > hi50[k] + 0) hi50[k] = $3
      if ($4 + 0 < lo99[k] + 0) lo99[k] = $4
      if ($4 + 0 > hi99[k] + 0) hi99[k] = $4
    }
    END {
      for (r = 1; r <= rows; r++) {
        split(order[r], f, SUBSEP)
        printf "| %s | %s | %s | %s-%s | %s-%s |\n", lib, f[1], f[2], lo50[order[r]],
               hi50[order[r]], lo99[order[r]], hi99[order[r]]
      }
    }'
done
