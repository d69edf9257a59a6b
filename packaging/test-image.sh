#!/usr/bin/env bash
# Tests an image of kuscia-host through its root filesystem (podman here builds and exports
# images but cannot run them: crun refuses the sandbox's cgroups): its configuration (the user,
# the entrypoint, the command), what its root holds (the binary, every bundled plugin, no shell),
# and, in a mount namespace chrooted into that root as its user, `kuscia-host version`, the
# plugins' commands and the demo.
#
#   packaging/test-image.sh IMAGE WORKDIR
set -euo pipefail

image=$1
work=$(mkdir -p "$2" && cd "$2" && pwd)
root="$work/root"
fail() { echo "image test: FAIL: $*" >&2; exit 1; }
ok() { echo "image test: ok - $*"; }

[ "$(podman image inspect --format '{{.Config.User}}' "$image")" = "65532:65532" ] || fail "not the user 65532"
ok "runs as 65532:65532 (kuscia-host), not root"
[ "$(podman image inspect --format '{{json .Config.Entrypoint}}' "$image")" = '["/usr/bin/kuscia-host"]' ] ||
  fail "the entrypoint is not /usr/bin/kuscia-host"
[ "$(podman image inspect --format '{{json .Config.Cmd}}' "$image")" = '["run","--config","/etc/kuscia-host/kuscia-host.yaml"]' ] ||
  fail "the default command is not run --config /etc/kuscia-host/kuscia-host.yaml"
ok "the entrypoint is the binary itself (exec form, no shell), its command runs the packaged config"

rm -rf "$root" && mkdir -p "$root"
cid=$(podman create "$image")
podman export "$cid" | tar -C "$root" -xf -
podman rm "$cid" >/dev/null
[ -x "$root/usr/bin/kuscia-host" ] || fail "no /usr/bin/kuscia-host"
plugins=$(find "$root/usr/lib" -path '*/kuscia-host/plugins/*.so' -printf '%f\n' | sort | paste -sd' ')
for p in task-timeline gateway-ready-time scheduler-time task-history otel-export sim-agent; do
  case " $plugins " in *" $p.so "*) ;; *) fail "no $p.so among the plugins: $plugins" ;; esac
done
ok "the root holds the binary and every bundled plugin: $plugins"
for sh in bin/sh bin/bash bin/dash usr/bin/sh usr/bin/bash usr/bin/dash; do
  [ ! -e "$root/$sh" ] || fail "a shell in the root: /$sh"
done
ok "no shell in the root"

# In a mount namespace: /proc and /dev for the process, the root as /, its user.
inside() {
  unshare --mount --fork -- bash -c '
    root=$1; shift
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    exec chroot --userspec=65532:65532 "$root" "$@"' inside "$root" "$@"
}
out=$(inside /usr/bin/kuscia-host version) || fail "kuscia-host version: $out"
echo "$out" | grep -q '^kuscia-host ' || fail "version prints no version: $out"
ok "kuscia-host version, as kuscia-host in the image's root: $(echo "$out" | head -1)"
help=$(inside /usr/bin/kuscia-host --help) || fail "--help: $help"
echo "$help" | grep -q 'timeline' && echo "$help" | grep -q 'history' ||
  fail "the plugins' commands are not listed (the plugins did not load): $help"
ok "the plugins load: their commands timeline and history are listed"
demo=$(inside /usr/bin/kuscia-host demo --tasks 2 --phase-millis 200 --exit-when-done \
  --admin-listen 127.0.0.1:0 --work-dir /tmp/demo 2>&1) || fail "the demo failed: $demo"
echo "$demo" | grep -q 'demo-task-2: ready in' || fail "the demo's tasks did not start: $demo"
ok "the demo runs in the image's root: $(echo "$demo" | grep -c 'ready in') tasks ready"
