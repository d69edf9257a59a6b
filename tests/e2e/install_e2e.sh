#!/usr/bin/env bash
# `cmake --install BUILD --prefix P` puts everything under P (nothing elsewhere), and the installed
# binary finds the installed plugins by itself: a config that names plugins but no pluginDirs
# passes check-config, also after the whole tree was moved; DESTDIR works the same way.
# usage: install_e2e.sh BUILD-DIR
set -euo pipefail
build=${1:?usage: install_e2e.sh BUILD-DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok - $*"; }

cmake --install "$build" --prefix "$work/P" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail "cmake --install"
}
# Every file installed is under P.
outside=$(sed -n 's/^-- \(Installing\|Up-to-date\): //p' "$work/install.log" | grep -v "^$work/P/" || true)
[ -z "$outside" ] || fail "installed outside the prefix: $outside"
ok "cmake --install --prefix installs only under the prefix"

libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
for f in bin/kuscia-host "$libdir/kuscia-host/plugins/task-timeline.so" \
  "$libdir/kuscia-host/plugins/gateway-ready-time.so" "$libdir/kuscia-host/plugins/scheduler-time.so" \
  "$libdir/kuscia-host/plugins/sim-agent.so" etc/kuscia-host/kuscia-host.yaml \
  share/man/man1/kuscia-host.1.gz lib/systemd/system/kuscia-host.service \
  include/kuscia_host/abi.h share/cmake/kuscia-host-sdk/kuscia-host-sdkConfigVersion.cmake \
  share/pkgconfig/kuscia-host-sdk.pc share/kuscia-host-sdk/template/CMakeLists.txt; do
  [ -e "$work/P/$f" ] || fail "P/$f is missing"
done
ok "binary, plugins, config, man page, unit and SDK are under the prefix"

cat >"$work/plugins.yaml" <<YAML
admin: { listen: 127.0.0.1:0 }
domains:
  - id: alice
    plugins:
      - name: task-timeline
      - name: gateway-ready-time
YAML
check() { # check PREFIX: its binary names its own plugin directory and loads plugins from it
  local p=$1 out
  out=$("$p/bin/kuscia-host" version)
  grep -qx "plugin directory $p/$libdir/kuscia-host/plugins" <<<"$out" ||
    fail "version names another plugin directory than $p/$libdir/kuscia-host/plugins: $out"
  "$p/bin/kuscia-host" check-config --config "$work/plugins.yaml" >"$work/check.log" 2>&1 || {
    cat "$work/check.log" >&2
    fail "check-config with plugins from $p"
  }
  "$p/bin/kuscia-host" check-config --config "$p/etc/kuscia-host/kuscia-host.yaml" >/dev/null 2>&1 ||
    fail "the installed default config does not pass check-config"
}
check "$work/P"
ok "the installed host finds the installed plugins without pluginDirs"
mv "$work/P" "$work/Q"
check "$work/Q"
ok "and still does after the tree was moved"

DESTDIR="$work/stage" cmake --install "$build" --prefix /opt/kh >"$work/destdir.log" 2>&1 || {
  cat "$work/destdir.log" >&2
  fail "DESTDIR install"
}
[ -x "$work/stage/opt/kh/bin/kuscia-host" ] && [ -e "$work/stage/opt/kh/etc/kuscia-host/kuscia-host.yaml" ] ||
  fail "DESTDIR=D --prefix /opt/kh does not land in D/opt/kh"
ok "DESTDIR stages the same tree"
