#!/usr/bin/python3
"""Why each task failed or is stuck, everywhere, before and after Kuscia cleans up.

`kuscia-host run` against `kuscia-host apiserver`, centralized alice and bob, sim-agent playing
one fault of bob's per task (the `sim.kuscia-host/fault` annotation, as the demo's scenarios do):
an image that cannot be pulled (stuck for good: Kuscia never fails the task), a container killed
for memory, one that crashes, one that ends with the gateway's connection error, a pod the
scheduler cannot place (stuck, then Failed once the task's lifecycle ran out), the route to bob
down (the task's pre-check fails it before any pod: RouteNotReady on the pair), and a normal task.
Each task's classification is asserted from the timeline API and the metrics; then the finished
tasks' pods and services are gone (sim-agent), their Events deleted, the host killed and started
again, and the same classification comes from the API, `kuscia-host timeline`, task-history
(the list filtered by reason, its stats by reason), the web page (headless Chromium) and the
trace (the root span in status ERROR with the reason, the excerpt as its event).

usage: failure_e2e.py <kuscia-host> <plugin-dir>
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../otel"))
from otlp_support import Capture  # noqa: E402
from e2e_support import (RunningHost, apiserver, check, delete_events, eventually, kubectl, ns,  # noqa: E402
                          submit_fault_tasks)

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
procs = []
STUCK_AFTER = 3
# task -> (fault, what the summary must say: kind, reason, cause)
CASES = {
    "f-image": ("image-missing", ("stuck", "ImagePull", None)),
    "f-oom": ("oom", ("failure", "OOMKilled", None)),
    "f-crash": ("crash", ("failure", "Crashed", None)),
    "f-peer": ("peer-network", ("failure", "PeerNetwork", None)),
    "f-unsched": ("unschedulable", ("failure", "Unschedulable", "Expired")),
    "f-route": ("route-down", ("failure", "RouteNotReady", None)),
    "f-ok": ("", None),
}
# The party each reason names, where it is not bob's pod's: a route's pre-check fails the task
# before any pod, and names the route's pair (alice-bob, `pair`); centralized, the status
# allocated every party's ports (one controller checked them all): no party (p2p names the
# cluster's own, failure_p2p_e2e.py).
PARTY = {"RouteNotReady": None}
# The evidence each reason's excerpt holds, in its writer's words.
EVIDENCE = {"ImagePull": "ImagePullBackOff", "OOMKilled": 'reason "OOMKilled"',
            "Crashed": "ValueError", "PeerNetwork": "delayed connect error: 111",
            "Unschedulable": "Insufficient cpu", "RouteNotReady": "HeartBeatTimeout"}


def host_config(kubeconfig, history_db, endpoint):
    path = os.path.join(work, "host.yaml")
    with open(path, "w") as f:
        f.write("mode: centralized\npluginDirs: [%s]\ncluster:\n  kubeconfig: %s\ndomains:\n"
                % (plugin_dir, kubeconfig))
        for d in ("alice", "bob"):
            f.write("  - id: %s\n    plugins:\n"
                    "      - name: sim-agent\n        config: { phaseMillis: 300, cleanupMillis: 600 }\n"
                    "      - name: task-timeline\n        config: { stuckAfterSeconds: %d }\n"
                    "      - name: gateway-ready-time\n"
                    "      - name: otel-export\n"
                    "        config: { endpoint: \"%s\", batchDelayMillis: 200, stuckAfterSeconds: %d }\n"
                    "      - name: task-history\n        config: { database: \"%s\", recordDelaySeconds: 1, stuckAfterSeconds: %d }\n"
                    % (d, STUCK_AFTER, endpoint, STUCK_AFTER, history_db, STUCK_AFTER))
    return path


def submit(kubeconfig):
    submit_fault_tasks(kubeconfig, work, {task: fault for task, (fault, _) in CASES.items()}, 8)


def why(summary):
    """(kind, reason, party, cause, excerpt) of a summary's failure or stuck; None for neither."""
    for kind in ("failure", "stuck"):
        if kind in summary:
            c = summary[kind]
            return (kind, c.get("reason"), c.get("party"), c.get("cause"), c.get("excerpt", ""))
    return None


def expect(task, summary, where):
    want = CASES[task][1]
    got = why(summary)
    if want is None:
        check(got is None and summary.get("complete"), "%s: %s started, no failure: %s" % (where, task, got))
        return
    kind, reason, cause = want
    party = PARTY.get(reason, "bob")
    check(got is not None and got[:4] == (kind, reason, party, cause),
          "%s: %s is %s %s in %r (cause %s): %s" % (where, task, kind, reason, party, cause, got))
    check(EVIDENCE[reason] in got[4], "%s: %s's excerpt holds %r: %r" % (where, task, EVIDENCE[reason], got[4]))
    if reason == "RouteNotReady":
        check(summary[kind].get("pair") == "alice-bob", "%s: %s names the route alice-bob: %s"
              % (where, task, summary[kind]))
        # sim-agent made the route not Ready a phase before the task checked it: the host observed
        # it and kept it on the route.
        down = summary[kind].get("routeDown", {})
        check(down.get("observed") is True and "since" in down and ns(down["since"]) <= ns(summary[kind]["since"]),
              "%s: %s says when the route went down, observed: %s" % (where, task, summary[kind]))
    check(len(got[4].encode()) <= 512 and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", got[4]),
          "%s: %s's excerpt is bounded, without control characters" % (where, task))


def settled(host):
    for task, (_, want) in CASES.items():
        doc = host.get("/api/v1/timelines/" + task)
        if doc is None:
            return False
        got = why(doc["summary"])
        if want is None and not doc["summary"].get("complete"):
            return False
        if want is not None and (got is None or got[:2] != want[:2]):
            return False
    return True


def metric(host, name, labels):
    text = host.text("/metrics") or ""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def pods_gone(kubeconfig, tasks):
    r = kubectl(kubeconfig, "get", "pods", "-A", "-o", "json")
    return r.returncode == 0 and not any(p["metadata"]["name"].rsplit("-", 1)[0] in tasks
                                         for p in json.loads(r.stdout)["items"])


def page(url, task):
    chromium = shutil.which("chromium")
    check(chromium is not None, "chromium is installed")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          "--user-data-dir=" + os.path.join(work, "chromium"), "--virtual-time-budget=8000",
                          "--dump-dom", "%s/ui/#%s" % (url, task)],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<div id="failure"[^>]*>', dom)
    check(m is not None, "the page has the failure box")
    tag = m.group(0)
    attrs = dict(re.findall(r'data-(reason|party|kind)="([^"]*)"', tag))
    excerpt = re.search(r'<pre id="failureExcerpt">(.*?)</pre>', dom, re.S)
    title = re.search(r'id="failureTitle"[^>]*>(.*?)<', dom, re.S)
    attrs["title"] = title.group(1) if title else ""
    return ("hidden" not in tag, attrs, excerpt.group(1) if excerpt else "")


def root_spans(cap):
    """task -> (status code, status message, the kuscia.failure event's excerpt) of root spans."""
    out = {}
    for t in cap.trees():
        for rs in t.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    if s["name"] != "kuscia.task.startup":
                        continue
                    a = {x["key"]: next(iter(x["value"].values())) for x in s.get("attributes", []) if x["value"]}
                    ev = [e for e in s.get("events", []) if e.get("name") == "kuscia.failure"]
                    ex = ""
                    if ev:
                        ea = {x["key"]: next(iter(x["value"].values())) for x in ev[0].get("attributes", [])}
                        ex = ea.get("kuscia.failure.excerpt", "")
                    status = s.get("status", {})
                    out[a.get("kuscia.task.name")] = (status.get("code", 0), status.get("message", ""), ex)
    return out


try:
    kubeconfig = apiserver(host_bin, work, procs)
    cap = Capture()
    db = os.path.join(work, "history.db")
    host = RunningHost(host_bin, host_config(kubeconfig, db, cap.url), os.path.join(work, "host.log"), procs)
    host.start()
    submit(kubeconfig)
    check(eventually(lambda: settled(host), 90), "every task settled: " + json.dumps(
        {t: why((host.get("/api/v1/timelines/" + t) or {}).get("summary", {})) for t in CASES}))
    for task in CASES:
        expect(task, host.get("/api/v1/timelines/" + task)["summary"], "api")
    # The unschedulable task was stuck before its lifecycle ran out: the excerpt says so too.
    # Metrics: bounded labels only (the party, the reason), each failure counted once.
    for reason in ("OOMKilled", "Crashed", "PeerNetwork", "Unschedulable"):
        check(eventually(lambda: metric(host, "kuscia_timeline_task_failures_total",
                                        {"party": "bob", "reason": reason}) == 1, 30),
              "metrics: one %s failure of bob's: %s" % (reason, [l for l in (host.text("/metrics") or "").splitlines()
                                                                 if "task_failures_total{" in l and " 0" not in l[-2:]]))
    check(eventually(lambda: metric(host, "kuscia_timeline_tasks_stuck", {"party": "bob", "reason": "ImagePull"}) == 1, 40),
          "metrics: one task stuck on bob's image")
    metrics = host.text("/metrics")
    check("f-oom" not in metrics and "ValueError" not in metrics, "no task name or message text in the metrics")
    # The trace: each failed task's root in ERROR with its reason and the excerpt; the stuck one's
    # root too (pending).
    def traced():
        roots = root_spans(cap)
        return all(t in roots and roots[t][0] == 2 and roots[t][1] == CASES[t][1][1] for t in CASES if CASES[t][1])
    check(eventually(traced, 30), "trace: every failed or stuck task's root is ERROR with its reason: %s" % root_spans(cap))
    for task, (code, message, excerpt) in root_spans(cap).items():
        if CASES.get(task, (None, None))[1]:
            check(EVIDENCE[message] in excerpt, "trace: %s's excerpt event holds the evidence: %r" % (task, excerpt))
    # Kuscia cleans up: the finished tasks' pods and services go (sim-agent), the Events expire.
    failed = [t for t, (_, w) in CASES.items() if w and w[0] == "failure"]
    check(eventually(lambda: pods_gone(kubeconfig, failed), 60), "the failed tasks' pods were deleted")
    delete_events(kubeconfig)
    host.kill()
    host.start()
    check(eventually(lambda: settled(host), 60), "restarted: every task settled again")
    for task in CASES:
        expect(task, host.get("/api/v1/timelines/" + task)["summary"], "api after the cleanup and a restart")
        cli = subprocess.run([host_bin, "timeline", task, "--kubeconfig", kubeconfig, "-o", "json",
                              "--stuck-after", str(STUCK_AFTER)], capture_output=True, text=True, timeout=60)
        check(cli.returncode == 0, "timeline prints %s: %s" % (task, cli.stderr))
        expect(task, json.loads(cli.stdout)["summary"], "cli")
    table = subprocess.run([host_bin, "timeline", "f-oom", "--kubeconfig", kubeconfig],
                           capture_output=True, text=True, timeout=60).stdout
    check("failed: OOMKilled in bob (bob/f-oom-0)" in table and "  | OOMKilled:" in table,
          "the CLI's summary says why, with the evidence below: " + table[:400])
    # History: filtered and grouped by reason.
    def listed(reason):
        r = subprocess.run([host_bin, "history", "--server", host.url, "--reason", reason, "-o", "json"],
                           capture_output=True, text=True, timeout=60)
        return [it["task"] for it in json.loads(r.stdout)] if r.returncode == 0 else None
    for task, (_, want) in CASES.items():
        if want:
            check(eventually(lambda: listed(want[1]) == [task], 30),
                  "history --reason %s lists %s alone: %s" % (want[1], task, listed(want[1])))
            stored = subprocess.run([host_bin, "history", task, "--server", host.url, "-o", "json"],
                                    capture_output=True, text=True, timeout=60)
            expect(task, json.loads(stored.stdout)["summary"], "history")
    stats = host.get("/api/v1/history/stats?groupBy=reason")
    check(sorted((g["key"], g["tasks"]) for g in stats["groups"]) ==
          sorted((w[1], 1) for _, w in CASES.values() if w), "history stats by reason: %s" % stats)
    bad = subprocess.run([host_bin, "history", "--server", host.url, "--reason", "Flaky"],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode != 0 and "reason must be one of" in bad.stderr, "a reason not in the list is refused")
    # The page, at a glance: the reason, the party and the evidence, as text.
    shown, attrs, excerpt = page(host.url, "f-peer")
    attrs.pop("title")
    check(shown and attrs == {"reason": "PeerNetwork", "party": "bob", "kind": "failure"},
          "the page shows f-peer's failure: %s" % attrs)
    check("delayed connect error: 111" in excerpt and "&lt;module&gt;" not in excerpt and "<" not in excerpt.replace("&lt;", ""),
          "the page's excerpt is the evidence, as text: %r" % excerpt)
    shown, attrs, _ = page(host.url, "f-image")
    attrs.pop("title")
    check(shown and attrs == {"reason": "ImagePull", "party": "bob", "kind": "stuck"}, "the page shows f-image stuck: %s" % attrs)
    shown, attrs, _ = page(host.url, "f-route")
    check(shown and re.search(r"RouteNotReady on route alice-bob \(HeartBeatTimeout\) at .*, down since .* \(observed\)",
                              attrs["title"]), "the page says since when the route was down: %s" % attrs)
    shown, _, _ = page(host.url, "f-ok")
    check(not shown, "the page shows no failure for a task that started")
    host.kill()
    cap.stop()
    print("PASS: every fault's classification from the API, metrics, trace, CLI, history and page, "
          "before and after the cleanup and a restart")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
