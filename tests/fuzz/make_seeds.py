#!/usr/bin/python3
"""Writes the fuzz harnesses' seed corpora (tests/fuzz/corpus/<harness>/) from the stored
fixtures (tests/fixtures), the sample configs (config/) and a few hand-made inputs. The output is
committed; run this again after a fixture changes and commit the difference.

usage: tests/fuzz/make_seeds.py
"""
import json
import os
import shutil

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, "..", ".."))
out = os.path.join(here, "corpus")


def fixture(name):
    with open(os.path.join(root, "tests", "fixtures", name)) as f:
        return json.load(f)


def text(path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def dump(obj):
    return json.dumps(obj, separators=(",", ":"))


corpora = {}


def seed(harness, data):
    corpora.setdefault(harness, []).append(data.encode() if isinstance(data, str) else data)


objects = [fixture(n) for n in ("pod.json", "service.json", "endpoints.json", "kusciatask.json")]
events = [dump({"type": t, "object": o}) for t, o in zip(("ADDED", "MODIFIED", "DELETED", "ADDED"), objects)]
events.append(dump({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                                   "metadata": {"resourceVersion": "48300"}}}))
events.append(dump({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                "message": "too old resource version: 1 (48213)",
                                                "reason": "Expired", "code": 410}}))
page = dump({"kind": "PodList", "apiVersion": "v1",
             "metadata": {"resourceVersion": "48213", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"},
             "items": [objects[0], {"metadata": {"name": 7}}, objects[0]]})

# The watch stream: every event, one per line (chunk sizes 1, 7 and 64), and pretty-printed.
seed("fuzz_watch_stream", b"\x00" + "\n".join(events).encode() + b"\n")
seed("fuzz_watch_stream", b"\x06" + "".join(events).encode())
seed("fuzz_watch_stream", b"\x3f" + json.dumps({"type": "ADDED", "object": objects[0]}, indent=2).encode())
seed("fuzz_watch_stream", b"\x02" + b'{"type":"MODIFIED","object":{"metadata":{"name":"a \\"}{\\\\"}}}\n')

for e in events:
    seed("fuzz_projection", e)
seed("fuzz_projection", page)
seed("fuzz_projection", dump({"kind": "Status", "apiVersion": "v1", "code": 500, "message": "x"}))

for path in ("config/kuscia-host.yaml", "config/samples/centralized.yaml", "config/samples/embedded.yaml",
             "config/samples/p2p-alice.yaml"):
    seed("fuzz_host_config", text(path))
seed("fuzz_host_config", "mode: centralized\nlogLevel: trace\nadmin: {listen: '127.0.0.1:0'}\n"
     "cluster: {kubeconfig: /nonexistent}\ndomains:\n  - id: alice\n    plugins:\n"
     "      - name: task-timeline\n        required: false\n        config: {coalesceMillis: 20}\n"
     "      - {name: scheduler-time, logLevel: debug}\n")

kubeconfig = {
    "apiVersion": "v1", "kind": "Config", "current-context": "kuscia-host",
    "clusters": [{"name": "embedded", "cluster": {"server": "https://127.0.0.1:6443",
                                                  "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==",
                                                  "tls-server-name": "kubernetes"}},
                 {"name": "plain", "cluster": {"server": "http://[::1]:8080", "insecure-skip-tls-verify": True}}],
    "users": [{"name": "token", "user": {"token": "abc"}},
              {"name": "cert", "user": {"client-certificate-data": "Y2VydA==", "client-key-data": "a2V5"}},
              {"name": "file", "user": {"tokenFile": "token.txt"}}],
    "contexts": [{"name": "kuscia-host", "context": {"cluster": "embedded", "user": "token", "namespace": "alice"}},
                 {"name": "other", "context": {"cluster": "plain", "user": "cert"}}]}
seed("fuzz_kubeconfig", json.dumps(kubeconfig, indent=2))
seed("fuzz_kubeconfig", "apiVersion: v1\nkind: Config\ncurrent-context: other\nclusters:\n- name: plain\n"
     "  cluster:\n    server: http://127.0.0.1:8080\nusers:\n- name: cert\n  user: {}\ncontexts:\n"
     "- name: other\n  context: {cluster: plain, user: cert}\n")

for t in ("2024-05-20T08:00:10Z", "2024-05-20T08:00:10.123456789+08:00", "1970-01-01T00:00:00-00:30",
          "9999-12-31T23:59:59.999Z", "2024-02-29t23:59:60z"):
    seed("fuzz_plugin_inputs", b"\x00" + t.encode())
for selector, cfg in ((1, {"coalesceMillis": 20, "stuckAfterSeconds": 300}),
                      (2, {"source": "envoy-admin", "envoyAdminUrl": "http://127.0.0.1:15000", "pollMillis": 1000}),
                      (3, {}),
                      (4, {"podsPerParty": 2, "ports": [{"name": "spu", "scope": "Cluster"}],
                           "distribution": "lognormal", "spread": 0.5, "failureRate": 0.1})):
    seed("fuzz_plugin_inputs", bytes([selector]) + dump(cfg).encode())
# Timeline documents (selector 5): complete with a pull and a service, and incomplete.
doc = {"task": "t1", "createTime": "2024-05-20T07:59:58Z", "entries": {
    "alice/t1-0": {"kind": "pod", "times": {"createTime": "2024-05-20T08:00:00Z", "startTime": "2024-05-20T08:00:02Z",
                                            "imagePullStartTime": "2024-05-20T08:00:02Z",
                                            "imagePullEndTime": "2024-05-20T08:00:07Z",
                                            "readyTime": "2024-05-20T08:00:09Z"},
                   "reasons": {"pulling": {"reason": "Pulled", "message": "in 5s"}}},
    "alice/t1-0-fed": {"kind": "service", "times": {"createTime": "2024-05-20T08:00:00Z",
                                                    "readyTime": "2024-05-20T08:00:10Z"}},
    "bob/t1-0": {"kind": "pod", "times": {"createTime": "2024-05-20T08:00:00Z"},
                 "waiting": {"phase": "scheduling", "reason": "Unschedulable"}}}}
seed("fuzz_plugin_inputs", bytes([5]) + dump(doc).encode())
# A pod event's projected fields as task-timeline subscribes to them (selector 6).
pod = objects[0]
seed("fuzz_plugin_inputs", bytes([6]) + dump([
    pod["metadata"].get("annotations", {}).get("kuscia.secretflow/task-id"),
    pod["metadata"].get("creationTimestamp"), pod["status"].get("startTime"), pod["status"].get("phase"),
    pod["status"].get("conditions"), pod["status"].get("containerStatuses"), pod["status"].get("reason"),
    pod["status"].get("message")]).encode())

# The admin server's authentication inputs (fuzz_admin_auth: the first byte picks the parser).
for selector, text in ((0, "Bearer abc.def-ghi"), (0, "bearer   x"), (0, "Basic dXNlcjpwYXNz"),
                       (1, "# tokens\nt0ken prometheus\nother alice the admin\n"),
                       (2, 't1,prometheus,u1,"monitoring,ops"\nt2,eve,u2\n'),
                       (3, dump({"spec": {"token": "t"}})),
                       (3, dump({"metadata": {"name": "viewer"}, "roleRef": {"kind": "ClusterRole", "name": "viewer"},
                                 "subjects": [{"kind": "User", "name": "u"}],
                                 "rules": [{"nonResourceURLs": ["/metrics", "/api/*"], "verbs": ["get"]}],
                                 "spec": {"user": "u", "nonResourceAttributes": {"path": "/api/x", "verb": "get"}}}))):
    seed("fuzz_admin_auth", bytes([selector]) + (text if isinstance(text, bytes) else text.encode()))

pod = objects[0]
patches = [
    (0, {"metadata": {"annotations": {"kuscia.secretflow/ready-time": "2024-05-20T08:00:12Z"}, "labels": None}}),
    (1, [{"op": "add", "path": "/metadata/labels/x", "value": "y"},
         {"op": "test", "path": "/kind", "value": "Pod"},
         {"op": "move", "from": "/metadata/labels/x", "path": "/metadata/labels/z"},
         {"op": "remove", "path": "/status/conditions/0"}]),
    (2, {"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-20T08:00:12Z"},
                                   {"type": "Initialized", "$patch": "delete"}],
                    "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "PodScheduled"}]}}),
    (3, {"metadata": {"finalizers": ["a"], "$deleteFromPrimitiveList/finalizers": ["b"]},
         "spec": {"$retainKeys": ["containers"], "containers": [{"name": "secretflow", "image": "x"}]}}),
    (4, {"spec": {"ports": [{"port": 8080, "name": "spu"}], "$patch": "replace"}}),
]
for selector, p in patches:
    seed("fuzz_patch", bytes([selector]) + dump(pod).encode() + b"\x00" + dump(p).encode())

for s in ("kuscia.secretflow/task-id=t", "a=b,c!=d", "env in (prod, qa),!tier", "x notin (a,b),y",
          "metadata.name=p,metadata.namespace!=bob", "app==secretflow", ""):
    seed("fuzz_selectors", s)

# The HTTP servers: byte 0 is 0 for the API server, 1 for the admin server.
body = dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "alice"},
             "spec": {"containers": [{"name": "c", "image": "i"}]}})


def req(method, target, body="", headers=()):
    lines = ["%s %s HTTP/1.1" % (method, target), "Host: 127.0.0.1"] + list(headers)
    if body:
        lines.append("Content-Length: %d" % len(body.encode()))
    return "\r\n".join(lines) + "\r\n\r\n" + body


api = [
    req("GET", "/api/v1/namespaces/alice/pods?labelSelector=a%3Db&limit=2"),
    req("POST", "/api/v1/namespaces/alice/pods", body, ["Content-Type: application/json"]),
    req("PATCH", "/api/v1/namespaces/alice/pods/p/status", dump(patches[2][1]),
        ["Content-Type: application/strategic-merge-patch+json"]),
    req("PATCH", "/api/v1/namespaces/alice/pods/p", dump(patches[1][1]), ["Content-Type: application/json-patch+json"]),
    req("PUT", "/apis/kuscia.secretflow/v1alpha1/namespaces/cross-domain/kusciatasks/t/status",
        dump(objects[3]), ["Content-Type: application/json"]),
    req("GET", "/api/v1/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true"),
    req("GET", "/api/v1/namespaces/alice/pods", "", ["Accept: application/json;as=Table;v=v1;g=meta.k8s.io"]),
    req("DELETE", "/api/v1/namespaces/alice/pods/p"),
    req("GET", "/apis") + req("GET", "/openapi/v2") + req("GET", "/version"),
    "POST /api/v1/namespaces/alice/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n",
]
for r in api:
    seed("fuzz_http", b"\x00" + r.encode())
for r in (req("GET", "/metrics"), req("GET", "/readyz?verbose"), req("HEAD", "/livez"),
          req("GET", "/api/v1/timelines/secretflow-task-psi?format=json"), req("GET", "/api/v1/timelines"),
          req("GET", "/ui/"), req("POST", "/livez", "x"), "GET / HTTP/1.0\r\n\r\n"):
    seed("fuzz_http", b"\x01" + r.encode())

# otel-export (fuzz_otlp): receivers' answers, Retry-After, endpoints, the known timeline.
seed("fuzz_otlp", b"\x00" + bytes([0x0A, 0x08, 0x08, 0x03, 0x12, 0x04]) + b"full")
seed("fuzz_otlp", b"\x01" + b'{"partialSuccess": {"rejectedSpans": "2", "errorMessage": "quota"}}')
for v in ("3", "Sun, 06 Nov 1994 08:49:37 GMT", "soon"):
    seed("fuzz_otlp", b"\x02" + v.encode())
for u in ("http://collector:4318", "https://tempo/otlp/v1/traces", "http://[::1]:4318/", "ftp://x"):
    seed("fuzz_otlp", b"\x03" + u.encode())
for d in fixture("otel-timeline.json")["documents"].values():
    seed("fuzz_otlp", b"\x04" + dump(d).encode())

# Why a task failed: byte 0 picks which texts a pod's status entry holds (bit 0..2) and whether
# the task Failed (bit 3); then reason, message, terminationLog and the task's message, cut at NUL.
for flags, parts in (
        (0x0f, ["OOMKilled", "exit code 137",
                'container[secretflow] terminated state reason "OOMKilled", message: ""',
                "The remaining no-failed party task counts 1"]),
        (0x03, ["ImagePullBackOff",
                'container[secretflow] waiting state reason: "ImagePullBackOff", message: "Back-off pulling image"',
                "", ""]),
        (0x0c, ["Error", "", 'container[c] terminated state reason "Error", message: "' + "x" * 900 +
                '\u00e9 delayed connect error: 111"', ""]),
        (0x09, ["Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.", "",
                "The task was not scheduled within 300 seconds of its entire lifecycle"])):
    seed("fuzz_failure", bytes([flags]) + "\0".join(parts).encode())
seed("fuzz_failure", b"\x0f\x01\x02\x1b[31m\x00\xff\xfe bad utf8\x00\xe9\xe9\xe9\x00\x7f")

shutil.rmtree(out, ignore_errors=True)
for harness, seeds in sorted(corpora.items()):
    os.makedirs(os.path.join(out, harness))
    for i, data in enumerate(seeds):
        with open(os.path.join(out, harness, "seed-%02d" % i), "wb") as f:
            f.write(data)
    print("%s: %d seeds" % (harness, len(seeds)))
