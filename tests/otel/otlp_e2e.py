#!/usr/bin/python3
"""otel-export's OTLP/HTTP requests against the real thing, and its exporter against receivers
that fail.

Conformance: the official OpenTelemetry JavaScript SDK (npm, pinned in package-lock.json) makes
the spans of a known timeline (reference.js) and its own exporters send them, in both encodings;
otel-export's span model and exporter (otlp_fixture) send the same timeline. The two sides'
requests must match field by field: the protobuf body decoded as a wire tree, the JSON body as
sent, both normalised only where the specification makes them equal (a field at its default,
64-bit integers as strings or numbers, attribute order).

Then: 503 with Retry-After then 200 (retried after the wait asked for); a partial success (counted,
not retried); 400 (not retried); a receiver that never answers (timeout, retries, give-up); a
receiver that is down long enough to fill the queue (oldest dropped and counted, then it
recovers); gzip, extra headers and TLS with a CA file (certificates made here) on the wire.

usage: otlp_e2e.py <otlp_fixture> <node work dir>
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from otlp_support import Capture, decode, spans_of  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
fixture_tool, node_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
FIXTURE = os.path.join(here, "../fixtures/otel-timeline.json")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def node_modules():
    """npm ci of the pinned reference SDK into the build tree (once per lock file)."""
    os.makedirs(node_dir, exist_ok=True)
    stamp = os.path.join(node_dir, "node_modules", ".kuscia-lock")
    lock = open(os.path.join(here, "package-lock.json")).read()
    if os.path.exists(stamp) and open(stamp).read() == lock:
        return
    for f in ("package.json", "package-lock.json", "reference.js"):
        shutil.copy(os.path.join(here, f), node_dir)
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=node_dir,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit("FAIL: npm ci of the OpenTelemetry JavaScript SDK: " + r.stderr[-2000:])
    open(stamp, "w").write(lock)


def reference(encoding, domain):
    cap = Capture()
    shutil.copy(os.path.join(here, "reference.js"), node_dir)
    url = cap.url + "/v1/traces"
    r = subprocess.run(["node", os.path.join(node_dir, "reference.js"), url, encoding, domain],
                       cwd=node_dir, capture_output=True, text=True, timeout=120)
    cap.stop()
    if r.returncode != 0:
        raise SystemExit("FAIL: reference.js: " + r.stderr[-2000:])
    return cap


def plugin(config, domain="alice", script=None, capture=None, extra=(), timeout=120):
    cap = capture or Capture(script)
    cfg = dict({"endpoint": cap.url}, **config)
    r = subprocess.run([fixture_tool, FIXTURE, domain, json.dumps(cfg), *extra],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise SystemExit("FAIL: otlp_fixture: " + r.stderr)
    return cap, json.loads(r.stdout)


def conformance():
    for encoding in ("protobuf", "json"):
        for domain in ("alice", "bob"):
            ref = reference(encoding, domain)
            for compression in ("none", "gzip"):
                ours, counters = plugin({"encoding": encoding, "compression": compression,
                                         "stuckAfterSeconds": 30}, domain)
                ours.stop()
                what = "%s, %s's spans, %s" % (encoding, domain, compression)
                check(len(ours.requests) == 1 and counters["exported"] == counters["spans"],
                      "%s: one request, every span exported (%s)" % (what, counters))
                r, o = ref.requests, ours.requests
                check(o[0]["path"] == r[0]["path"] == "/v1/traces",
                      "%s: POST /v1/traces (endpoint without a path)" % what)
                check(o[0]["headers"]["content-type"] == r[0]["headers"]["content-type"],
                      "%s: Content-Type %s" % (what, o[0]["headers"]["content-type"]))
                check((o[0]["headers"].get("content-encoding") == "gzip") == (compression == "gzip"),
                      "%s: Content-Encoding" % what)
                rres, rscope, rspans = spans_of(ref.trees())
                ores, oscope, ospans = spans_of(ours.trees())
                check(set(json.dumps(x, sort_keys=True) for x in ores) ==
                      set(json.dumps(x, sort_keys=True) for x in rres) and len(set(map(str, ores))) == 1,
                      "%s: the same resource: %s" % (what, ores[0]))
                check(oscope[0] == rscope[0], "%s: the same scope: %s / %s" % (what, oscope[0], rscope[0]))
                check([s["spanId"] for s in ospans] == [s["spanId"] for s in rspans],
                      "%s: the same %d span ids" % (what, len(rspans)))
                for a, b in zip(ospans, rspans):
                    if a != b:
                        diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
                        check(False, "%s: span %s (%s) differs: %s" % (what, b["spanId"], b["name"], diff))
                        break
                else:
                    check(True, "%s: every span equal field by field" % what)
    print("  (compared with @opentelemetry/sdk-trace-base and exporter-trace-otlp-%s of %s)" %
          ("http/-proto", json.load(open(os.path.join(here, "package.json")))["dependencies"]
           ["@opentelemetry/exporter-trace-otlp-http"]))


FAST = {"retryInitialMillis": 100, "retryMaxMillis": 400, "batchDelayMillis": 0}


def behaviours():
    # 503 with Retry-After: 1, then 200: the same body again, after the wait asked for.
    cap, c = plugin(dict(FAST), script=[(503, {"Retry-After": "1"}, b"busy"), (200, {}, b"")])
    cap.stop()
    check(len(cap.requests) == 2 and c["exported"] == c["spans"] and c["failed"] == 0,
          "503 + Retry-After then 200: retried once, everything exported (%s)" % c)
    gap = cap.requests[1]["at"] - cap.requests[0]["at"]
    check(gap >= 0.95, "the retry waited for Retry-After (1 s), not the 100 ms backoff: %.2f s" % gap)
    check(cap.requests[0]["body"] == cap.requests[1]["body"], "the retry sends the same body")

    # A partial success: counted as failed, logged, not retried.
    answer = bytes([0x0A, 0x08, 0x08, 0x03, 0x12, 0x04]) + b"full"  # rejected_spans 3, "full"
    check(decode(answer, "Response") == {"partialSuccess": {"rejectedSpans": 3, "errorMessage": "full"}},
          "the partial success fixture decodes as meant")
    cap, c = plugin(dict(FAST), script=[(200, {"Content-Type": "application/x-protobuf"}, answer)])
    cap.stop()
    check(len(cap.requests) == 1 and c["failed"] == 3 and c["exported"] == c["spans"] - 3,
          "partial success (protobuf): 3 rejected counted as failed, no retry (%s)" % c)
    check("full" in c["lastPartial"], "its message is kept for the log: %s" % c["lastPartial"])
    cap, c = plugin(dict(FAST, encoding="json"),
                    script=[(200, {"Content-Type": "application/json"},
                             b'{"partialSuccess": {"rejectedSpans": "2", "errorMessage": "quota"}}')])
    cap.stop()
    check(c["failed"] == 2 and c["exported"] == c["spans"] - 2,
          "partial success (JSON, int64 as a string): 2 rejected (%s)" % c)

    # 400: not retried.
    cap, c = plugin(dict(FAST), script=[(400, {}, b"bad request")])
    cap.stop()
    check(len(cap.requests) == 1 and c["failed"] == c["spans"] and c["exported"] == 0,
          "400: failed at once, not retried (%s)" % c)
    check("HTTP 400" in c["lastError"], "the error names the status: %s" % c["lastError"])

    # A receiver that never answers: each request times out, is retried, and the batch is given up.
    start = time.monotonic()
    cap, c = plugin(dict(FAST, timeoutMillis=300, retryGiveUpSeconds=2), script=[("hang",)])
    took = time.monotonic() - start
    cap.stop()
    check(c["failed"] == c["spans"] and len(cap.requests) >= 2,
          "a hanging receiver: %d requests timed out, then the batch failed (%s)" % (len(cap.requests), c))
    check("no answer within 300 ms" in c["lastError"], "the error says why: %s" % c["lastError"])
    check(took < 30, "and the exporter did not hang with it (%.1f s)" % took)

    # Down long enough to fill the queue: the oldest spans are dropped and counted; once the
    # receiver is back, what the queue held goes out.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    late = {}

    def come_back():
        time.sleep(1.5)
        late["cap"] = Capture(port=port)
    import threading
    threading.Thread(target=come_back, daemon=True).start()
    cfg = dict(FAST, endpoint="http://127.0.0.1:%d" % port, queueMaxSpans=20, batchMaxSpans=10)
    r = subprocess.run([fixture_tool, FIXTURE, "alice", json.dumps(cfg), "--repeat", "8"],
                       capture_output=True, text=True, timeout=120)
    c = json.loads(r.stdout)
    cap = late.get("cap")
    check(cap is not None and c["dropped"] > 0 and c["exported"] > 0 and
          c["exported"] + c["failed"] + c["dropped"] == c["spans"],
          "a receiver down for 1.5 s: %d of %d spans dropped (queue of 20), %d exported once it "
          "was back, none unaccounted (%s)" % (c["dropped"], c["spans"], c["exported"], c))
    if cap:
        received = sum(len(t["resourceSpans"][0]["scopeSpans"][0]["spans"]) for t in cap.trees())
        check(received == c["exported"], "the receiver got exactly the %d exported spans" % received)
        cap.stop()

    # Extra headers, one read from a file (a token), on the wire.
    token = os.path.join(node_dir, "token")
    open(token, "w").write("Bearer s3cr3t\n")
    cap, c = plugin(dict(FAST, headers={"X-Scope-OrgID": "tenant-a"},
                         headerFiles={"Authorization": token}))
    cap.stop()
    h = cap.requests[0]["headers"]
    check(h.get("authorization") == "Bearer s3cr3t" and h.get("x-scope-orgid") == "tenant-a",
          "headers and headerFiles are sent (%s)" % {k: h.get(k) for k in ("authorization", "x-scope-orgid")})

    # TLS with a CA file, with certificates made here: verified, name checked; a wrong CA fails.
    certs = os.path.join(node_dir, "certs")
    os.makedirs(certs, exist_ok=True)
    def openssl(*args):
        subprocess.run(["openssl", *args], cwd=certs, check=True, capture_output=True)
    for name in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
                "-keyout", name + ".key", "-out", name + ".pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=receiver", "-keyout", "server.key",
            "-out", "server.csr")
    open(os.path.join(certs, "san.ext"), "w").write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "2", "-extfile", "san.ext", "-out", "server.pem")
    tls = (os.path.join(certs, "server.pem"), os.path.join(certs, "server.key"))
    cap, c = plugin(dict(FAST, caFile=os.path.join(certs, "ca.pem")), capture=Capture(tls=tls))
    cap.stop()
    check(cap.url.startswith("https://") and c["exported"] == c["spans"] and len(cap.requests) == 1,
          "https with caFile: verified and sent (%s)" % c)
    cap, c = plugin(dict(FAST, caFile=os.path.join(certs, "other-ca.pem")), capture=Capture(tls=tls))
    cap.stop()
    check(not cap.requests and c["failed"] == c["spans"] and "TLS handshake" in c["lastError"],
          "a receiver whose certificate another CA signed gets nothing: %s" % c["lastError"])
    check(c["retries"] == 0 and "not retried" in c["lastError"],
          "a refused certificate fails at once, not retried for retryGiveUpSeconds (%s)" % c)

    # A path in the endpoint is used as is.
    cap = Capture()
    cap.url += "/otlp/v1/traces"
    cap, c = plugin(dict(FAST), capture=cap)
    cap.stop()
    check(cap.requests[0]["path"] == "/otlp/v1/traces", "an endpoint with a path is used as is")


node_modules()
conformance()
behaviours()
if failures:
    raise SystemExit("FAIL: %d check(s) failed" % len(failures))
print("otlp e2e passed")
