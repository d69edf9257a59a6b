#!/bin/sh
# kuscia-host under callgrind, as L1's --host: the host's user-space instructions, a figure that
# does not move with what else the machine runs, as its CPU seconds do (docs/development/benchmarks.md).
#
#   KH_HOST=build-release/bin/kuscia-host build-release/tests/timeline_bench --only L1 \
#     --load-tasks 100 --load-window 10 --host tests/bench/host_under_callgrind.sh
#   callgrind_annotate /tmp/kh-callgrind.<pid> 2>/dev/null | head -30
#
# The host runs about 50 times slower: at 100 tasks it lags the driver and catches up, which L1
# waits for. KH_CALLGRIND_OUT changes the output's prefix (default /tmp/kh-callgrind).
exec valgrind --tool=callgrind --dump-instr=no \
  --callgrind-out-file="${KH_CALLGRIND_OUT:-/tmp/kh-callgrind}.%p" \
  "${KH_HOST:?set KH_HOST to the kuscia-host binary}" "$@"
