#!/usr/bin/python3
"""otel-export end to end: real hosts send real tasks' startups to an OTLP/HTTP receiver.

Centralized (`kuscia-host demo --otlp-endpoint`, slow-party): each task is one trace whose id is
the documented derivation from its name, with exactly one root, both parties, every pod and
service with their phases; the root spans the task's startup as its timeline document says, and
the blame (bob's image pull) is on the span of that phase; what came before the task in its job
(its queue, and in p2p its job's approval) is a span under the root, as the job view has it.

P2P (`demo --p2p`): two hosts, each with its own cluster, send to one receiver: one trace per task
holding both parties' spans and exactly one root (the initiator's); bob's party hangs under it as
a remote parent.

Restart: `kuscia-host run` against `kuscia-host apiserver`; the host is killed with SIGKILL after
the first task's spans went out and while the second starts; the restarted host sends the first
task's spans again with identical ids and times (within resendWindowSeconds), and the second's.

usage: otel_e2e.py <kuscia-host> <plugin-dir>
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../otel"))
from otlp_support import Capture, spans_of  # noqa: E402
from e2e_support import check, eventually, ns, sim_cluster  # noqa: E402

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
procs = []


def trace_id(task):
    return hashlib.sha256(("kuscia-host/trace/v1\n" + task).encode()).hexdigest()[:32]


def span_id(trace, party, entry, incarnation, kind):
    return hashlib.sha256("\n".join(["kuscia-host/span/v1", trace, party, entry, incarnation, kind])
                          .encode()).hexdigest()[:16]


def attrs(span):
    out = {}
    for a in span.get("attributes", []):
        v = a["value"]
        out[a["key"]] = next(iter(v.values())) if v else None
    return out


def by_trace(cap):
    """trace id -> [(resource attributes, span)] of everything received."""
    out = {}
    for t in cap.trees():
        for rs in t.get("resourceSpans", []):
            res = attrs(rs.get("resource", {}))
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    out.setdefault(s["traceId"], []).append((res, s))
    return out


def demo(cap, p2p, tasks):
    out_dir = os.path.join(work, "docs-p2p" if p2p else "docs")
    args = [host_bin, "demo", "--tasks", str(tasks), "--phase-millis", "400", "--plugin-dir", plugin_dir,
            "--admin-listen", "127.0.0.1:0", "--work-dir", os.path.join(work, "p2p" if p2p else "c"),
            "--otlp-endpoint", cap.url, "--output", out_dir, "--scenario", "slow-party"]
    if p2p:
        args.append("--p2p")
    log_path = os.path.join(work, "demo-%s.out" % ("p2p" if p2p else "c"))
    proc = subprocess.Popen(args, stdout=open(log_path, "w"), stderr=subprocess.STDOUT, text=True)
    procs.append(proc)
    out = lambda: open(log_path).read()
    check(eventually(lambda: "serving until Ctrl-C" in out() or proc.poll() is not None, 180),
          "demo serving: " + out()[-800:])
    check("traces of every task's startup go to " + cap.url in out(), "the demo says where traces go")
    names = ["demo-task-%d" % i for i in range(1, tasks + 1)]

    def complete():
        traces = by_trace(cap)
        for n in names:
            spans = [s for _, s in traces.get(trace_id(n), [])]
            kinds = [s["name"] for s in spans]
            if kinds.count("kuscia.task.startup") < 1 or kinds.count("kuscia.party.startup") < 2:
                return False
        return True
    check(eventually(complete, 60), "every task's root and both parties' spans arrive")
    time.sleep(1.5)  # anything sent after the last span a task owed would show now
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    docs = {n: json.load(open(os.path.join(out_dir, n + ".json"))) for n in names}
    return names, docs


def check_task(cap, name, doc, p2p):
    trace = trace_id(name)
    spans = by_trace(cap)[trace]
    roots = [(r, s) for r, s in spans if s["name"] == "kuscia.task.startup"]
    check(len(roots) == 1, "%s: exactly one root (%d)" % (name, len(roots)))
    res, root = roots[0]
    check(res["kuscia.domain"] == "alice", "%s: the initiator's host sends the root" % name)
    ids = [s["spanId"] for _, s in spans]
    check(len(ids) == len(set(ids)), "%s: every span sent once (%d spans)" % (name, len(ids)))
    parties = {attrs(s)["kuscia.party"]: (r, s) for r, s in spans if s["name"] == "kuscia.party.startup"}
    check(set(parties) == {"alice", "bob"}, "%s: both parties' spans: %s" % (name, sorted(parties)))
    root_id = span_id(trace, "", "", "", "task")
    check(root["spanId"] == root_id and not root.get("parentSpanId"), "%s: the root's id is derived" % name)
    for party, (r, s) in parties.items():
        check(s.get("parentSpanId") == root_id, "%s: %s's party span is under the root" % (name, party))
        check(r["kuscia.domain"] == party, "%s: %s's party span comes from its own host" % (name, party))
        remote = bool(s.get("flags", 0) & 0x200)
        check(remote == (p2p and party == "bob"),
              "%s: %s's parent is remote exactly when another host sends it (flags %#x)" % (name, party, s.get("flags", 0)))
    # What came before the task in its job: the job view's approval and queue, under the root.
    for phase in ("approval", "queued"):
        want = doc.get("job", {}).get(phase, {})
        if "to" not in want:
            continue
        got = [s for _, s in spans if s["spanId"] == span_id(trace, "", "", "", "job." + phase)]
        check(len(got) == 1 and got[0]["name"] == "kuscia.job." + phase and got[0].get("parentSpanId") == root_id
              and (int(got[0]["startTimeUnixNano"]), int(got[0]["endTimeUnixNano"])) == (ns(want["from"]), ns(want["to"])),
              "%s: the job's %s is a span under the root, as the job view has it (%s -> %s)"
              % (name, phase, want["from"], want["to"]))
    check("to" in doc.get("job", {}).get("queued", {}), "%s: the demo's job view has the task's queue" % name)
    summary = doc["summary"]
    if p2p:
        # alice's host sees only alice's pods: the root ends when the task's status says every
        # party runs, no earlier than alice's own party.
        check(attrs(root).get("kuscia.task.root_end") == "parties_running" and
              int(root["endTimeUnixNano"]) >= int(parties["alice"][1]["endTimeUnixNano"]),
              "%s: in p2p the root ends when every party runs (%s)" % (name, attrs(root).get("kuscia.task.root_end")))
    else:
        check(int(root["startTimeUnixNano"]) == ns(summary["createTime"]) and
              int(root["endTimeUnixNano"]) == ns(summary["allReadyTime"]),
              "%s: the root spans the task's startup as its timeline says (%s -> %s; the root: %s -> %s)"
              % (name, summary["createTime"], summary["allReadyTime"], root["startTimeUnixNano"],
                 root["endTimeUnixNano"]))
        check(attrs(root).get("kuscia.task.root_end") == "all_ready", "%s: the root ends when all are ready" % name)
        blame = summary["blame"]
        blamed = [s for _, s in spans if attrs(s).get("kuscia.blame")]
        check(len(blamed) == 1 and blamed[0]["name"] == blame["phase"] and
              attrs(blamed[0])["kuscia.entry"] == blame["entry"],
              "%s: the blame (%s of %s) is on that phase's span" % (name, blame["phase"], blame["entry"]))
        critical = {(attrs(s)["kuscia.entry"], s["name"]) for _, s in spans if attrs(s).get("kuscia.critical_path")}
        want = {(p["entry"], p["phase"]) for p in summary["criticalPath"] if p["phase"] != "creating"}
        check(critical == want, "%s: the critical-path phases carry kuscia.critical_path: %s" % (name, sorted(want)))
    for entry_key, e in doc["entries"].items():
        party = entry_key.split("/")[0]
        kind = "kuscia.pod.startup" if e["kind"] == "pod" else "kuscia.service.startup"
        eid = span_id(trace, party, entry_key, e["times"]["createTime"], "entry")
        mine = [s for _, s in spans if s["spanId"] == eid]
        check(len(mine) == 1 and mine[0]["name"] == kind, "%s: %s has its span" % (name, entry_key))
        if not mine:
            continue
        phases = [s for _, s in spans if s.get("parentSpanId") == eid]
        got = sorted((p["name"], int(p["startTimeUnixNano"]), int(p["endTimeUnixNano"])) for p in phases)
        want = sorted((p["phase"], ns(p["from"]), ns(p["to"])) for p in e["phases"])
        if e["kind"] == "pod" and "containersStartTime" not in e["times"]:
            # The demo read this pod's timeline after sim-agent deleted the pod (its party was
            # done long before the other): the containers' start is missing from that document,
            # not from the host, which saw the pod and sends a starting phase too.
            ends = sorted((n, b) for n, a, b in got if n != "starting")
            check(ends == sorted((n, b) for n, a, b in want),
                  "%s: %s's phase spans end when its phases do: %s (sent: %s)" % (name, entry_key, want, got))
            continue
        check(got == want, "%s: %s's phase spans are its phases, times and all: %s (sent: %s)" % (name, entry_key, want, got))


def centralized():
    cap = Capture()
    names, docs = demo(cap, False, 2)
    for n in names:
        check_task(cap, n, docs[n], False)
    pulls = [s for n in names for _, s in by_trace(cap)[trace_id(n)]
             if s["name"] == "pulling" and attrs(s)["kuscia.party"] == "bob"]
    check(pulls and all(attrs(s).get("kuscia.phase.reason") in ("Pulling", "Pulled") and
                        [e["name"] for e in s.get("events", [])] == [attrs(s)["kuscia.phase.reason"]]
                        for s in pulls),
          "bob's pulling spans carry their Event's reason, as an attribute and as a span event: %s"
          % [attrs(s).get("kuscia.phase.reason") for s in pulls])
    cap.stop()


def p2p():
    cap = Capture()
    names, docs = demo(cap, True, 2)
    for n in names:
        check_task(cap, n, docs[n], True)
    cap.stop()


def run_host(config, log):
    proc = subprocess.Popen([host_bin, "run", "--config", config, "--plugin-dir", plugin_dir,
                             "--admin-listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                            stderr=open(log, "a"))
    procs.append(proc)
    return proc


def restart():
    cap = Capture()
    kubeconfig, config = sim_cluster(host_bin, work, """      - name: otel-export
        config: { endpoint: "%s", batchDelayMillis: 100 }
""" % cap.url, 500, procs)

    def kubectl(*args, stdin=None):
        return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(work, "kcache"),
                               *args], input=stdin, capture_output=True, text=True, timeout=60)
    log = os.path.join(work, "r.log")
    host = run_host(config, log)

    def submit(name):
        task = {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
                "metadata": {"name": name, "namespace": "cross-domain"},
                "spec": {"initiator": "alice", "parties": [{"domainID": "alice", "appImageRef": "x"},
                                                           {"domainID": "bob", "appImageRef": "x"}]}}
        r = kubectl("create", "-f", "-", stdin=json.dumps(task))
        check(r.returncode == 0, "task %s created: %s" % (name, r.stderr))

    def spans_of_task(name, since=0):
        """span id -> (name, start, end) of the task's spans in the requests from `since` on."""
        out = {}
        for t in cap.trees()[since:]:
            for rs in t.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    for s in ss.get("spans", []):
                        if s["traceId"] == trace_id(name):
                            out[s["spanId"]] = (s["name"], s["startTimeUnixNano"], s["endTimeUnixNano"])
        return out

    submit("restart-1")
    started = lambda name, since=0: "kuscia.task.startup" in [v[0] for v in spans_of_task(name, since).values()]
    parties = lambda name: [v[0] for v in spans_of_task(name).values()].count("kuscia.party.startup")
    check(eventually(lambda: started("restart-1") and parties("restart-1") == 2, 60),
          "restart-1's spans went out (the root and both parties')")
    time.sleep(1)
    before = spans_of_task("restart-1")
    sent_before = len(cap.requests)
    submit("restart-2")
    time.sleep(1)  # restart-2 is starting
    host.send_signal(signal.SIGKILL)
    host.wait()
    check(not started("restart-2"), "restart-2 is mid-startup when the host is killed")
    host = run_host(config, log)
    check(eventually(lambda: len(spans_of_task("restart-1", sent_before)) >= len(before), 60),
          "the restarted host sends restart-1 again (within resendWindowSeconds)")
    check(spans_of_task("restart-1", sent_before) == before,
          "with identical ids, names and times (%d spans)" % len(before))
    check(eventually(lambda: started("restart-2"), 60), "restart-2 is sent once it started")
    host.terminate()
    host.wait(timeout=30)
    cap.stop()


try:
    centralized()
    p2p()
    restart()
    print("otel e2e passed")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
