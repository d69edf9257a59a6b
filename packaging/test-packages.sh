#!/usr/bin/env bash
# Tests the packages in DIST (packaging/setup.sh package builds them):
#   1. lintian and rpmlint are clean;
#   2. every package holds what it must (binary, man page, conffile, unit, sysusers, plugins, SDK);
#   3. the plugin template from the extracted -dev package alone builds with g++ and clang++ (CMake,
#      and pkg-config), its unit test passes, and the plugin runs in the extracted packaged host;
#   4. installed with dpkg: the user exists, check-config accepts the installed config, the unit
#      verifies, the host runs as the service user against its embedded API server with the
#      packaged plugins from the default plugin directory, an edited config survives a reinstall,
#      and purge leaves nothing behind.
# usage: test-packages.sh DIST   (as root, or with sudo)
set -euo pipefail
dist=$(cd "${1:?usage: test-packages.sh DIST}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
trap 'status=$?; [ -n "${pid:-}" ] && $sudo kill "$pid" 2>/dev/null; rm -rf "$work"; exit $status' EXIT

step() { printf '  - %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

host_deb=$(ls "$dist"/kuscia-host_*.deb)
dev_deb=$(ls "$dist"/kuscia-host-dev_*.deb)
plugin_debs=$(ls "$dist"/kuscia-host-plugin-*.deb)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
plugin_dir=/usr/lib/$multiarch/kuscia-host/plugins

# 1. Linters. Tags suppressed because they cannot apply here, each with its reason:
#  - initial-upload-closes-no-bugs: a package outside the Debian archive has no ITP bug to close.
step "lintian (--fail-on error,warning)"
lintian --fail-on error,warning --suppress-tags initial-upload-closes-no-bugs \
  "$dist"/*.deb >"$work/lintian.log" 2>&1 || {
  cat "$work/lintian.log" >&2
  fail "lintian"
}
step "rpmlint"
rpmlint -c "$here/rpmlint.toml" "$dist"/*.rpm >"$work/rpmlint.log" 2>&1 || {
  cat "$work/rpmlint.log" >&2
  fail "rpmlint"
}
grep -q " 0 errors, 0 warnings" "$work/rpmlint.log" || {
  cat "$work/rpmlint.log" >&2
  fail "rpmlint reported problems"
}

# 2. Contents.
step "package contents"
contents() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's|^\./|/|'; }
expect() { # expect DEB PATH...
  local deb=$1 list p
  shift
  list=$(contents "$deb")
  for p in "$@"; do
    grep -qx "$p" <<<"$list" || fail "$(basename "$deb") lacks $p"
  done
}
expect "$host_deb" /usr/bin/kuscia-host /usr/share/man/man1/kuscia-host.1.gz \
  /etc/kuscia-host/kuscia-host.yaml /usr/lib/systemd/system/kuscia-host.service \
  /usr/lib/sysusers.d/kuscia-host.conf /usr/share/doc/kuscia-host/copyright \
  /usr/share/doc/kuscia-host/changelog.Debian.gz /usr/share/kuscia-host/prometheus/kuscia-host-rules.yml \
  /usr/share/kuscia-host/prometheus/kuscia-host-alerts.yml /usr/share/kuscia-host/grafana/kuscia-host.json
[ "$(dpkg-deb -f "$host_deb" Package)" = kuscia-host ] || fail "host package name"
dpkg-deb --ctrl-tarfile "$host_deb" | tar -xO ./conffiles | grep -qx /etc/kuscia-host/kuscia-host.yaml ||
  fail "the config is not a conffile"
version=$(dpkg-deb -f "$host_deb" Version)
# The daemon runs on jemalloc (KH_JEMALLOC): dpkg-shlibdeps must have found it.
dpkg-deb -f "$host_deb" Depends | tr ',' '\n' | grep -q "^ *libjemalloc2\b" ||
  fail "kuscia-host must depend on libjemalloc2: $(dpkg-deb -f "$host_deb" Depends)"
for p in task-timeline gateway-ready-time scheduler-time otel-export task-history sim-agent; do
  deb=$(ls "$dist"/kuscia-host-plugin-${p}_*.deb)
  expect "$deb" "$plugin_dir/$p.so"
  dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/^ *//' | grep -qx "kuscia-host (= $version)" ||
    fail "kuscia-host-plugin-$p must depend on kuscia-host (= $version): $(dpkg-deb -f "$deb" Depends)"
done
expect "$dev_deb" /usr/include/kuscia_host/abi.h /usr/include/kuscia_host/plugin.hpp \
  /usr/share/cmake/kuscia-host-sdk/kuscia-host-sdkConfig.cmake \
  /usr/share/cmake/kuscia-host-sdk/kuscia-host-sdkConfigVersion.cmake \
  /usr/share/pkgconfig/kuscia-host-sdk.pc \
  /usr/share/kuscia-host-sdk/template/CMakeLists.txt
# The SDK is the plugin contract only: the Kuscia model (model/) is not part of it.
if dpkg-deb -c "$dev_deb" | grep -qE 'kuscia_host/(timeline|timeline_summary|pod_events)\.hpp|kuscia_model/'; then
  fail "the -dev package ships the Kuscia model's headers: the SDK is the plugin contract only"
fi
rpm_config=$(rpm -qcp "$dist"/kuscia-host-0*.rpm 2>/dev/null)
[ "$rpm_config" = /etc/kuscia-host/kuscia-host.yaml ] || fail "rpm %config: '$rpm_config'"
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$dist"/kuscia-host-0*.rpm 2>/dev/null |
  grep -q "^cn /etc/kuscia-host/kuscia-host.yaml" || fail "rpm config is not %config(noreplace)"
rpm -qp --requires "$dist"/kuscia-host-plugin-task-timeline-*.rpm 2>/dev/null |
  grep -qx "kuscia-host = $version" || fail "the task-timeline rpm must require kuscia-host = $version"
rpm -qp --scripts "$dist"/kuscia-host-0*.rpm 2>/dev/null | grep -q useradd || fail "rpm %pre adds no user"
rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}:%{FILEGROUPNAME} %{FILENAMES}\n]' "$dist"/kuscia-host-0*.rpm \
  2>/dev/null | grep -qx "drwxr-x--- kuscia-host:kuscia-host /var/lib/kuscia-host" ||
  fail "the rpm's state directory is not the service user's, 0750"
[ "$(dpkg-deb -f "$dev_deb" Architecture)" = all ] || fail "kuscia-host-dev must be Architecture: all"
ls "$dist"/kuscia-host-devel-*.noarch.rpm >/dev/null 2>&1 || fail "no noarch kuscia-host-devel rpm"

# 3. The -dev package alone: the template with g++ and clang++, and through pkg-config.
dpkg-deb -x "$dev_deb" "$work/dev"
dpkg-deb -x "$host_deb" "$work/host"
template="$work/dev/usr/share/kuscia-host-sdk/template"
for cxx in g++ clang++; do
  step "the -dev package's template with $cxx"
  env -u CXXFLAGS -u CPPFLAGS -u LDFLAGS cmake -S "$template" -B "$work/template-$cxx" -G Ninja \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$work/dev/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    >"$work/cmake-$cxx.log" 2>&1 || {
    cat "$work/cmake-$cxx.log" >&2
    fail "configuring the template with $cxx"
  }
  # The SDK must come from the extracted package, never from this source tree.
  grep -q "kuscia-host-sdk_DIR:PATH=$work/dev/" "$work/template-$cxx/CMakeCache.txt" ||
    fail "the template did not use the extracted SDK"
  cmake --build "$work/template-$cxx" >"$work/build-$cxx.log" 2>&1 || {
    cat "$work/build-$cxx.log" >&2
    fail "building the template with $cxx"
  }
  ctest --test-dir "$work/template-$cxx" --output-on-failure >"$work/ctest-$cxx.log" 2>&1 || {
    cat "$work/ctest-$cxx.log" >&2
    fail "the template's unit test with $cxx"
  }
done
step "pkg-config --cflags kuscia-host-sdk"
pc_flags=$(PKG_CONFIG_PATH="$work/dev/usr/share/pkgconfig" pkg-config --cflags kuscia-host-sdk)
# Relocatable: the include directory is found from the .pc file's own place.
pc_include=$(sed -n 's/^-I\([^ ]*\).*/\1/p' <<<"$pc_flags")
[ -n "$pc_include" ] && [ "$(readlink -f "$pc_include")" = "$work/dev/usr/include" ] ||
  fail "pkg-config --cflags: $pc_flags"
g++ -std=c++17 -shared -fPIC -fvisibility=hidden $pc_flags -o "$work/pc-heartbeat.so" "$template/heartbeat.cc"

for cxx in g++ clang++; do
  step "the $cxx template plugin runs in the extracted packaged host"
  "$here/../tests/support/heartbeat_runs.sh" "$work/host/usr/bin/kuscia-host" \
    "$work/template-$cxx/heartbeat.so" "$work/run-$cxx" >/dev/null || fail "the $cxx plugin did not run"
done
step "the pkg-config-built plugin runs in the extracted packaged host"
"$here/../tests/support/heartbeat_runs.sh" "$work/host/usr/bin/kuscia-host" "$work/pc-heartbeat.so" \
  "$work/run-pc" >/dev/null || fail "the pkg-config-built plugin did not run"

# 4. Installed.
step "dpkg -i (host, plugins, -dev)"
$sudo dpkg -i "$host_deb" $plugin_debs "$dev_deb" >"$work/dpkg.log" 2>&1 || {
  cat "$work/dpkg.log" >&2
  fail "dpkg -i"
}
installed_files=$(dpkg -L kuscia-host $(for d in $plugin_debs "$dev_deb"; do dpkg-deb -f "$d" Package; done))
getent passwd kuscia-host >/dev/null || fail "no kuscia-host user after install"
[ "$(getent passwd kuscia-host | cut -d: -f7)" = /usr/sbin/nologin ] || fail "the user has a login shell"
step "check-config on the installed default config"
kuscia-host check-config --config /etc/kuscia-host/kuscia-host.yaml >"$work/check.log" 2>&1 || {
  cat "$work/check.log" >&2
  fail "check-config /etc/kuscia-host/kuscia-host.yaml"
}
step "systemd-analyze verify"
systemd-analyze verify /usr/lib/systemd/system/kuscia-host.service >"$work/verify.log" 2>&1 || true
[ ! -s "$work/verify.log" ] || {
  cat "$work/verify.log" >&2
  fail "systemd-analyze verify printed something"
}
step "the host as kuscia-host against its embedded API server, plugins from $plugin_dir"
svc="$work/svc"
mkdir -p "$svc"
cat >"$svc/kuscia-host.yaml" <<YAML
admin: { listen: 127.0.0.1:0 }
cluster: { embedded: { listen: 127.0.0.1:0 } }
domains:
  - id: alice
    plugins:
      - name: task-timeline
      - name: gateway-ready-time
      - name: scheduler-time
      - name: otel-export
        config: { endpoint: "http://127.0.0.1:9" }
      - name: task-history
YAML
chmod 0755 "$work" "$svc"
chmod 0644 "$svc/kuscia-host.yaml"
# The background job opens its redirection asynchronously: the file exists before the poll reads it.
: >"$svc/err"
$sudo runuser -u kuscia-host -- kuscia-host run --config "$svc/kuscia-host.yaml" 2>"$svc/err" &
pid=$!
ready=""
for _ in $(seq 1 150); do
  port=$(sed -n 's/.*admin server listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$svc/err")
  if [ -n "$port" ] && curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
    ready=1
    break
  fi
  sleep 0.1
done
[ -n "$ready" ] || fail "the installed host never became ready: $(cat "$svc/err")"
curl -fsS "http://127.0.0.1:$port/api/v1/timelines" | grep -q '"tasks"' || fail "no timeline route"
curl -fsS "http://127.0.0.1:$port/api/v1/history" | grep -q '"items"' || fail "no history route"
# task-history's default database, in the state directory the package made: the service user's
# alone.
db=/var/lib/kuscia-host/history.db
[ "$(stat -c '%U:%G %a' /var/lib/kuscia-host)" = "kuscia-host:kuscia-host 750" ] ||
  fail "/var/lib/kuscia-host: $(stat -c '%U:%G %a' /var/lib/kuscia-host)"
[ "$(stat -c '%U %a' "$db" 2>/dev/null)" = "kuscia-host 600" ] ||
  fail "$db: $(stat -c '%U %a' "$db" 2>&1)"
# runuser's child is the host; SIGTERM goes to it, as systemd would send it (runuser itself
# would end its session with a failure status).
host_pid=$(pgrep -P "$pid" -x kuscia-host) || fail "no kuscia-host process under runuser"
[ "$(ps -o user= -p "$host_pid")" = kuscia-host ] || fail "the host did not run as kuscia-host"
$sudo kill -TERM "$host_pid"
wait "$pid" || fail "the installed host did not stop cleanly: $(cat "$svc/err")"
pid=
grep -q "loaded plugin task-timeline .* from $plugin_dir/task-timeline.so" "$svc/err" ||
  fail "task-timeline was not loaded from the default plugin directory: $(cat "$svc/err")"

step "an edited config survives reinstalling the package"
echo "# edited by the operator" | $sudo tee -a /etc/kuscia-host/kuscia-host.yaml >/dev/null
$sudo dpkg -i "$host_deb" >"$work/dpkg2.log" 2>&1 || {
  cat "$work/dpkg2.log" >&2
  fail "reinstall"
}
grep -q "edited by the operator" /etc/kuscia-host/kuscia-host.yaml || fail "the edit was lost"

step "purge leaves nothing behind"
$sudo dpkg --purge kuscia-host-dev $(for d in $plugin_debs; do dpkg-deb -f "$d" Package; done) \
  kuscia-host >"$work/purge.log" 2>&1 || {
  cat "$work/purge.log" >&2
  fail "purge"
}
left=""
for f in $installed_files; do
  if [ -f "$f" ] || [ -L "$f" ]; then left="$left $f"; fi
done
for d in /etc/kuscia-host "/usr/lib/$multiarch/kuscia-host" /usr/include/kuscia_host \
  /usr/share/kuscia-host /usr/share/kuscia-host-sdk /usr/share/cmake/kuscia-host-sdk /usr/share/doc/kuscia-host*; do
  if [ -e "$d" ]; then left="$left $d"; fi
done
[ -z "$left" ] || fail "left after purge:$left"
[ ! -e /etc/kuscia-host ] || fail "/etc/kuscia-host left after purge"
[ ! -e /var/lib/kuscia-host ] || fail "/var/lib/kuscia-host left after purge"
! getent passwd kuscia-host >/dev/null || fail "the kuscia-host user is left after purge"
! getent group kuscia-host >/dev/null || fail "the kuscia-host group is left after purge"
echo "packages: lintian and rpmlint clean; contents, -dev template (g++, clang++, pkg-config)," \
  "install, service user, reinstall and purge all as expected"
