#!/bin/sh
# packaging/bench_results.py turns what a bench run printed into the results table: every line
# against a target under the step that printed it, and nothing else; a log without one is an error.
set -eu
script=$1/packaging/bench_results.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '\033[1m==> [0:01] benchmark: Kubernetes client B1 (watch ingest), B2 (memory/pod)\033[0m\n  B1 ratio: 23.2x the Go baseline (target >= 20x)\nprogress noise\n\033[1m==> [9:59] benchmark: B8 task history\033[0m\n  page p99 6.9 ms | stats (target <= 20 ms)\n' >"$work/bench.log"
python3 "$script" "$work/bench.log" "$work/results.md" --commit abc1234 >/dev/null
grep -qx '| Kubernetes client B1, B2 | B1 ratio: 23.2x the Go baseline (target >= 20x) |' "$work/results.md"
grep -qx '| B8 task history | page p99 6.9 ms \\| stats (target <= 20 ms) |' "$work/results.md"
if grep -q 'progress noise' "$work/results.md"; then
  echo "a line without a target was taken" >&2
  exit 1
fi
grep -qx -- '- commit: `abc1234`' "$work/results.md"
printf 'no figures here\n' >"$work/empty.log"
if python3 "$script" "$work/empty.log" "$work/none.md" 2>/dev/null; then
  echo "a log without figures was accepted" >&2
  exit 1
fi
echo "bench_results.py: ok"
