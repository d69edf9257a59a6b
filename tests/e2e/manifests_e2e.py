#!/usr/bin/python3
"""The Kubernetes manifests of config/ applied with the real kubectl to `kuscia-host apiserver`.

1. `kubectl apply` of the CRDs and of config/k8s creates every object; a second apply changes
   nothing.
2. The Deployment runs as non-root with a read-only root filesystem and no capabilities, probes
   /livez and /readyz on the admin port, requests resources, and mounts its ConfigMap.
3. The ConfigMap's host config is valid (check-config) and, with the cluster pointed at this API
   server instead of the pod's service account, a host runs with it and becomes ready.

usage: manifests_e2e.py <kuscia-host> <plugin-dir>
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

from e2e_support import check

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
work = tempfile.mkdtemp()
kubeconfig = os.path.join(work, "kubeconfig")
procs = []


def kubectl(*args):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(work, "cache"),
                        *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("FAIL: kubectl %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def manifests():
    return sorted(glob.glob(os.path.join(root, "config/crds/*.yaml"))) + \
        sorted(glob.glob(os.path.join(root, "config/k8s/*.yaml")))


def main():
    server = subprocess.Popen([host_bin, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(server)
    check("listening on" in server.stdout.readline(), "apiserver started")

    files = manifests()
    # rbac.yaml first: it creates the namespace the per-domain files use.
    files.sort(key=lambda f: (not f.endswith("rbac.yaml"), f))
    args = [a for f in files for a in ("-f", f)]
    out = kubectl("apply", *args)
    objects = [d for f in files for d in yaml.safe_load_all(open(f)) if d]
    for o in objects:
        name = o["metadata"]["name"]
        check(re.search(r"%s/%s created" % (re.escape(o["kind"].lower()), re.escape(name)), out.lower()) or
              re.search(r"/%s created" % re.escape(name), out),
              "%s %s created" % (o["kind"], name))
    again = kubectl("apply", *args)
    check(again.count("unchanged") == len(objects), "a second apply changes nothing:\n" + again)

    role = json.loads(kubectl("get", "clusterrole", "kuscia-host", "-o", "json"))
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    check(verbs <= {"list", "watch", "patch", "create"},
          "the ClusterRole grants only list, watch, patch and create: %s" % verbs)
    creates = {r for rule in role["rules"] if "create" in rule["verbs"] for r in rule["resources"]}
    check(creates == {"tokenreviews", "subjectaccessreviews"}, "it creates reviews only: %s" % creates)
    viewer = json.loads(kubectl("get", "clusterrole", "kuscia-host-viewer", "-o", "json"))
    check(viewer["rules"] == [{"nonResourceURLs": ["/metrics", "/readyz", "/api/*", "/ui", "/ui/*"],
                               "verbs": ["get"]}], "the viewer role: get on the admin paths only")

    deploy = json.loads(kubectl("get", "deployment", "kuscia-host-alice", "-n", "kuscia-host", "-o", "json"))
    pod = deploy["spec"]["template"]["spec"]
    c = pod["containers"][0]
    check(pod["serviceAccountName"] == "kuscia-host", "runs as the kuscia-host service account")
    check(pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0,
          "non-root")
    check(c["securityContext"]["readOnlyRootFilesystem"] is True and
          c["securityContext"]["allowPrivilegeEscalation"] is False and
          c["securityContext"]["capabilities"]["drop"] == ["ALL"], "read-only root, no escalation, no capabilities")
    check(c["livenessProbe"]["httpGet"]["path"] == "/livez" and c["readinessProbe"]["httpGet"]["path"] == "/readyz",
          "probes on /livez and /readyz")
    check(c["livenessProbe"]["httpGet"]["scheme"] == "HTTPS" and c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS",
          "the probes speak TLS")
    check(c["livenessProbe"]["httpGet"]["port"] == "admin" and
          any(p["name"] == "admin" and p["containerPort"] == 9464 for p in c["ports"]), "on the admin port")
    check("cpu" in c["resources"]["requests"] and "memory" in c["resources"]["limits"], "resources sized")
    mount = [m for m in c["volumeMounts"] if m["mountPath"] == "/etc/kuscia-host"]
    check(mount and c["args"] == ["run", "--config", "/etc/kuscia-host/kuscia-host.yaml"],
          "the config comes from the mounted ConfigMap")

    cm = json.loads(kubectl("get", "configmap", "kuscia-host-alice", "-n", "kuscia-host", "-o", "json"))
    config = yaml.safe_load(cm["data"]["kuscia-host.yaml"])
    check(config["cluster"] == {"inCluster": True} and config["admin"]["listen"].startswith("0.0.0.0:"),
          "in-cluster access, admin reachable by the kubelet's probes")
    check(config["admin"]["auth"] == "kubernetes" and config["admin"]["tls"]["certFile"].startswith("/etc/kuscia-host/tls/"),
          "the admin server serves TLS from the mounted Secret and asks the cluster who may read it")
    # Served as it is, off loopback with no authentication, the host would refuse to start.
    unsafe = dict(config, admin={"listen": "0.0.0.0:9464"})
    path = os.path.join(work, "unsafe.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(unsafe, f)
    r = subprocess.run([host_bin, "check-config", "--config", path, "--plugin-dir", plugin_dir],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "admin.auth" in r.stderr, "without admin.auth it is refused: " + r.stderr)
    # The same config against this API server and on loopback: it must run and become ready
    # (a generated certificate stands for the Secret's).
    config["cluster"] = {"kubeconfig": kubeconfig}
    config["admin"]["listen"] = "127.0.0.1:0"
    config["admin"]["tls"] = {"selfSigned": True}
    path = os.path.join(work, "kuscia-host.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    r = subprocess.run([host_bin, "check-config", "--config", path, "--plugin-dir", plugin_dir],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "check-config accepts the ConfigMap's config: " + r.stdout + r.stderr)
    for ns in ("alice", "cross-domain"):
        kubectl("create", "namespace", ns)
    log = os.path.join(work, "host.log")
    host = subprocess.Popen([host_bin, "run", "--config", path, "--plugin-dir", plugin_dir],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    procs.append(host)
    ready = False
    for _ in range(200):
        m = re.search(r"admin server listening on 127\.0\.0\.1:(\d+)", open(log).read())
        if m:
            try:
                import ssl
                unverified = ssl._create_unverified_context()
                with urllib.request.urlopen("https://127.0.0.1:%s/readyz" % m.group(1), timeout=5,
                                            context=unverified) as resp:
                    ready = resp.status == 200
            except (urllib.error.URLError, ConnectionError):
                pass
        if ready:
            break
        time.sleep(0.1)
    check(ready, "a host with the ConfigMap's config becomes ready: " + open(log).read()[-2000:])
    host.send_signal(signal.SIGTERM)
    check(host.wait(timeout=20) == 0, "and stops cleanly")


try:
    main()
    print("manifests e2e passed")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    subprocess.run(["rm", "-rf", work])
