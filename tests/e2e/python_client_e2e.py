#!/usr/bin/python3
"""End to end with Debian's python3-kubernetes against `kuscia-host apiserver`.

Lists and watches pods and kusciatasks, resumes a watch from a resourceVersion, patches core
objects (strategic merge, as the client sends dicts) and custom objects (merge patch), and gets
410 after the server compacts its history.

usage: python_client_e2e.py <kuscia-host> <fixtures-dir> [--tls]
"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

host, fixtures = sys.argv[1], sys.argv[2]
tls = "--tls" in sys.argv[3:]
work = tempfile.mkdtemp()
kubeconfig = os.path.join(work, "kubeconfig")
args = [host, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig, "--fault-injection"]
if tls:
    args.append("--tls")
server = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
url = None
try:
    line = server.stdout.readline()
    if "listening on" not in line:
        sys.exit("apiserver did not start: " + line + server.stderr.read())
    url = line.split("listening on ")[1].strip()
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    custom = client.CustomObjectsApi()

    def check(cond, what):
        if not cond:
            sys.exit("FAIL: " + what)
        print("ok -", what)

    def manifest(name):
        obj = json.load(open(os.path.join(fixtures, name)))
        for k in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            obj["metadata"].pop(k, None)
        obj.pop("status", None)
        return obj

    for ns in ("alice", "cross-domain"):
        core.create_namespace({"metadata": {"name": ns}})
    pod = manifest("pod.json")
    core.create_namespaced_pod("alice", pod)
    pods = core.list_namespaced_pod("alice")
    check([p.metadata.name for p in pods.items] == ["secretflow-task-psi-0"], "list pods")
    list_rv = pods.metadata.resource_version

    task = manifest("kusciatask.json")
    custom.create_namespaced_custom_object("kuscia.secretflow", "v1alpha1", "cross-domain", "kusciatasks", task)
    tasks = custom.list_namespaced_custom_object("kuscia.secretflow", "v1alpha1", "cross-domain", "kusciatasks")
    check([t["metadata"]["name"] for t in tasks["items"]] == ["secretflow-task-psi"], "list kusciatasks")

    # Core patch: the client sends a dict as a strategic merge patch.
    core.patch_namespaced_pod("secretflow-task-psi-0", "alice", {"metadata": {"labels": {"py": "yes"}}})
    core.patch_namespaced_pod_status("secretflow-task-psi-0", "alice",
                                     {"status": {"phase": "Running", "conditions": [
                                         {"type": "Ready", "status": "True",
                                          "lastTransitionTime": "2024-05-20T08:00:09Z"}]}})
    p = core.read_namespaced_pod("secretflow-task-psi-0", "alice")
    check(p.metadata.labels["py"] == "yes" and p.status.phase == "Running", "strategic merge patches on pod and pod/status")

    # Custom object status patch: a merge patch; undeclared fields are pruned.
    custom.patch_namespaced_custom_object_status(
        "kuscia.secretflow", "v1alpha1", "cross-domain", "kusciatasks", "secretflow-task-psi",
        {"status": {"phase": "Running", "notInSchema": 1,
                    "podStatuses": {"alice/secretflow-task-psi-0": {
                        "namespace": "alice", "podName": "secretflow-task-psi-0", "podPhase": "Running",
                        "createTime": "2024-05-20T08:00:00Z", "readyTime": "2024-05-20T08:00:09Z"}}}})
    t = custom.get_namespaced_custom_object("kuscia.secretflow", "v1alpha1", "cross-domain", "kusciatasks",
                                            "secretflow-task-psi")
    check(t["status"]["podStatuses"]["alice/secretflow-task-psi-0"]["readyTime"] == "2024-05-20T08:00:09Z"
          and "notInSchema" not in t["status"], "custom object status merge patch, pruned")

    # Watch pods from the list's resourceVersion: the two patches arrive as MODIFIED.
    w = watch.Watch()
    events = [(e["type"], e["object"].metadata.resource_version)
              for e in w.stream(core.list_namespaced_pod, "alice", resource_version=list_rv, timeout_seconds=1)]
    check([e[0] for e in events] == ["MODIFIED", "MODIFIED"], "watch pods resumes from a resourceVersion")

    # Resume again from the first event's resourceVersion: only the second arrives.
    resumed = [e["object"].metadata.resource_version
               for e in w.stream(core.list_namespaced_pod, "alice", resource_version=events[0][1], timeout_seconds=1)]
    check(resumed == [events[1][1]], "watch resumes after the first event")

    # Watch kusciatasks (raw dicts) from 0: ADDED first, then live changes.
    seen = []
    w2 = watch.Watch()
    for e in w2.stream(custom.list_namespaced_custom_object, "kuscia.secretflow", "v1alpha1", "cross-domain",
                       "kusciatasks", resource_version="0", timeout_seconds=2):
        seen.append(e["type"])
        if len(seen) == 1:
            custom.patch_namespaced_custom_object(
                "kuscia.secretflow", "v1alpha1", "cross-domain", "kusciatasks", "secretflow-task-psi",
                {"metadata": {"labels": {"watched": "yes"}}})
        if len(seen) == 2:
            w2.stop()
    check(seen == ["ADDED", "MODIFIED"], "watch kusciatasks")

    # After the server compacts its history, a watch from an old resourceVersion gets 410.
    headers = {"Authorization": "Bearer " + client.Configuration.get_default_copy().api_key.get("authorization", "").replace("Bearer ", "")} if tls else {}
    req = urllib.request.Request(url + "/debug/faults/compact", method="POST", headers=headers)
    if tls:
        import ssl
        ctx = ssl.create_default_context(cafile=client.Configuration.get_default_copy().ssl_ca_cert)
        urllib.request.urlopen(req, context=ctx).read()
    else:
        urllib.request.urlopen(req).read()
    try:
        for e in watch.Watch().stream(core.list_namespaced_pod, "alice", resource_version=list_rv, timeout_seconds=1):
            pass
        check(False, "410 after compaction")
    except ApiException as e:
        check(e.status == 410, "watch from a compacted resourceVersion fails with 410 (got %s)" % e.status)

    try:
        core.read_namespaced_pod("missing", "alice")
        check(False, "404")
    except ApiException as e:
        check(e.status == 404 and json.loads(e.body)["reason"] == "NotFound", "404 NotFound as a Status")
    print("python client e2e passed" + (" (TLS)" if tls else ""))
finally:
    server.terminate()
    server.wait(timeout=10)
