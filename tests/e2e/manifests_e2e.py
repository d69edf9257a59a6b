#!/usr/bin/python3
"""The Kubernetes manifests of config/ rendered and applied with the real kubectl to
`kuscia-host apiserver`.

1. `kubectl kustomize` renders the base and every overlay of config/k8s; every object of each is
   checked against the Kubernetes schema offline: the API models of the official Python client
   (a field they do not know, a wrong type or a missing required field fails), the CRDs' own
   schema for kuscia.secretflow objects, and the fields the Prometheus Operator's ServiceMonitor
   documents for it.
2. `kubectl apply` of the CRDs and of the rendered base creates every object the embedded API
   server serves; a second apply changes nothing.
3. The Deployment runs as non-root with a read-only root filesystem and no capabilities, probes
   /livez and /readyz on the admin port, requests resources, mounts its ConfigMap, carries
   Kuscia's metric annotations naming its plain /metrics port; the overlays mount the history's
   volume or PostgreSQL password and send traces to a collector.
4. Each overlay's host config is valid (check-config) and, with the cluster pointed at this API
   server instead of the pod's service account, the base's runs and becomes ready.

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
from kubernetes.client import ApiClient

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


K8S = os.path.join(root, "config/k8s")
OVERLAYS = ("base", "overlays/centralized", "overlays/p2p")
# What the embedded API server stores; the rest is checked against the schema only.
SERVED = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
          "ConfigMap", "Service", "Deployment", "NetworkPolicy"}


def rendered(directory):
    r = subprocess.run(["kubectl", "kustomize", os.path.join(K8S, directory)], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, "kubectl kustomize %s renders: %s" % (directory, r.stderr))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def pruned(value):
    """The value without nulls and empty containers: what a model gives back of what it read."""
    if isinstance(value, dict):
        out = {k: pruned(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


class _Response:
    def __init__(self, obj):
        self.data = json.dumps(obj)


def model_name(obj):
    group, _, version = obj["apiVersion"].rpartition("/")
    return "V1" + obj["kind"] if version == "v1" else None


def schema_problem(obj):
    """Why the object is not one the Kubernetes schema accepts; "" when it is."""
    if obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["kind"] == "ServiceMonitor":
        spec = obj.get("spec", {})
        known = {"selector", "endpoints", "namespaceSelector", "jobLabel"}
        endpoint = {"port", "path", "scheme", "interval", "scrapeTimeout", "tlsConfig", "authorization"}
        if set(spec) - known or not spec.get("endpoints") or "selector" not in spec:
            return "ServiceMonitor spec: %s" % sorted(spec)
        for e in spec["endpoints"]:
            if set(e) - endpoint or e.get("scheme", "http") not in ("http", "https"):
                return "ServiceMonitor endpoint: %s" % e
        return ""
    name = model_name(obj)
    if name is None:
        return "no model for %s" % obj["apiVersion"]
    try:
        model = ApiClient().deserialize(_Response(obj), name)
    except (ValueError, TypeError) as e:
        return str(e)
    back = pruned(ApiClient().sanitize_for_serialization(model))
    if back != pruned(obj):
        return "fields the schema does not have, or of the wrong type: %s" % json.dumps(
            {"given": pruned(obj), "schema reads": back})[:1500]
    return ""


def host_config(objects):
    cm = [o for o in objects if o["kind"] == "ConfigMap"]
    check(len(cm) == 1 and cm[0]["metadata"]["name"].startswith("kuscia-host-"),
          "one generated ConfigMap (its name hashed: a new config rolls the pods)")
    return cm[0], yaml.safe_load(cm[0]["data"]["kuscia-host.yaml"])


def check_overlays():
    for directory in OVERLAYS:
        objects = rendered(directory)
        for o in objects:
            problem = schema_problem(o)
            check(not problem, "%s: %s %s fits the schema %s" % (directory, o["kind"], o["metadata"]["name"], problem))
        cm, config = host_config(objects)
        deploy = next(o for o in objects if o["kind"] == "Deployment")
        pod = deploy["spec"]["template"]
        c = pod["spec"]["containers"][0]
        check(c["image"] == "registry.example.com/kuscia-host:0.1.0",
              "%s: the image named as a registry would: %s" % (directory, c["image"]))
        check([v["configMap"]["name"] for v in pod["spec"]["volumes"] if "configMap" in v] == [cm["metadata"]["name"]],
              "%s: the pods mount the generated ConfigMap" % directory)
        annotations = pod["metadata"]["annotations"]
        port = [p for p in c["ports"] if p["name"] == annotations["kuscia.secretflow/metric_port"]]
        check(annotations["kuscia.secretflow/metric_path"] == "metrics" and port and
              config["admin"]["metricsListen"].endswith(":%d" % port[0]["containerPort"]),
              "%s: Kuscia's metric exporter finds /metrics on the port its annotations name" % directory)
        kinds = {o["kind"] for o in objects}
        check({"PodDisruptionBudget", "Service", "NetworkPolicy"} <= kinds, "%s: a PDB, a Service, a NetworkPolicy" % directory)
        plugins = {p["name"]: p.get("config", {}) for d in config["domains"] for p in d["plugins"]}
        mounts = {m["mountPath"] for m in c["volumeMounts"]}
        if directory == "overlays/centralized":
            check("PersistentVolumeClaim" in kinds and "/var/lib/kuscia-host" in mounts and
                  plugins["task-history"]["database"].startswith("/var/lib/kuscia-host/"),
                  "centralized: the history in SQLite on the claim")
            check(len(config["domains"]) == 2 and config["mode"] == "centralized", "centralized: every domain")
        if directory == "overlays/p2p":
            check(plugins["task-history"]["database"].startswith("postgresql://") and
                  plugins["task-history"]["passwordFile"].startswith("/etc/kuscia-host/postgres/") and
                  "/etc/kuscia-host/postgres" in mounts, "p2p: the history in PostgreSQL, its password from the Secret")
            check(len(config["domains"]) == 1 and config["mode"] == "p2p", "p2p: one domain")
        if directory != "base":
            check(plugins["otel-export"]["endpoint"].startswith("http://otel-collector.") and
                  "ServiceMonitor" in kinds, "%s: traces to the collector, a ServiceMonitor" % directory)
        # The host config is valid as check-config reads it (with the pod's files stood in for).
        config["cluster"] = {"kubeconfig": kubeconfig}
        config["admin"]["tls"] = {"selfSigned": True}
        password = os.path.join(work, "password")
        open(password, "w").write("secret\n")
        for d in config["domains"]:
            for p in d["plugins"]:
                if "passwordFile" in p.get("config", {}):
                    p["config"]["passwordFile"] = password
        path = os.path.join(work, directory.replace("/", "-") + ".yaml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        r = subprocess.run([host_bin, "check-config", "--config", path, "--plugin-dir", plugin_dir],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, "%s: check-config accepts its host config: %s" % (directory, r.stdout + r.stderr))
    return rendered("base")


def main():
    server = subprocess.Popen([host_bin, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(server)
    check("listening on" in server.stdout.readline(), "apiserver started")

    base = check_overlays()
    crds = sorted(glob.glob(os.path.join(root, "config/crds/*.yaml")))
    served = os.path.join(work, "base.yaml")
    with open(served, "w") as f:
        yaml.safe_dump_all([o for o in base if o["kind"] in SERVED], f)
    args = [a for f in crds + [served] for a in ("-f", f)]
    out = kubectl("apply", *args)
    objects = [d for f in crds for d in yaml.safe_load_all(open(f)) if d] + \
        [o for o in base if o["kind"] in SERVED]
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

    deploy = json.loads(kubectl("get", "deployment", "kuscia-host", "-n", "kuscia-host", "-o", "json"))
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

    name = next(o["metadata"]["name"] for o in base if o["kind"] == "ConfigMap")
    cm = json.loads(kubectl("get", "configmap", name, "-n", "kuscia-host", "-o", "json"))
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
