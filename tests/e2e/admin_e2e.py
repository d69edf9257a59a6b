#!/usr/bin/python3
"""The admin server off loopback's way: TLS and authentication as Kubernetes components do it,
end to end with real clients.

`kuscia-host apiserver --token-auth-file` is the cluster (identities: prometheus, eve, and the
group kuscia-viewers bound to the shipped kuscia-host-viewer role); a host serves its admin
server over TLS with a certificate made here by openssl, `auth: kubernetes` and a client CA, at
log level trace. Then:
1. /livez and /readyz answer without credentials (ok or not ok only); /readyz?verbose, /metrics
   and the timeline API need them: 401 without or with a bad token, 403 for eve (authenticated,
   not bound), 200 for prometheus's token and for a client certificate of the viewers' group;
   refusals are JSON Status objects.
2. `kuscia-host timeline --server https://... --token-file --ca-file` prints the task with a good
   token and fails with eve's (forbidden), and refuses to send a token over http.
3. Debian's Prometheus scrapes /metrics over TLS with a bearer token: up = 1 for the viewer,
   0 for eve, whose scrape gets 403.
4. Off loopback with no authentication the host refuses to start (exit 2), naming the key to
   set, from the config and from --admin-listen.
5. No token appears in the host's log, at trace level.
6. A host's own embedded API server (cluster.embedded.tokenAuthFile) reviews its admin tokens
   against the RBAC objects stored in it.

usage: admin_e2e.py <kuscia-host> <plugin-dir>
"""
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from e2e_support import check, eventually, listening_port

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../..")
procs = []
TOKENS = {"prometheus": "prom-token-4f1c0a", "eve": "eve-token-9b2e11", "bad": "bad-token-77aa00"}


def path(name):
    return os.path.join(work, name)


def openssl(*args):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True)
    check(r.returncode == 0, "openssl %s: %s" % (args[0], r.stderr[-500:]))


def certificates():
    """A CA, the server's certificate for 127.0.0.1 and a client certificate of the viewers'
    group, all signed by the CA."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path("ca.key"), "-out", path("ca.crt"), "-days", "1", "-subj", "/CN=test-ca")
    for name, subj, ext in (("server", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
                            ("client", "/O=kuscia-viewers/CN=alice-person", "extendedKeyUsage=clientAuth")):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", subj)
        with open(path(name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path(name + ".crt"), "-days", "1", "-extfile", path(name + ".ext"))


def kubectl(kubeconfig, *args, stdin=None):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", path("cache"), *args],
                       input=stdin, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "kubectl %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def cluster():
    with open(path("tokens.csv"), "w") as f:
        f.write("%s,prometheus,prom-uid\n%s,eve,eve-uid\n" % (TOKENS["prometheus"], TOKENS["eve"]))
    server = subprocess.Popen([host_bin, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out",
                               path("kubeconfig"), "--token-auth-file", path("tokens.csv")],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(server)
    check("listening on" in server.stdout.readline(), "apiserver started")
    kc = path("kubeconfig")
    access = [d for d in yaml.safe_load_all(open(os.path.join(root, "config/k8s/base/admin-access.yaml"))) if d]
    role = [d for d in access if d["kind"] == "ClusterRole"][0]
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "viewers"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": role["metadata"]["name"]},
               "subjects": [{"kind": "User", "name": "prometheus"}, {"kind": "Group", "name": "kuscia-viewers"}]}
    for obj in (role, binding):
        kubectl(kc, "apply", "-f", "-", stdin=json.dumps(obj))
    for ns in ("alice", "cross-domain"):
        kubectl(kc, "create", "namespace", ns)
    task = {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
            "metadata": {"name": "t1", "namespace": "cross-domain"},
            "spec": {"initiator": "alice", "parties": [{"domainID": "alice", "appImageRef": "x"}]}}
    kubectl(kc, "apply", "-f", "-", stdin=json.dumps(task))
    return kc


def start_host(config, extra=()):
    name = "host-%d" % len(procs)
    with open(path(name + ".yaml"), "w") as f:
        yaml.safe_dump(config, f)
    log = path(name + ".log")
    proc = subprocess.Popen([host_bin, "run", "--config", path(name + ".yaml"), "--plugin-dir", plugin_dir, *extra],
                            stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    procs.append(proc)
    return proc, log


def get(url, token=None, cert=False):
    ctx = ssl.create_default_context(cafile=path("ca.crt"))
    if cert:
        ctx.load_cert_chain(path("client.crt"), path("client.key"))
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def clients(base):
    code, body = get(base + "/livez")
    check(code == 200 and body == "ok\n", "/livez without credentials")
    code, body = get(base + "/readyz")
    check(code == 200 and body == "ok\n", "/readyz without credentials says ok and nothing more: %r" % body)
    check(get(base + "/readyz?verbose")[0] == 401, "/readyz?verbose needs credentials")
    code, body = get(base + "/readyz?verbose", TOKENS["prometheus"])
    check(code == 200 and "[+]" in body, "/readyz?verbose to a viewer names the checks")
    for who, want in ((None, 401), ("bad", 401), ("eve", 403), ("prometheus", 200)):
        code, body = get(base + "/metrics", TOKENS[who] if who else None)
        check(code == want, "/metrics as %s: %d (%d)" % (who or "nobody", want, code))
        if want != 200:
            status = json.loads(body)
            check(status["kind"] == "Status" and status["code"] == want and
                  status["reason"] == ("Unauthorized" if want == 401 else "Forbidden"),
                  "a JSON Status like the API server's: %s" % body)
    check(json.loads(get(base + "/metrics", TOKENS["eve"])[1])["message"] ==
          'forbidden: User "eve" cannot get path "/metrics"', "403 says who and what")
    code, body = get(base + "/api/v1/timelines", cert=True)
    check(code == 200 and "t1" in json.loads(body)["tasks"],
          "a client certificate of the viewers' group reads the timeline API")
    metrics = get(base + "/metrics", TOKENS["prometheus"])[1]
    check(re.search(r'kuscia_host_admin_refused_total\{code="403"\} [1-9]', metrics) and
          re.search(r'kuscia_host_admin_auth_reviews_total\{review="tokenreview",result="allowed"\} [1-9]', metrics),
          "refusals and reviews are counted")


def cli(base):
    with open(path("prom.token"), "w") as f:
        f.write(TOKENS["prometheus"] + "\n")
    with open(path("eve.token"), "w") as f:
        f.write(TOKENS["eve"] + "\n")
    run = lambda *a: subprocess.run([host_bin, "timeline", "t1", "--server", *a], capture_output=True, text=True,
                                    timeout=60)
    r = run(base, "--token-file", path("prom.token"), "--ca-file", path("ca.crt"), "-o", "json")
    check(r.returncode == 0 and json.loads(r.stdout)["task"] == "t1", "the CLI reads through TLS and a token: " + r.stderr)
    r = run(base, "--token-file", path("eve.token"), "--ca-file", path("ca.crt"))
    check(r.returncode == 1 and "forbidden" in r.stderr, "the CLI with eve's token is refused: " + r.stderr)
    r = run(base, "--ca-file", path("ca.crt"))
    check(r.returncode == 1 and "Unauthorized" in r.stderr, "the CLI without a token: 401: " + r.stderr)
    r = run(base.replace("https://", "http://"), "--token-file", path("prom.token"))
    check(r.returncode == 2 and "only sent over https" in r.stderr, "no token over http: " + r.stderr)


def prometheus(target):
    for who in ("prometheus", "eve"):
        with open(path(who + ".token"), "w") as f:
            f.write(TOKENS[who] + "\n")
    config = {"global": {"scrape_interval": "1s"},
              "scrape_configs": [{"job_name": "kuscia-" + who, "scheme": "https",
                                  "tls_config": {"ca_file": path("ca.crt")},
                                  "authorization": {"credentials_file": path(who + ".token")},
                                  "static_configs": [{"targets": [target]}]} for who in ("prometheus", "eve")]}
    with open(path("prometheus.yml"), "w") as f:
        yaml.safe_dump(config, f)
    prom = subprocess.Popen(["prometheus", "--config.file=" + path("prometheus.yml"),
                             "--storage.tsdb.path=" + path("data"), "--web.listen-address=127.0.0.1:0",
                             "--log.level=warn"], stdout=subprocess.DEVNULL,
                            stderr=open(path("prometheus.log"), "w"))
    procs.append(prom)
    port = eventually(lambda: prom.poll() is None and listening_port(prom.pid), 30)
    check(port, "prometheus listens on 127.0.0.1:%s" % port)
    api = "http://127.0.0.1:%d/api/v1/" % port

    def targets():
        try:
            with urllib.request.urlopen(api + "targets", timeout=10) as r:
                active = json.loads(r.read())["data"]["activeTargets"]
        except urllib.error.HTTPError as e:
            if e.code == 503:  # Prometheus listens before it is ready (its storage opening)
                return {}
            raise
        return {t["labels"]["job"]: t for t in active}

    def settled():
        t = targets()
        return t if all(j in t and t[j]["health"] != "unknown" for j in ("kuscia-prometheus", "kuscia-eve")) else None
    t = eventually(settled, 60)
    check(t and t["kuscia-prometheus"]["health"] == "up",
          "Prometheus scrapes /metrics over TLS with the viewer's token: up (%s)" % (t and t["kuscia-prometheus"]))
    check(t["kuscia-eve"]["health"] == "down" and "403" in t["kuscia-eve"]["lastError"],
          "with a token not bound to the viewer role: down, 403 (%s)" % t["kuscia-eve"]["lastError"])
    def up():
        # A target's health is set as its scrape ends, its samples a moment later: ask until the
        # query has both jobs.
        with urllib.request.urlopen(api + "query?" + urllib.parse.urlencode({"query": "up"}), timeout=10) as r:
            got = {x["metric"]["job"]: x["value"][1] for x in json.loads(r.read())["data"]["result"]}
        return got if all(j in got for j in ("kuscia-prometheus", "kuscia-eve")) else None
    both = eventually(up, 30) or {}
    check(both.get("kuscia-prometheus") == "1" and both.get("kuscia-eve") == "0", "up = 1 and 0: %s" % both)


def embedded():
    """The host's own embedded API server (cluster.embedded.tokenAuthFile) reviews the tokens of
    its admin server: a token not bound is forbidden until the binding is applied there."""
    config = {"admin": {"listen": "127.0.0.1:0", "auth": "kubernetes"},
              "cluster": {"embedded": {"listen": "127.0.0.1:0", "kubeconfigOut": path("embedded.kubeconfig"),
                                       "tokenAuthFile": path("tokens.csv")}},
              "domains": [{"id": "alice"}]}
    proc, log = start_host(config)
    m = eventually(lambda: re.search(r"admin server listening on 127\.0\.0\.1:(\d+)", open(log).read()), 30)
    check(m, "a host with an embedded cluster and auth: kubernetes serves: " + open(log).read()[-800:])
    base = "http://127.0.0.1:" + m.group(1)  # loopback: plain HTTP is allowed

    def plain(token):
        req = urllib.request.Request(base + "/metrics", headers={"Authorization": "Bearer " + token})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
    check(plain(TOKENS["bad"]) == 401 and plain(TOKENS["prometheus"]) == 403,
          "unknown token 401, known but unbound 403")
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "prom"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                         "kind": "ClusterRole", "name": "metrics"},
               "subjects": [{"kind": "User", "name": "prometheus"}]}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "metrics"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}
    for obj in (role, binding):
        kubectl(path("embedded.kubeconfig"), "apply", "-f", "-", stdin=json.dumps(obj))
    check(eventually(lambda: plain(TOKENS["prometheus"]) == 200, 10),
          "bound in the embedded cluster: allowed once the denial's cache expires")
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)


def refusals():
    for config, extra in (({"admin": {"listen": "0.0.0.0:0"}, "domains": [{"id": "alice"}]}, ()),
                          ({"domains": [{"id": "alice"}]}, ("--admin-listen", "0.0.0.0:0"))):
        proc, log = start_host(config, extra)
        code = proc.wait(timeout=30)
        err = open(log).read()
        check(code == 2 and "admin.auth" in err and "admin.allowUnauthenticated" in err,
              "off loopback with no authentication: exit 2 naming the keys (%s): %s" % (code, err[-300:]))


def server_certificate(prefix):
    """A CA of its own and a server certificate for 127.0.0.1 it signed: <prefix>-ca.crt,
    <prefix>-server.crt and <prefix>-server.key."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path(prefix + "-ca.key"), "-out", path(prefix + "-ca.crt"), "-days", "1",
            "-subj", "/CN=" + prefix + "-ca")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", path(prefix + "-server.key"), "-out", path(prefix + "-server.csr"), "-subj", "/CN=127.0.0.1")
    with open(path(prefix + ".ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", path(prefix + "-server.csr"), "-CA", path(prefix + "-ca.crt"),
            "-CAkey", path(prefix + "-ca.key"), "-CAcreateserial", "-out", path(prefix + "-server.crt"),
            "-days", "1", "-extfile", path(prefix + ".ext"))


def rotation():
    """admin.tls from files renewed in place, as cert-manager renews a Secret's files: new
    connections get the new certificate, a keep-alive connection opened before keeps its own and
    is not dropped, and a half-written pair (a new certificate with the old key) is refused while
    the certificate in use stays. selfSigned writes its CA to caOut, and a client verifies the
    server with it."""
    import http.client
    server_certificate("old")
    server_certificate("new")
    for f in ("crt", "key"):
        shutil.copy(path("old-server." + f), path("tls." + f))
    config = {"admin": {"listen": "127.0.0.1:0",
                        "tls": {"certFile": path("tls.crt"), "keyFile": path("tls.key"), "reloadSeconds": 1}},
              "domains": [{"id": "alice", "plugins": [{"name": "heartbeat"}]}]}
    proc, log = start_host(config)
    m = eventually(lambda: re.search(r"admin server listening on 127\.0\.0\.1:(\d+) \(TLS\)", open(log).read()), 30)
    check(m, "the host serves over TLS: " + open(log).read()[-500:])
    port = int(m.group(1))

    def connect(ca):
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                        context=ssl.create_default_context(cafile=path(ca)))
        c.request("GET", "/livez")
        r = c.getresponse()
        r.read()
        return c, r.status

    def verifies(ca):
        try:
            c, status = connect(ca)
            c.close()
            return status == 200
        except (ssl.SSLError, OSError):
            return False
    check(eventually(lambda: verifies("old-ca.crt"), 30), "the old certificate is served")
    kept, status = connect("old-ca.crt")
    check(status == 200, "a keep-alive connection opened with the old certificate")
    # Half written: the new certificate beside the old key is refused; the old one stays.
    shutil.copy(path("new-server.crt"), path("tls.crt.tmp"))
    os.replace(path("tls.crt.tmp"), path("tls.crt"))
    check(eventually(lambda: "the certificate in use stays" in open(log).read(), 10),
          "a certificate without its key is refused and logged: " + open(log).read()[-500:])
    check(verifies("old-ca.crt") and not verifies("new-ca.crt"), "meanwhile the old certificate serves")
    shutil.copy(path("new-server.key"), path("tls.key.tmp"))
    os.replace(path("tls.key.tmp"), path("tls.key"))
    check(eventually(lambda: verifies("new-ca.crt"), 10), "new connections get the renewed certificate")
    check(not verifies("old-ca.crt"), "and no longer the old one")
    try:
        kept.request("GET", "/livez")
        r = kept.getresponse()
        answer = (r.status, r.read())
    except (OSError, http.client.HTTPException) as e:
        answer = repr(e)
    check(answer == (200, b"ok\n"), "the connection opened before still serves, nothing dropped: %s" % (answer,))
    kept.close()
    check("the certificate was renewed from " + path("tls.crt") in open(log).read(), "the renewal is logged")
    proc.send_signal(signal.SIGTERM)
    check(proc.wait(timeout=20) == 0, "the host stops cleanly")
    # selfSigned: the CA written where clients can take it.
    config = {"admin": {"listen": "127.0.0.1:0", "tls": {"selfSigned": True, "caOut": path("self-ca.crt")}},
              "domains": [{"id": "alice", "plugins": [{"name": "heartbeat"}]}]}
    proc, log = start_host(config)
    m = eventually(lambda: re.search(r"admin server listening on 127\.0\.0\.1:(\d+) \(TLS\)", open(log).read()), 30)
    check(m, "the self-signed host serves over TLS: " + open(log).read()[-500:])
    port = int(m.group(1))
    check(verifies("self-ca.crt"), "a client verifies the self-signed certificate with the CA in caOut")
    check("its CA is in " + path("self-ca.crt") in open(log).read(), "the log says where the CA is")
    proc.send_signal(signal.SIGTERM)
    check(proc.wait(timeout=20) == 0, "the self-signed host stops cleanly")


def main():
    certificates()
    kc = cluster()
    config = {"logLevel": "trace",
              "admin": {"listen": "127.0.0.1:0",
                        "tls": {"certFile": path("server.crt"), "keyFile": path("server.key")},
                        "auth": "kubernetes", "clientCAFile": path("ca.crt")},
              "cluster": {"kubeconfig": kc},
              "domains": [{"id": "alice", "plugins": [{"name": "task-timeline"}]}]}
    proc, log = start_host(config)
    m = eventually(lambda: re.search(r"admin server listening on 127\.0\.0\.1:(\d+) \(TLS\)", open(log).read()), 30)
    check(m, "the host serves its admin server over TLS: " + open(log).read()[-1000:])
    base = "https://127.0.0.1:" + m.group(1)
    def ready():
        try:
            return get(base + "/readyz")[0] == 200
        except (urllib.error.URLError, ConnectionError, ssl.SSLError):
            return False  # still starting: the listener is up before every check has passed
    check(eventually(ready, 30), "the host is ready")
    clients(base)
    cli(base)
    prometheus("127.0.0.1:" + m.group(1))
    proc.send_signal(signal.SIGTERM)
    check(proc.wait(timeout=20) == 0, "the host stops cleanly")
    text = open(log).read()
    check(re.search(r"Z trace \[", text), "the host logged at trace level")
    leaked = [who for who, token in TOKENS.items() if token in text]
    check(not leaked, "no token in the host's log (%d bytes at trace level): %s" % (len(text), leaked))
    embedded()
    refusals()
    rotation()


try:
    main()
    print("admin e2e passed")
except SystemExit:
    for name in sorted(os.listdir(work)):
        if name.endswith(".log"):
            print("--- %s ---\n%s" % (name, open(path(name)).read()[-3000:]), file=sys.stderr)
    raise
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
    shutil.rmtree(work, ignore_errors=True)
