#!/usr/bin/env bash
# Installs the SDK component of the build into a temp prefix, builds the installed plugin template
# (sdk/template, which docs/plugin-authors/sdk.md shows file by file) against it out of tree, runs its unit test,
# checks that the plugin exports only the entry symbol, and runs it in the host.
# usage: run.sh <build-dir> <kuscia-host binary>
set -euo pipefail
build=$1
host=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# docs/plugin-authors/sdk.md must show each template file exactly: a block from the line naming the file to its
# closing fence.
for f in heartbeat.h heartbeat.cc heartbeat_test.cc CMakeLists.txt; do
  pattern=$(printf '%s' "$f" | sed 's/\./\\./g')
  sed -n "/^\(\/\/\|#\) $pattern: /,/^\`\`\`\$/p" "$root/docs/plugin-authors/sdk.md" | sed '$d' >"$work/readme.$f"
  if ! diff "$root/sdk/template/$f" "$work/readme.$f" >&2; then
    echo "docs/plugin-authors/sdk.md's $f differs from sdk/template/$f" >&2
    exit 1
  fi
done

cmake --install "$build" --component sdk --prefix "$work/prefix" >/dev/null
template="$work/prefix/share/kuscia-host-sdk/template"
test -f "$work/prefix/include/kuscia_host/abi.h"
test -f "$template/CMakeLists.txt"
# The consumer is built without the parent's sanitizer flags: a plain plugin in any host.
env -u CXXFLAGS -u LDFLAGS cmake -S "$template" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
ctest --test-dir "$work/build" --output-on-failure >/dev/null
so="$work/build/heartbeat.so"

# The helper must turn an unresolved symbol into a build error, not a dlopen failure later.
mkdir -p "$work/undefined"
cat >"$work/undefined/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(undefined CXX)
find_package(kuscia-host-sdk REQUIRED)
kuscia_host_add_plugin(undefined SOURCES undefined.cc)
CMAKE
cat >"$work/undefined/undefined.cc" <<'CXX'
#include <kuscia_host/plugin.hpp>
int notDefinedAnywhere();
class Undefined final : public kuscia_host::sdk::Plugin {
public:
  Undefined(kuscia_host::sdk::Host h, std::string_view, std::string_view) : Plugin(h) { notDefinedAnywhere(); }
};
KH_PLUGIN(Undefined, "undefined", "1", "")
CXX
env -u CXXFLAGS -u LDFLAGS cmake -S "$work/undefined" -B "$work/undefined/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
if cmake --build "$work/undefined/build" >"$work/undefined.log" 2>&1; then
  echo "a plugin with an undefined symbol linked: kuscia_host_add_plugin must refuse it" >&2
  exit 1
fi
grep -q "notDefinedAnywhere" "$work/undefined.log" || { cat "$work/undefined.log" >&2; exit 1; }

exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sort)
if [ "$exported" != "kh_plugin_entry_v1" ]; then
  echo "expected only kh_plugin_entry_v1 exported, got: $exported" >&2
  exit 1
fi

beat=$("$root/tests/support/heartbeat_runs.sh" "$host" "$so" "$work/run")
echo "sdk consumer: the installed template built out of tree, its unit test passed, exports only" \
  "kh_plugin_entry_v1; $beat; an undefined symbol fails the build"
