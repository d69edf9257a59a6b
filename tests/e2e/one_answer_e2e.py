#!/usr/bin/python3
"""One answer, before and after Kuscia cleans up, and after a restart.

`kuscia-host run` against `kuscia-host apiserver`, centralized alice and bob, with sim-agent
playing the slow-party scenario (bob's image pull takes eight phases), or a slow reservation
(Kuscia's gang reservation: bob's TaskResource is Reserved eight phases after alice's, so alice's
pod awaits the other parties and bob's reserving is to blame), and deleting the finished task's
pods and services (and TaskResources) as Kuscia does. Once the task started, its summary is read from the
timeline API; then the pods and services are deleted (by sim-agent), the pods' Events too (as
they expire), and the host is killed with SIGKILL and started again. The summary (startup, last
party, the critical path, the blame: bob's pull) is then the same from the timeline API, the web
page (headless Chromium), `kuscia-host timeline`, `kuscia-host history` and the trace
(otel-export's blamed span). Run three times: the slow pull with task-history and without it,
the slow reservation with it.

usage: one_answer_e2e.py <kuscia-host> <plugin-dir>
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../otel"))
from otlp_support import Capture  # noqa: E402
from e2e_support import RunningHost, apiserver, check, delete_events, eventually, kubectl  # noqa: E402

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
procs = []
TASK = "one-answer-1"
SUMMARY_KEYS = ("complete", "startupSeconds", "lastParty", "blame", "criticalPath", "parties")


def host_config(kubeconfig, name, history_db, endpoint, slow):
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        f.write("mode: centralized\npluginDirs: [%s]\ncluster:\n  kubeconfig: %s\ndomains:\n" % (plugin_dir, kubeconfig))
        for d in ("alice", "bob"):
            if slow == "pulling":
                pull = ", pullMillis: 2400" if d == "bob" else ""
            else:
                pull = ", reserveMillis: %d" % (2400 if d == "bob" else 300)
            f.write("  - id: %s\n    plugins:\n"
                    "      - name: sim-agent\n        config: { phaseMillis: 300, cleanupMillis: 600%s }\n"
                    "      - name: task-timeline\n      - name: gateway-ready-time\n"
                    "      - name: scheduler-time\n"
                    "      - name: otel-export\n        config: { endpoint: \"%s\", batchDelayMillis: 200 }\n"
                    % (d, pull, endpoint))
            if history_db:
                f.write("      - name: task-history\n        config: { database: \"%s\", recordDelaySeconds: 1 }\n"
                        % history_db)
    return path


def submit(kubeconfig):
    task = {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
            "metadata": {"name": TASK, "namespace": "cross-domain"},
            "spec": {"initiator": "alice", "taskInputConfig": "{}",
                     "scheduleConfig": {"minReservedMembers": 2, "lifecycleSeconds": 300},
                     "parties": [{"domainID": "alice", "appImageRef": "secretflow-image"},
                                 {"domainID": "bob", "appImageRef": "secretflow-image"}]}}
    path = os.path.join(work, "task.json")
    json.dump(task, open(path, "w"))
    r = kubectl(kubeconfig, "apply", "-f", path)
    check(r.returncode == 0, "task submitted: " + r.stderr)


def summary_of(doc):
    s = doc["summary"]
    return {k: s.get(k) for k in SUMMARY_KEYS}


def task_pods_gone(kubeconfig):
    for ns in ("alice", "bob"):
        r = kubectl(kubeconfig, "get", "pods", "-n", ns, "-o", "json")
        if r.returncode != 0 or any(TASK in p["metadata"]["name"] for p in json.loads(r.stdout)["items"]):
            return False
    return True


def page_blame(url):
    chromium = shutil.which("chromium")
    check(chromium is not None, "chromium is installed")
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                          "--disable-background-networking", "--disable-component-update", "--disable-sync",
                          "--user-data-dir=" + os.path.join(work, "chromium"), "--virtual-time-budget=8000",
                          "--dump-dom", "%s/ui/#%s" % (url, TASK)],
                         capture_output=True, text=True, timeout=120).stdout
    m = re.search(r'<div id="blame"[^>]*>', dom)
    check(m is not None, "the page shows a blame line")
    tag = m.group(0)
    entry = re.search(r'data-entry="([^"]*)"', tag)
    phase = re.search(r'data-phase="([^"]*)"', tag)
    return (entry.group(1) if entry else None, phase.group(1) if phase else None)


def blamed_spans(cap):
    out = set()
    for t in cap.trees():
        for rs in t.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    a = {x["key"]: next(iter(x["value"].values())) for x in s.get("attributes", []) if x["value"]}
                    if a.get("kuscia.blame") and a.get("kuscia.task") in (TASK, None):
                        out.add((a.get("kuscia.entry"), s["name"]))
    return out


def run(with_history, slow="pulling"):
    label = "%s, %s" % ("with task-history" if with_history else "without task-history", "slow " + slow)
    name = "%s-%s" % ("history" if with_history else "plain", slow)
    run_dir = os.path.join(work, name)
    os.makedirs(run_dir)
    kubeconfig = apiserver(host_bin, run_dir, procs)
    cap = Capture()
    db = os.path.join(work, name + ".db") if with_history else None
    config = host_config(kubeconfig, "host-" + name, db, cap.url, slow)
    host = RunningHost(host_bin, config, os.path.join(work, "host-%s.log" % name), procs)
    host.start()
    submit(kubeconfig)
    check(eventually(lambda: (host.get("/api/v1/timelines/" + TASK) or {}).get("summary", {}).get("complete"), 60),
          label + ": the task started")
    # Settled: the host merges its domains' answers, which may differ for a moment as the last
    # entry turns ready (one instance has seen it, the other not yet).
    def settled():
        first = summary_of(host.get("/api/v1/timelines/" + TASK))
        time.sleep(0.5)
        return first if summary_of(host.get("/api/v1/timelines/" + TASK)) == first else None
    before = eventually(settled, 30)
    check(before is not None, label + ": the answer settled")
    check(before["blame"]["phase"] == slow and before["blame"]["party"] == "bob",
          label + ": bob's %s is blamed while the pods are there: %s" % (slow, before["blame"]))
    if slow == "reserving":
        path = [p["entry"].split("/")[0] + " " + p["phase"] for p in before["criticalPath"]]
        check("alice awaiting-parties" in path or "bob reserving" in path,
              label + ": the path goes through the reservation: %s" % path)
    check(eventually(lambda: task_pods_gone(kubeconfig), 60), label + ": sim-agent deleted the task's pods")
    delete_events(kubeconfig)
    after = summary_of(host.get("/api/v1/timelines/" + TASK))
    check(after == before, label + ": the API's answer once the pods and Events are gone: %s vs %s" % (after, before))
    host.kill()
    host.start()
    check(eventually(lambda: host.get("/api/v1/timelines/" + TASK) is not None, 30), label + ": restarted")
    answers = {"api": summary_of(host.get("/api/v1/timelines/" + TASK))}
    cli = subprocess.run([host_bin, "timeline", TASK, "--kubeconfig", kubeconfig, "-o", "json"],
                         capture_output=True, text=True, timeout=60)
    check(cli.returncode == 0, label + ": timeline prints the task: " + cli.stderr)
    answers["cli"] = summary_of(json.loads(cli.stdout))
    if with_history:
        def stored():
            r = subprocess.run([host_bin, "history", TASK, "--server", host.url, "-o", "json"],
                               capture_output=True, text=True, timeout=60)
            return json.loads(r.stdout) if r.returncode == 0 else None
        check(eventually(stored, 30), label + ": history has the task")
        answers["history"] = summary_of(stored())
    for name, answer in answers.items():
        check(answer == before, "%s: the %s's answer after the cleanup and a restart: %s vs %s"
              % (label, name, answer, before))
    blame = before["blame"]
    check(page_blame(host.url) == (blame["entry"], blame["phase"]),
          label + ": the page blames %s's %s" % (blame["entry"], blame["phase"]))
    check(eventually(lambda: blamed_spans(cap), 30), label + ": a blamed span was exported")
    check(blamed_spans(cap) == {(blame["entry"], blame["phase"])},
          label + ": every blamed span, before and after the restart, is %s's %s: %s"
          % (blame["entry"], blame["phase"], blamed_spans(cap)))
    host.kill()
    cap.stop()
    for p in procs:
        if p.poll() is None:
            p.kill()


try:
    run(True)
    run(False)
    run(True, "reserving")
    print("PASS: one answer before and after the cleanup and a restart, with and without task-history, "
          "for a slow pull and a slow reservation")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
