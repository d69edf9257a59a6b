#!/usr/bin/python3
"""No credential ever reaches a log line, at any level.

A TLS `kuscia-host apiserver` that takes a bearer token and client certificates signed by a CA made
here with openssl. Three hosts run at logLevel trace (every request's method and target is logged)
with sim-agent, task-timeline and gateway-ready-time, each until a task's status is complete or
for a few seconds: one with the token in its kubeconfig, one with a client certificate and key
(inline, base64), one with a wrong token (every request fails with 401 and is logged). Then every
log (the three hosts', the API server's, `check-config`'s on a kubeconfig whose key is not PEM)
is searched for the token, the key (its PEM body, each base64 line of it, and the base64 of the
whole PEM as the kubeconfig carries it) and the wrong token. The trace lines must be there: the
search would pass on an empty log.

usage: secrets_e2e.py <kuscia-host> <plugin-dir>
"""
import base64
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from e2e_support import check, eventually

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = os.environ.get("KH_WORK") or tempfile.mkdtemp()
procs = []


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=work)


def path(name):
    return os.path.join(work, name)


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


# A client CA and a client certificate it signed, made here.
openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "1", "-subj", "/CN=secrets-e2e-ca")
openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "client.key", "-out", "client.csr",
        "-subj", "/CN=kuscia-host-client")
openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "client.pem", "-days", "1")
key_pem = open(path("client.key")).read()
cert_pem = open(path("client.pem")).read()
token = "kh-" + secrets.token_hex(24)
wrong_token = "kh-wrong-" + secrets.token_hex(16)

api_log = open(path("apiserver.log"), "w")
api = subprocess.Popen([host_bin, "apiserver", "--listen", "127.0.0.1:0", "--tls", "--token", token,
                        "--client-ca", path("ca.pem"), "--kubeconfig-out", path("token.kubeconfig")],
                       stdout=subprocess.PIPE, stderr=api_log, text=True)
procs.append(api)
check("listening on" in api.stdout.readline(), "TLS apiserver started")
kc = yaml.safe_load(open(path("token.kubeconfig")))
check(kc["users"][0]["user"].get("token") == token, "its kubeconfig carries the token")


def kubeconfig(name, user):
    doc = json.loads(json.dumps(kc))
    doc["users"][0]["user"] = user
    with open(path(name), "w") as f:
        json.dump(doc, f)  # JSON is YAML
    return path(name)


cert_kc = kubeconfig("cert.kubeconfig", {"client-certificate-data": b64(cert_pem),
                                         "client-key-data": b64(key_pem)})
wrong_kc = kubeconfig("wrong.kubeconfig", {"token": wrong_token})
garbled_kc = kubeconfig("garbled.kubeconfig", {"client-certificate-data": b64(cert_pem),
                                               "client-key-data": b64(key_pem.replace("PRIVATE KEY", "PRIVATE KEX"))})


def kubectl(*args, stdin=None):
    r = subprocess.run(["kubectl", "--kubeconfig", path("token.kubeconfig"), "--cache-dir", path("cache"),
                        *args], input=stdin, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("FAIL: kubectl %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


for ns in ("alice", "bob", "cross-domain"):
    kubectl("create", "namespace", ns)


def task(name):
    here = os.path.dirname(os.path.abspath(__file__))
    t = json.load(open(os.path.join(here, "..", "fixtures", "kusciatask.json")))
    meta = t["metadata"]
    t["metadata"] = {"name": name, "namespace": meta["namespace"], "labels": meta["labels"],
                     "annotations": meta["annotations"]}
    t.pop("status", None)
    return t


def run_host(name, kubeconfig_path, task_name=None, seconds=4):
    config = path(name + ".yaml")
    fast = "{scheduleMillis: 100, startMillis: 100, readyMillis: 100, endpointsMillis: 100, runMillis: 60000}"
    with open(config, "w") as f:
        f.write("mode: centralized\nlogLevel: trace\ncluster:\n  kubeconfig: %s\ndomains:\n" % kubeconfig_path)
        for d in ("alice", "bob"):
            f.write("  - id: %s\n    plugins:\n      - name: sim-agent\n        config: %s\n"
                    "      - name: task-timeline\n      - name: gateway-ready-time\n" % (d, fast))
    log = path(name + ".log")
    p = subprocess.Popen([host_bin, "run", "--config", config, "--plugin-dir", plugin_dir,
                          "--admin-listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    procs.append(p)
    if task_name:
        kubectl("apply", "-f", "-", stdin=json.dumps(task(task_name)))

        def complete():
            st = json.loads(kubectl("get", "kusciatask", task_name, "-n", "cross-domain", "-o", "json")).get("status", {})
            entries = list(st.get("podStatuses", {}).values()) + list(st.get("serviceStatuses", {}).values())
            return len(entries) == 8 and all("readyTime" in e for e in entries)
        check(eventually(complete, 60), "%s: the task's status is complete" % name)
    else:
        time.sleep(seconds)
    check(p.poll() is None, "%s still running" % name)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    return open(log).read()


logs = {
    "token host": run_host("token-host", path("token.kubeconfig"), "task-token"),
    "certificate host": run_host("cert-host", cert_kc, "task-cert"),
    "wrong-token host": run_host("wrong-host", wrong_kc),
}
with open(path("garbled.yaml"), "w") as f:
    f.write("logLevel: trace\ncluster:\n  kubeconfig: %s\ndomains:\n  - id: alice\n    plugins:\n"
            "      - name: task-timeline\n" % garbled_kc)
r = subprocess.run([host_bin, "run", "--config", path("garbled.yaml"), "--plugin-dir", plugin_dir,
                    "--admin-listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
check(r.returncode != 0 and "key" in r.stderr.lower(), "a key that is not PEM: the host refuses to start, "
      "naming the key: %s" % r.stderr.strip()[-300:])
logs["garbled-key host"] = r.stdout + r.stderr
api.send_signal(signal.SIGTERM)
api.wait(timeout=20)
api_log.close()
logs["apiserver"] = open(path("apiserver.log")).read()

# The trace lines are there: every request's method and target.
for name in ("token host", "certificate host"):
    check(re.search(r"\] (GET|PATCH|PUT|POST) /api", logs[name]) and "WATCH /api" in logs[name],
          "%s: trace lines log requests (%d lines)" % (name, logs[name].count("\n")))
check(" -> 401 " in logs["wrong-token host"], "wrong-token host: the 401s are logged")

key_body = "".join(l for l in key_pem.splitlines() if not l.startswith("-----"))
secret_strings = {
    "the bearer token": token,
    "the wrong bearer token": wrong_token,
    "the token, base64": b64(token),
    "the client key's PEM body": key_body,
    "the client key as the kubeconfig carries it": b64(key_pem),
}
for line in key_pem.splitlines():
    if not line.startswith("-----") and len(line) >= 16:
        secret_strings["a line of the client key (%s...)" % line[:6]] = line
for name, text in logs.items():
    found = [what for what, s in secret_strings.items() if s in text]
    check(not found and "PRIVATE KEY" not in text, "%s's log (%d bytes) holds no credential%s"
          % (name, len(text), ": found " + ", ".join(found) if found else ""))
for p in procs:
    if p.poll() is None:
        p.kill()
print("secrets e2e passed")
