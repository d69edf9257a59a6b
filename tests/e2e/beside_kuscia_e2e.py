#!/usr/bin/python3
"""config/docker/beside-kuscia.sh against a stand-in Docker client (no Kuscia container here):
it reads the Kuscia container's root and copies its kubeconfig, writes a host config for the
domain that check-config accepts (p2p, the kubeconfig, Envoy's admin at 127.0.0.1:10000, the
history on the volume), and runs the image in the Kuscia container's network namespace with the
config read-only and the history on a named volume. A container that is not running is refused.

usage: beside_kuscia_e2e.py <kuscia-host> <plugin-dir>
"""
import os
import subprocess
import sys
import tempfile

import yaml

from e2e_support import check

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
script = os.path.join(root, "config/docker/beside-kuscia.sh")
work = tempfile.mkdtemp()
calls = os.path.join(work, "calls")
# The stand-in: answers as Docker would for a running kuscia-autonomy-alice whose KUSCIA_HOME is
# /home/kuscia, and records every call.
fake = os.path.join(work, "docker")
with open(fake, "w") as f:
    f.write("""#!/bin/sh
echo "$*" >> %s
case "$1" in
  inspect) [ "$4" = kuscia-autonomy-alice ] && echo true || echo false ;;
  exec) echo /home/kuscia ;;
  cp) cat > "$3" <<'KUBECONFIG'
apiVersion: v1
kind: Config
clusters:
  - name: default
    cluster: { server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true }
users:
  - name: default
    user: { token: "k3s-token" }
contexts:
  - name: default
    context: { cluster: default, user: default }
current-context: default
KUBECONFIG
  ;;
esac
""" % calls)
os.chmod(fake, 0o755)
env = dict(os.environ, DOCKER=fake)

r = subprocess.run([script, "alice", "registry.example.com/kuscia-host:0.1.0"], cwd=work, env=env,
                   capture_output=True, text=True, timeout=60)
check(r.returncode == 0, "the script runs: " + r.stdout + r.stderr)
log = open(calls).read().splitlines()
check("cp kuscia-autonomy-alice:/home/kuscia/etc/kubeconfig %s/kuscia-host-alice/kubeconfig" % work in log,
      "the kubeconfig comes from Kuscia's root: %s" % log)
run = [c for c in log if c.startswith("run ")]
check(len(run) == 1 and "--network container:kuscia-autonomy-alice" in run[0] and
      "--volume %s/kuscia-host-alice:/etc/kuscia-host:ro" % work in run[0] and
      "--volume kuscia-host-alice-history:/var/lib/kuscia-host" in run[0] and
      run[0].endswith("registry.example.com/kuscia-host:0.1.0"),
      "the image runs in Kuscia's network namespace, its config read-only, its history on a volume: %s" % run)
config = yaml.safe_load(open(os.path.join(work, "kuscia-host-alice/kuscia-host.yaml")))
plugins = {p["name"]: p.get("config", {}) for p in config["domains"][0]["plugins"]}
check(config["mode"] == "p2p" and config["domains"][0]["id"] == "alice" and
      config["cluster"] == {"kubeconfig": "/etc/kuscia-host/kubeconfig"} and
      plugins["gateway-ready-time"]["envoyAdminUrl"] == "http://127.0.0.1:10000" and
      plugins["task-history"]["database"].startswith("/var/lib/kuscia-host/"),
      "the host config: p2p, the domain, Kuscia's kubeconfig, Envoy's admin, the history's volume")
# check-config reads it as the container would (the kubeconfig where it is here).
config["cluster"]["kubeconfig"] = os.path.join(work, "kuscia-host-alice/kubeconfig")
path = os.path.join(work, "check.yaml")
yaml.safe_dump(config, open(path, "w"))
r = subprocess.run([host_bin, "check-config", "--config", path, "--plugin-dir", plugin_dir],
                   capture_output=True, text=True, timeout=60)
check(r.returncode == 0, "check-config accepts it: " + r.stdout + r.stderr)
r = subprocess.run([script, "bob"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
check(r.returncode == 1 and "kuscia-autonomy-bob is not running" in r.stderr,
      "a Kuscia container that is not running is named: " + r.stderr)
print("PASS: beside-kuscia.sh")
