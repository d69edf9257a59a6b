#!/usr/bin/env bash
# kuscia-host developer setup: installs what is missing, builds, runs, tests.
#
#   packaging/setup.sh run     build the binary and the plugins, then run `kuscia-host demo`
#                              (arguments are passed on, e.g. --p2p; Ctrl-C stops it)
#   packaging/setup.sh test    build with warnings as errors and run every test under ASan+UBSan and
#                              again under TSan (clang), build the packages (clang) and test them
#                              (installs and purges them on this machine), lint with clang-tidy
#   packaging/setup.sh bench   build optimised (build-release/), run the benchmarks at full size and
#                              write their figures to docs/development/benchmark-results.md
#   packaging/setup.sh fuzz [SECONDS]  build the libFuzzer harnesses (build-fuzz/, clang, ASan+UBSan)
#                              and run each for SECONDS (default 300); a report per harness
#   packaging/setup.sh soak [ARGS]     the chaos soak (tests/soak/chaos_soak.py; default 200 tasks)
#                              on build-release/
#   packaging/setup.sh package build the .deb and .rpm packages into dist/ (build-package/, for /usr,
#                              with Debian's hardening flags), lint them and test them
#   packaging/setup.sh image   the OCI image from those packages on a Debian bookworm root
#                              (build-image/, podman), tested through its root filesystem; its
#                              archive's path is the last line
#   packaging/setup.sh build   only install dependencies and build (build/)
#   packaging/setup.sh deps    only install missing Debian packages
#   packaging/setup.sh format  reformat the sources with clang-format
#
# Environment: BUILD_DIR (default build), JOBS (default: number of cores), KH_SKIP_SANITIZE=1
# makes `test` one plain build, the suite and the linter instead (CI never sets it).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}

# What `run` needs: the compilers and build tools, and the libraries the binary and the bundled
# plugins link. Nothing else, so that a fresh machine reaches the demo quickly.
run_packages=(
  cmake ninja-build clang g++ pkgconf libboost1.81-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  libyaml-cpp-dev libssl-dev zlib1g-dev libzstd-dev libjemalloc-dev libsimdjson-dev libcli11-dev
  libsqlite3-dev libpq-dev
)
# What the tests, the linter and the benchmarks need beside them.
packages=(
  "${run_packages[@]}" clang-format clang-tidy curl binutils openssl libgtest-dev libgmock-dev
  libbenchmark-dev python3-kubernetes python3-prometheus-client chromium prometheus sqlite3 postgresql
)

started_at=$(date +%s)
# Progress lines carry the time since the command started.
say() {
  local t=$(($(date +%s) - started_at))
  printf '\033[1m==> [%d:%02d] %s\033[0m\n' $((t / 60)) $((t % 60)) "$*" >&2
}

# deps [package...]: installs the missing ones among `packages` and the extra ones given;
# RUN_ONLY=1: among `run_packages` instead.
deps() {
  local missing=() wanted=("$@")
  if [ "${RUN_ONLY:-0}" = 1 ]; then wanted+=("${run_packages[@]}"); else wanted+=("${packages[@]}"); fi
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "dependencies: all ${#wanted[@]} Debian packages present"
    return
  fi
  say "installing ${#missing[@]} missing Debian package(s): ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# build/ (run, build and the quick test loop): clang, unity builds of up to sixteen sources.
dev_flags=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_UNITY_BUILD=ON
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)

# configure_and_build DIR [cmake args...]; TARGETS (optional): build only those targets
configure_and_build() {
  local dir=$1
  shift
  say "configuring $dir"
  cmake -S "$root" -B "$dir" -G Ninja "$@" >/dev/null
  if [ -n "${TARGETS:-}" ]; then
    say "building $TARGETS in $dir ($jobs jobs)"
    # shellcheck disable=SC2086
    cmake --build "$dir" --parallel "$jobs" --target $TARGETS
  else
    say "building $dir ($jobs jobs)"
    cmake --build "$dir" --parallel "$jobs"
  fi
}

# B1's instructions per event, counted by callgrind inside Informer::ingest only (these machines
# have no hardware counters); the target is at most 75k.
b1_instructions() {
  say "benchmark: B1 instructions per event (callgrind, 3,000 events; takes a minute or two)"
  local out log events ir
  out=$(mktemp)
  log=$(valgrind --tool=callgrind --callgrind-out-file="$out" \
    --toggle-collect='kuscia_host::kube::Informer::ingest*' \
    "$root/build-release/tests/kube_bench" --only B1 --events 1000 2>/dev/null)
  events=$(sed -n 's/.*(ingested \([0-9]*\) events.*/\1/p' <<<"$log")
  ir=$(sed -n 's/^totals: \([0-9]*\).*/\1/p' "$out")
  rm -f "$out"
  if [ -z "$events" ] || [ -z "$ir" ] || [ "$events" -eq 0 ]; then
    say "B1 instructions: callgrind gave no count"
    return 1
  fi
  printf '  B1 instructions: %d per event inside Informer::ingest (target <= 75000)\n' $((ir / events))
}

# clang-tidy (.clang-tidy) over the daemon's and the plugins' sources; needs a configured build.
lint() {
  local dir=$1
  say "linting with clang-tidy"
  # packaging/lint.py: every unit of the build's compile database that holds a tracked source of
  # host/, plugins/ or tests/ (tests/sdk_consumer is built out of tree, tests/fuzz only with
  # KH_FUZZ); a unity build's file lints its sources together.
  if ! python3 "$root/packaging/lint.py" "$dir" --jobs "$jobs"; then
    say "clang-tidy found problems (see above)"
    return 1
  fi
}

# lintian, rpmlint and rpmbuild for the packages; dpkg-dev for dpkg-shlibdeps and dpkg-buildflags.
package_tools=(lintian rpmlint rpm dpkg-dev fakeroot clang)

# build_packages: dist/ gets every .deb and .rpm, built from build-package/ (prefix /usr, Debian's
# hardening flags as the only flags (build type None, as debhelper builds), no tests). clang, with
# warnings as errors: at -O2 it builds these sources in half GCC's time (GCC builds the template in
# the package test). A unity build, as every other tree, to keep CI within its time: compiling each
# source alone was meant to prove that every source includes what it uses, which the precompiled
# heavy headers (nlohmann, Asio, spdlog, the containers) already made only partly true.
build_packages() {
  local flags
  export DEB_BUILD_MAINT_OPTIONS=hardening=+all
  # No debug information: CPack strips the binaries anyway, and -g doubles the compile time.
  export DEB_CFLAGS_MAINT_STRIP=-g DEB_CXXFLAGS_MAINT_STRIP=-g
  flags="$(dpkg-buildflags --get CPPFLAGS)"
  CFLAGS="$(dpkg-buildflags --get CFLAGS) $flags" CXXFLAGS="$(dpkg-buildflags --get CXXFLAGS) $flags" \
    LDFLAGS="$(dpkg-buildflags --get LDFLAGS)" configure_and_build "$root/build-package" \
    -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=None -DKH_BUILD_TESTS=OFF \
    -DKH_BUILD_BENCH=OFF -DKH_PLUGIN_HEARTBEAT=OFF -DKH_WERROR=ON -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++
  say "packaging (cpack: DEB and RPM)"
  rm -rf "$root/build-package/dist" "$root/dist"
  (cd "$root/build-package" && cpack >/dev/null)
  mkdir -p "$root/dist"
  cp "$root"/build-package/dist/*.deb "$root"/build-package/dist/*.rpm "$root/dist/"
  say "packages in dist/: $(cd "$root/dist" && echo *)"
}

test_packages() {
  say "testing the packages (lintian, rpmlint, contents, the -dev package, install and purge)"
  "$root/packaging/test-packages.sh" "$root/dist"
}

run_tests() {
  local dir=$1
  say "testing $dir"
  ctest --test-dir "$dir" --output-on-failure --parallel "$jobs" --timeout 300
}

check_format() {
  say "checking formatting (clang-format)"
  local files
  files=$(cd "$root" && git ls-files --cached --others --exclude-standard '*.h' '*.hpp' '*.cc' '*.c' 2>/dev/null || true)
  [ -n "$files" ] || return 0
  (cd "$root" && clang-format --dry-run --Werror $files)
}

# bench_all: every benchmark at full size (what `bench` runs, its output also in bench.log).
bench_all() {
  # wrk: B6's baseline; golang-go: B1's Go baseline; valgrind: B1's instruction count.
  deps wrk golang-go valgrind
  configure_and_build "$root/build-release" -DCMAKE_BUILD_TYPE=Release -DKH_BUILD_TESTS=ON
  say "benchmark: embedded API server (watch fan-out, paged LIST)"
  taskset -c 0,1 "$root/build-release/tests/apiserver_bench"
  say "building the Go baseline for B1 (encoding/json, standard library only)"
  (cd "$root/tests/bench/go" && GOPATH="$root/build-release/go" GOCACHE="$root/build-release/go-cache" \
    GOPROXY=off go build -o "$root/build-release/tests/b1decode" .)
  say "benchmark: Kubernetes client B1 (watch ingest), B2 (memory/pod), B5 (initial sync), B6 (write ceiling)"
  taskset -c 0,1 "$root/build-release/tests/kube_bench" --host "$root/build-release/bin/kuscia-host" \
    --go "$root/build-release/tests/b1decode"
  b1_instructions
  say "benchmark: timeline plugins B3 (Ready -> status patch), B4 (writes per task startup), L1 (load)"
  taskset -c 0,1 "$root/build-release/tests/timeline_bench" --host "$root/build-release/bin/kuscia-host"
  say "benchmark: L1 alone and beside 100,000 finished tasks (history within 10% of the work)"
  taskset -c 0,1 "$root/build-release/tests/timeline_bench" --host "$root/build-release/bin/kuscia-host" \
    --only L1 --load-tasks 1000 --load-finished 100000
  say "benchmark: L1 without and with task-history (what recording costs per task)"
  taskset -c 0,1 "$root/build-release/tests/timeline_bench" --host "$root/build-release/bin/kuscia-host" \
    --only L1 --load-tasks 1000 --load-history on --load-pairs 5
  say "benchmark: B8 task history, 1,000,000 recorded tasks in SQLite and PostgreSQL (about 4 GB of disk for a few minutes)"
  taskset -c 0,1 "$root/build-release/tests/history_bench" --tasks 1000000
}

cmd=${1:-}
case "$cmd" in
  deps)
    deps
    ;;
  build)
    deps
    configure_and_build "$build_dir" "${dev_flags[@]}" -DKH_BUILD_TESTS=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo
    ;;
  run)
    RUN_ONLY=1 deps
    # Only what the demo runs, built for a short wait: clang, no optimisation and no debug
    # information, up to sixteen sources a compiler run (from a fresh clone about a minute and a
    # half on 2 cores, against three minutes for GCC's -O2). The demo's work is small.
    TARGETS="kuscia-host plugins" configure_and_build "$build_dir" "${dev_flags[@]}" \
      -DKH_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
      -DCMAKE_C_FLAGS_DEBUG=-O0
    say "running kuscia-host demo: an embedded cluster, domains alice and bob, three tasks (Ctrl-C stops it)"
    exec "$build_dir/bin/kuscia-host" demo --plugin-dir "$build_dir/plugins" "${@:2}"
    ;;
  test)
    deps
    check_format
    if [ "${KH_SKIP_SANITIZE:-0}" = 1 ]; then
      # The quick local loop: one plain build, the suite, the linter.
      configure_and_build "$build_dir" "${dev_flags[@]}" -DKH_BUILD_TESTS=ON -DKH_WERROR=ON \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo
      run_tests "$build_dir"
      lint "$build_dir"
    else
      # CI: the suite under ASan+UBSan (benchmarks' smoke included) and under TSan, built by clang
      # with warnings as errors; clang-tidy and the package build meanwhile; then the packages
      # tested. Sanitizer builds use -O0 with line tables only (-g1): every report keeps
      # file:line. clang, not GCC: on 2 cores it builds the sanitized tree in 5 minutes where GCC
      # takes 11 (these are Beast-heavy sources).
      deps "${package_tools[@]}"
      # Unity builds (up to sixteen sources of a target per compiler run): the Beast, Asio and
      # nlohmann headers are compiled once per unit, and clang-tidy walks them once per unit
      # (10 CPU-minutes for the tree instead of about 25). The package build is one too.
      local_flags=(-DKH_WERROR=ON -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -g1"
        "-DCMAKE_C_FLAGS_DEBUG=-O0 -g1" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++
        -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
      # The ASan tree also builds the libFuzzer harnesses, which ctest runs for a few seconds each
      # (Fuzz.*): the seeds, the regressions, some mutation. Coverage instrumentation of the whole
      # tree would make it build a third slower; `setup.sh fuzz` has it for the long runs.
      configure_and_build "$build_dir-asan" "${local_flags[@]}" -DKH_SANITIZE=address -DKH_FUZZ=ON \
        -DKH_FUZZ_COVERAGE=OFF
      # clang-tidy, then the package build, run from here in the background at the lowest
      # priority: they take the CPU the test runs leave idle and yield to the TSan build. Their
      # output is printed once they are done.
      (
        renice -n 19 -p "$BASHPID" >/dev/null
        lint "$build_dir-asan"
        say "clang-tidy: clean"
        build_packages
      ) >"$build_dir-asan/background.log" 2>&1 &
      background_pid=$!
      # A failing test ends the script: the background goes with it.
      trap 'pkill -P "$background_pid" 2>/dev/null; kill "$background_pid" 2>/dev/null || true' EXIT
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        run_tests "$build_dir-asan"
      # TSan looks for races: the host and its plugins' threads, not the single-threaded plugin
      # logic (plugin_tests) or the out-of-tree SDK build, which ASan already ran.
      configure_and_build "$build_dir-tsan" "${local_flags[@]}" -DKH_SANITIZE=thread \
        -DKH_BUILD_BENCH=OFF
      TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp" \
        run_tests "$build_dir-tsan"
      say "waiting for clang-tidy and the package build (background)"
      background_rc=0
      wait "$background_pid" || background_rc=$?
      # Their progress lines, and on failure everything they printed.
      if [ "$background_rc" -ne 0 ]; then
        cat "$build_dir-asan/background.log" >&2
        say "clang-tidy or the package build failed (above)"
        exit 1
      fi
      trap - EXIT
      grep -a '==>' "$build_dir-asan/background.log" >&2 || true
      test_packages
    fi
    say "all tests passed"
    ;;
  package)
    deps "${package_tools[@]}"
    build_packages
    test_packages
    ;;
  image)
    deps "${package_tools[@]}" podman buildah mmdebstrap uidmap
    # The packages of this tree: built when dist/ has none, or older ones than the sources.
    newest=$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)
    if ! ls "$root"/dist/kuscia-host_*_amd64.deb >/dev/null 2>&1 ||
      [ "$(stat -c %Y "$(ls "$root"/dist/kuscia-host_*_amd64.deb | head -1)")" -lt "$newest" ]; then
      build_packages
    fi
    "$root/packaging/image.sh" "$root/dist" "$root/build-image"
    ;;
  fuzz)
    deps
    say "configuring $root/build-fuzz"
    cmake -S "$root" -B "$root/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1" -DCMAKE_C_COMPILER=clang \
      -DCMAKE_CXX_COMPILER=clang++ -DKH_SANITIZE=address -DKH_FUZZ=ON -DKH_BUILD_BENCH=OFF >/dev/null
    say "building the harnesses ($jobs jobs)"
    cmake --build "$root/build-fuzz" --parallel "$jobs" --target fuzzers
    say "fuzzing: every harness for ${2:-300} s, $jobs at a time (logs in build-fuzz/tests/fuzz/logs)"
    "$root/tests/fuzz/run.sh" --bin "$root/build-fuzz/tests/fuzz" --seconds "${2:-300}" --jobs "$jobs"
    ;;
  soak)
    deps
    configure_and_build "$root/build-release" -DCMAKE_BUILD_TYPE=Release -DKH_BUILD_TESTS=ON
    say "chaos soak (tests/soak/chaos_soak.py ${*:2})"
    "$root/tests/soak/chaos_soak.py" "$root/build-release/bin/kuscia-host" "$root/build-release/plugins" "${@:2}"
    ;;
  bench)
    mkdir -p "$root/build-release"
    built=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown) # what the run builds
    bench_all 2>&1 | tee "$root/build-release/bench.log"
    # The run's figures, written by the run: the one results table docs/development links.
    python3 "$root/packaging/bench_results.py" "$root/build-release/bench.log" \
      "$root/docs/development/benchmark-results.md" --commit "$built"
    ;;
  format)
    (cd "$root" && clang-format -i $(git ls-files --cached --others --exclude-standard '*.h' '*.hpp' '*.cc' '*.c'))
    ;;
  *)
    sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
