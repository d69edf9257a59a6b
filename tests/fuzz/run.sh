#!/usr/bin/env bash
# Runs the libFuzzer harnesses of a KH_FUZZ build, each for a given time, and reports executions,
# coverage and crashes per harness.
#
#   tests/fuzz/run.sh --bin DIR [--seconds N] [--only NAME] [--jobs J]
#
# --bin      the build's tests/fuzz directory (packaging/setup.sh fuzz passes build-fuzz/tests/fuzz)
# --seconds  fuzzing time per harness (default 60)
# --only     one harness (e.g. fuzz_http)
# --jobs     harnesses run at once (default: the number of cores)
#
# Each harness first runs every input of its committed seed corpus (tests/fuzz/corpus/NAME) and of
# its regressions (tests/fuzz/regressions/NAME, inputs that once crashed it), then fuzzes. New
# inputs go to DIR/corpus/NAME (kept between runs), crashes to DIR/artifacts/NAME/, the log to
# DIR/logs/NAME.log. Exit status 1 when any harness crashed, leaked or timed out.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin="" seconds=60 only="" jobs=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
[ -n "$bin" ] || { echo "run.sh: --bin DIR is required" >&2; exit 2; }

# Which dictionary helps which harness.
declare -A dicts=(
  [fuzz_watch_stream]=json [fuzz_projection]=json [fuzz_patch]=json [fuzz_http]=http
  [fuzz_host_config]=yaml [fuzz_kubeconfig]=yaml
)
harnesses=()
for f in "$bin"/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  [ -z "$only" ] || [ "$name" = "$only" ] || continue
  harnesses+=("$name")
done
if [ ${#harnesses[@]} -eq 0 ]; then
  echo "run.sh: no harness${only:+ named $only} in $bin (configure with -DKH_FUZZ=ON)" >&2
  exit 2
fi

one() {
  local name=$1 corpus="$bin/corpus/$1" art="$bin/artifacts/$1" log="$bin/logs/$1.log"
  local dict=() seeds=("$here/corpus/$name")
  mkdir -p "$corpus" "$art" "$bin/logs"
  [ -z "${dicts[$name]:-}" ] || dict=(-dict="$here/dict/${dicts[$name]}.dict")
  [ ! -d "$here/regressions/$name" ] || seeds+=("$here/regressions/$name")
  # -timeout: one input may take 25 s at most; -rss_limit_mb: the harness may not grow past 3 GB.
  # ASAN_OPTIONS: no leak check per input (libFuzzer does its own at the end of each run).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin/$name" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$art/" "${dict[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1
}

status=0
pids=() names=()
for name in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
  echo "fuzzing $name for ${seconds}s" >&2
  one "$name" &
  pids+=($!) names+=("$name")
done

printf '%-20s %12s %10s %8s %8s %8s  %s\n' harness executions exec/s cov ft corpus result
for i in "${!pids[@]}"; do
  name=${names[$i]} log="$bin/logs/${names[$i]}.log"
  if wait "${pids[$i]}"; then result=ok; else result="FAILED (see $log)"; status=1; fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-20s %12s %10s %8s %8s %8s  %s\n' "$name" "${execs:--}" "${rate:--}" "${cov:--}" \
    "${ft:--}" "${corp:--}" "$result"
  if [ "$result" != ok ]; then
    grep -E 'ERROR: |invariant broken|SUMMARY|Test unit written|fatal error|Tracer caught' "$log" | head -5 | sed 's/^/    /' >&2
  fi
done
exit $status
