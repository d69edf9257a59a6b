#!/usr/bin/env bash
# The OCI image of kuscia-host, made from the project's own .deb packages (dist/) on a root of
# Debian bookworm built from the Debian archive, then tested through its root filesystem (this
# machine's podman can build and export images, not run them).
#
#   packaging/image.sh DIST OUT
#
# The root holds what the packages need to run and nothing else: their shared-library
# dependencies, unpacked from the archive (mmdebstrap --variant=extract: no maintainer script
# runs, no shell, no package manager), the packages themselves unpacked, a passwd and group
# naming the user kuscia-host (65532), /tmp and the state directory. The image runs as that user
# with kuscia-host as its entrypoint (default command: `run --config
# /etc/kuscia-host/kuscia-host.yaml`). OUT gets the root, the Containerfile and
# kuscia-host-<version>.oci.tar (`podman load -i` takes it), whose path is the last line printed.
set -euo pipefail

dist=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
say() { printf '\033[1m==> %s\033[0m\n' "$*"; }

host_deb=$(ls "$dist"/kuscia-host_*_amd64.deb)
version=$(dpkg-deb -f "$host_deb" Version)
version=${version%-*} # the upstream version, without the package revision
debs=("$host_deb" "$dist"/kuscia-host-plugin-*_amd64.deb)

# Every package the .debs depend on but themselves and adduser (their maintainer scripts' only
# need): the first of each alternative, without versions.
deps=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
  sed -e 's/|.*//' -e 's/(.*)//' -e 's/ //g' | grep -v -e '^$' -e '^kuscia-host' -e '^adduser$' |
  sort -u | paste -sd, -)
say "a bookworm root from the Debian archive with the packages' dependencies: $deps"
rm -rf "$out/root"
mmdebstrap --quiet --variant=extract --include="$deps" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
  bookworm "$out/root"
say "the packages unpacked into it: ${debs[*]##*/}"
for d in "${debs[@]}"; do dpkg-deb -x "$d" "$out/root"; done
# What extract leaves or the packages bring that a container does not run: the package manager's
# state and caches, systemd units, documentation, glibc's character set converters (8 MiB; nothing
# here calls iconv).
rm -rf "$out/root"/var/lib/apt "$out/root"/var/cache/apt "$out/root"/var/lib/dpkg \
  "$out/root"/usr/lib/x86_64-linux-gnu/gconv \
  "$out/root"/usr/share/doc "$out/root"/usr/share/man "$out/root"/lib/systemd "$out/root"/usr/lib/systemd \
  "$out/root"/etc/apt
mkdir -p "$out/root/tmp" "$out/root/var/lib/kuscia-host" "$out/root/etc" "$out/root/proc" "$out/root/dev"
chmod 1777 "$out/root/tmp"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nkuscia-host:x:65532:65532:kuscia-host:/var/lib/kuscia-host:/usr/sbin/nologin\n' \
  >"$out/root/etc/passwd"
printf 'root:x:0:\nkuscia-host:x:65532:\n' >"$out/root/etc/group"
chown -R 65532:65532 "$out/root/var/lib/kuscia-host"
if [ -e "$out/root/bin/sh" ] || [ -e "$out/root/usr/bin/sh" ] || [ -e "$out/root/usr/bin/bash" ]; then
  echo "image: a shell came with the dependencies; the image must need none" >&2
  exit 1
fi

say "the image (podman build, FROM scratch)"
tar -C "$out/root" --numeric-owner -cf "$out/rootfs.tar" .
cat >"$out/Containerfile" <<EOF
FROM scratch
ADD rootfs.tar /
USER 65532:65532
WORKDIR /var/lib/kuscia-host
ENTRYPOINT ["/usr/bin/kuscia-host"]
CMD ["run", "--config", "/etc/kuscia-host/kuscia-host.yaml"]
EXPOSE 9464 9465
LABEL org.opencontainers.image.title="kuscia-host" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.description="Task-startup observability for Kuscia: the host and every bundled plugin" \\
      org.opencontainers.image.licenses="Apache-2.0"
EOF
tag="localhost/kuscia-host:$version"
podman build --quiet --tag "$tag" --file "$out/Containerfile" "$out" >/dev/null
archive="$out/kuscia-host-$version.oci.tar"
rm -f "$archive"
podman save --quiet --format oci-archive --output "$archive" "$tag"

say "testing the image as its archive loads (podman load) through its root filesystem"
podman rmi --force "$tag" >/dev/null
podman load --quiet --input "$archive" >/dev/null
podman image exists "$tag" || { echo "image: podman load of $archive gave no $tag" >&2; exit 1; }
"$(dirname "$0")/test-image.sh" "$tag" "$out/test"
size=$(podman image inspect --format '{{.Size}}' "$tag")
say "image $tag: $((size / 1024 / 1024)) MiB ($(du -sh "$archive" | cut -f1) archived)"
echo "$archive"
