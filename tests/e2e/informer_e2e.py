#!/usr/bin/python3
"""Acceptance for the host's informers, end to end with real processes and kubectl.

`kuscia-host apiserver` plays the cluster; `kuscia-host run` loads the probe test plugin, which
subscribes to alice's pods with two JSON pointers and writes every event it gets to a file.
Checks: ADDED for every pod then SYNCED; cache_list/cache_get see the same; a merge patch through
kube_request completes; every kubectl change arrives with the right values; after the server
drops its watches and compacts its history (the re-watch held back until then), the plugin's
state equals a fresh `kubectl get`; /readyz lists the informer; /metrics shows the relist and
the watch restarts; without --tls, the apiserver process is killed and started again on the same
address with nothing in memory (resourceVersions start again from 1): objects created right
after the restart reach the plugin, vanished ones are DELETED, and the relist is counted;
SIGTERM exits 0.

usage: informer_e2e.py <kuscia-host> <test-plugin-dir> [--tls]
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

from e2e_support import check, eventually

host, plugin_dir = sys.argv[1], sys.argv[2]
tls = "--tls" in sys.argv[3:]
work = tempfile.mkdtemp()
kubeconfig = os.path.join(work, "kubeconfig")
events_file = os.path.join(work, "events.jsonl")
FIELDS = ["/status/phase", "/metadata/labels/app"]


def kubectl(*args, stdin=None):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(work, "cache"), *args],
                       input=stdin, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit("FAIL: kubectl %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def pod(name, app):
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "alice", "labels": {"app": app}},
                       "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


def events():
    if not os.path.exists(events_file):
        return []
    with open(events_file) as f:
        return [json.loads(line) for line in f if line.strip()]


def plugin_state():
    state = {}
    for e in events():
        if e.get("type") in ("ADDED", "MODIFIED"):
            state[e["key"]] = e["fields"]
        elif e.get("type") == "DELETED":
            state.pop(e["key"], None)
    return state


def pointer(obj, p):
    for token in p.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if not isinstance(obj, dict) or token not in obj:
            return None
        obj = obj[token]
    return obj


def truth():
    items = json.loads(kubectl("get", "pods", "-n", "alice", "-o", "json"))["items"]
    return {"alice/" + i["metadata"]["name"]: [pointer(i, p) for p in FIELDS] for i in items}


def fault(what):
    headers = {"Authorization": "Bearer " + token} if tls else {}
    req = urllib.request.Request(url + "/debug/faults/" + what, method="POST", headers=headers)
    urllib.request.urlopen(req, context=ssl_context).read()


def admin(path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (admin_port, path)) as r:
        return r.read().decode()


def start_server(listen):
    args = [host, "apiserver", "--listen", listen, "--kubeconfig-out", kubeconfig, "--fault-injection",
            "--bookmark-interval-ms", "200"]
    if tls:
        args.append("--tls")
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


server = start_server("127.0.0.1:0")
daemon = None
ssl_context = None
try:
    line = server.stdout.readline()
    if "listening on" not in line:
        sys.exit("apiserver did not start: " + line + server.stderr.read())
    url = line.split("listening on ")[1].strip()
    if tls:
        import base64
        import ssl
        ca = re.search(r"certificate-authority-data: (\S+)", open(kubeconfig).read()).group(1)
        ssl_context = ssl.create_default_context(cadata=base64.b64decode(ca).decode())
        token = re.search(r"token: (\S+)", open(kubeconfig).read()).group(1)

    kubectl("create", "namespace", "alice")
    for name in ("p0", "p1"):
        kubectl("apply", "-f", "-", stdin=pod(name, "a"))

    config = os.path.join(work, "host.yaml")
    with open(config, "w") as f:
        f.write("""mode: p2p
cluster:
  kubeconfig: %s
domains:
  - id: alice
    plugins:
      - name: probe
        config:
          subscribe: v1/pods
          fields: %s
          eventFile: %s
          patchOnSynced: 'alice/p0/status|{"status":{"message":"probe was here"}}'
""" % (kubeconfig, ",".join(FIELDS), events_file))
    daemon = subprocess.Popen([host, "run", "--config", config, "--plugin-dir", plugin_dir,
                               "--admin-listen", "127.0.0.1:0"],
                              stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "host.log"), "w"))

    def host_log():
        return open(os.path.join(work, "host.log")).read()

    check(eventually(lambda: re.search(r"admin server listening on 127\.0\.0\.1:(\d+)", host_log())),
          "host started")
    admin_port = int(re.search(r"admin server listening on 127\.0\.0\.1:(\d+)", host_log()).group(1))

    # Initial list: ADDED for each pod, then SYNCED; the cache agrees.
    # The probe writes SYNCED, then the cache line it reads right after; wait for both.
    check(eventually(lambda: any(e.get("type") == "SYNCED" for e in events())
                     and any("cache" in e for e in events())), "SYNCED arrives, then the cache read")
    ev = events()
    synced_at = [i for i, e in enumerate(ev) if e.get("type") == "SYNCED"][0]
    added = {e["key"]: e["fields"] for e in ev[:synced_at] if e.get("type") == "ADDED"}
    check(added == {"alice/p0": ["Pending", "a"], "alice/p1": ["Pending", "a"]},
          "ADDED with both pointers for every pod before SYNCED: %s" % added)
    cache = [e for e in ev if "cache" in e][0]["cache"]
    check(sorted(cache) == ["alice/p0", "alice/p1"], "cache_list and cache_get see both pods")
    check(eventually(lambda: any(e.get("result") == 200 and e.get("tag") == 42 for e in events())),
          "kube_request merge patch of pod status completed with 200")
    check(json.loads(kubectl("get", "pod", "p0", "-n", "alice", "-o", "json"))["status"].get("message")
          == "probe was here", "the plugin's patch is in the cluster")
    readyz = admin("/readyz?verbose")
    check("informer:pods@alice" in readyz and "synced" in readyz, "/readyz lists the informer as synced")

    # Every kubectl change arrives with the right values.
    kubectl("label", "pod", "p0", "-n", "alice", "app=b", "--overwrite")
    check(eventually(lambda: plugin_state().get("alice/p0") == ["Pending", "b"]), "label change seen")
    kubectl("patch", "pod", "p0", "-n", "alice", "--subresource=status", "--type=merge",
            "-p", '{"status":{"phase":"Running"}}')
    check(eventually(lambda: plugin_state().get("alice/p0") == ["Running", "b"]), "status change seen")
    kubectl("delete", "pod", "p1", "-n", "alice", "--wait=false")
    check(eventually(lambda: "alice/p1" not in plugin_state()), "deletion seen")
    deleted = [e for e in events() if e.get("type") == "DELETED"]
    check(deleted and deleted[-1]["fields"] == ["Pending", "a"], "DELETED carries the last state")
    kubectl("apply", "-f", "-", stdin=pod("p2", "x"))
    check(eventually(lambda: plugin_state().get("alice/p2") == ["Pending", "x"]), "creation seen")
    check(plugin_state() == truth(), "plugin state equals kubectl get")

    # Watches dropped; the re-watch is held back (503) while the cluster changes and the history
    # is compacted: the informer must relist and the plugin still reach the final state.
    fault("respond?path=/api/v1/namespaces/alice/pods&method=GET&watch=1&status=503&count=2")
    fault("drop-watches")
    kubectl("label", "pod", "p0", "-n", "alice", "app=c", "--overwrite")
    kubectl("delete", "pod", "p2", "-n", "alice", "--wait=false")
    kubectl("apply", "-f", "-", stdin=pod("p3", "y"))
    fault("compact")
    check(eventually(lambda: plugin_state() == truth(), 30),
          "after drop and compaction the plugin state equals kubectl get: %s" % plugin_state())
    kubectl("patch", "pod", "p3", "-n", "alice", "--subresource=status", "--type=merge",
            "-p", '{"status":{"phase":"Succeeded"}}')
    check(eventually(lambda: plugin_state().get("alice/p3") == ["Succeeded", "y"]), "changes keep flowing")
    check(sum(1 for e in events() if e.get("type") == "SYNCED") == 1, "SYNCED only once")

    def value(name):
        m = re.search(r'^%s\{informer="pods@alice"\} (\S+)$' % name, admin("/metrics"), re.M)
        return float(m.group(1)) if m else 0

    check(value("kuscia_host_kube_relists_total") >= 1, "/metrics counts the relist after 410")
    relists = value("kuscia_host_kube_relists_total")

    if not tls:  # a restarted TLS server has a new CA, which the host's kubeconfig does not trust
        # The cluster restarts with nothing in memory; new objects come at once.
        before = set(plugin_state())
        server.kill()
        server.wait(timeout=10)
        server = start_server(url.split("//")[1])
        line = server.stdout.readline()
        check("listening on " + url in line, "apiserver restarted on the same address: " + line.strip())
        kubectl("create", "namespace", "alice")
        for name in ("r0", "r1", "r2"):
            kubectl("apply", "-f", "-", stdin=pod(name, "r"))
        check(eventually(lambda: plugin_state() == truth(), 30),
              "after a restart that lost the state the plugin state equals kubectl get: %s" % plugin_state())
        check(sorted(plugin_state()) == ["alice/r0", "alice/r1", "alice/r2"], "every object created after the restart arrived")
        gone = {e["key"] for e in events() if e.get("type") == "DELETED"}
        check(before <= gone, "every object that vanished with the restart is DELETED: %s" % sorted(before - gone))
        check(value("kuscia_host_kube_relists_total") > relists, "/metrics counts the relist after the restart")

    metrics = admin("/metrics")
    check(value("kuscia_host_kube_watch_restarts_total") >= 2, "/metrics counts watch restarts")
    check(value("kuscia_host_kube_objects_cached") == len(truth()), "/metrics shows the objects cached")
    check('kuscia_host_kube_events_total{informer="pods@alice",type="MODIFIED"}' in metrics,
          "/metrics counts events by type")

    daemon.send_signal(signal.SIGTERM)
    check(daemon.wait(timeout=20) == 0, "host exits 0 on SIGTERM")
    daemon = None
    print("informer e2e passed (%s)" % ("tls" if tls else "plain"))
finally:
    if daemon is not None:
        daemon.kill()
        print(open(os.path.join(work, "host.log")).read()[-4000:], file=sys.stderr)
    server.terminate()
    server.wait(timeout=10)
