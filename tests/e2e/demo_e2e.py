#!/usr/bin/python3
"""The embedded default end to end: `kuscia-host demo`, `kuscia-host timeline` and the web page.

1. `demo --tasks 3 --exit-when-done` (centralized, and --p2p) exits 0 and prints three timelines,
   each with its summary, and every KusciaTask it leaves has every pod and service time, ordered;
   it submitted three KusciaJobs and prints each job's view (each task's queue, startup, overhead;
   in p2p the partner's approval, observed); `--scenario slow-party` blames bob's image pull.
2. `demo --tasks 2` keeps serving: `kubectl get kt` shows the CRD's printer columns and
   `kubectl get pods` READY, STATUS, RESTARTS and AGE; a finished task's pods are deleted (as Kuscia
   does) and `timeline <task> --kubeconfig F` still prints the times `kubectl get kt -o yaml` shows
   (table and json), the image pull from the pods' Events and the summary; `timeline --server`
   prints what the host's API serves; headless Chromium loads the web page and shows a row and the
   times of every entry, what came before the task in its job, and the job's page (a screenshot
   is kept next to the test's output).

usage: demo_e2e.py <kuscia-host> <plugin-dir> <artifact-dir> [--p2p|--browser]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from e2e_support import check, eventually

host_bin, plugin_dir, artifacts = sys.argv[1], sys.argv[2], sys.argv[3]
mode = sys.argv[4] if len(sys.argv) > 4 else "--centralized"
work = tempfile.mkdtemp()
os.makedirs(artifacts, exist_ok=True)


def kubectl(kubeconfig, *args):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(work, "cache"),
                        *args], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit("FAIL: kubectl %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


def tasks_complete(docs, parties):
    """Every task's timeline (as the demo left it): every pod and service time, ordered."""
    for doc in docs:
        entries = doc["entries"]
        pods = {k: e for k, e in entries.items() if e["kind"] == "pod"}
        svcs = {k: e for k, e in entries.items() if e["kind"] == "service"}
        check(len(pods) == len(parties) and len(svcs) == 3 * len(parties),
              "%s: an entry for every pod and service of %s" % (doc["task"], parties))
        for key, e in entries.items():
            fields = ("createTime", "scheduleTime", "startTime", "readyTime") if key in pods else ("createTime", "readyTime")
            values = [e["times"].get(f) for f in fields]
            check(all(values) and values == sorted(values) and not e["negative"],
                  "%s %s: every time present and ordered: %s" % (doc["task"], key, values))


def exit_when_done(p2p):
    args = [host_bin, "demo", "--tasks", "3", "--exit-when-done", "--phase-millis", "300",
            "--plugin-dir", plugin_dir, "--admin-listen", "127.0.0.1:0", "--work-dir", work,
            "--output", os.path.join(work, "out")]
    if p2p:
        args.append("--p2p")
    start = time.time()
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    print(r.stdout)
    check(r.returncode == 0, "demo%s exits 0: %s" % (" --p2p" if p2p else "", r.stderr[-2000:]))
    check(time.time() - start < 60, "within a minute (%.1f s)" % (time.time() - start))
    check(r.stdout.count("task demo-task-") == 3, "three timelines printed")
    check("tasks ready 3/3" in r.stdout, "progress shown")
    out = os.path.join(work, "out")
    names = sorted(os.listdir(out))
    check(len([f for f in names if f.startswith("demo-task-")]) == 3, "--output wrote three timelines")
    jobs = [json.load(open(os.path.join(out, f))) for f in names if f.endswith(".job.json")]
    check(len(jobs) == 3 and r.stdout.count("\njob demo-job-") == 3, "three KusciaJobs, each job's view printed")
    for job in jobs:
        t = job["tasks"][0]
        check(t["queued"].get("seconds", -1) >= 0 and t["overheadSeconds"] >= t["startupSeconds"] >= 0,
              "%s: its task's queue, startup and overhead: %s" % (job["job"], t))
        check(t["task"] in r.stdout and job["startupOverheadSeconds"] >= t["startupSeconds"],
              "%s: the job's startup overhead" % job["job"])
        # p2p jobs await the partner's approval, as Kuscia's interconnection jobs do: observed.
        check(("approval" in job) == p2p and (not p2p or job["approval"].get("observed") is True),
              "%s: approval %s" % (job["job"], job.get("approval")))
    docs = [json.load(open(os.path.join(out, f))) for f in names if f.startswith("demo-task-")]
    check(all(d["job"]["job"].startswith("demo-job-") for d in docs), "each task says what came before it in its job")
    tasks_complete(docs, ["alice", "bob"])  # p2p: the parties' clusters merged
    for doc in docs:
        s = doc["summary"]
        check(s["complete"] and s["startupSeconds"] >= 0 and s["lastParty"] in ("alice", "bob"),
              "%s: the summary says how long and who finished last: %s" % (doc["task"], s))
        check(s["criticalPath"][0]["phase"] == "creating" and s["blame"]["phase"],
              "%s: the critical path from the task's creation, and the blame" % doc["task"])
    check(r.stdout.count("blame: ") == 3, "a blame line above each table")
    shutil.rmtree(out)


def slow_party():
    # Phases of half a second: bob's pull (4 s) stands out of the one-second resolution.
    r = subprocess.run([host_bin, "demo", "--tasks", "1", "--exit-when-done", "--phase-millis", "500",
                        "--scenario", "slow-party", "--plugin-dir", plugin_dir, "--admin-listen", "127.0.0.1:0",
                        "--work-dir", work], capture_output=True, text=True, timeout=120)
    print(r.stdout)
    check(r.returncode == 0, "demo --scenario slow-party exits 0: " + r.stderr[-2000:])
    check(re.search(r"blame: bob/demo-task-1-0 pulling \d", r.stdout),
          "the blame line names bob's image pull")
    check("last party bob" in r.stdout, "bob is the last party")


def serving():
    args = [host_bin, "demo", "--tasks", "2", "--phase-millis", "300", "--plugin-dir", plugin_dir,
            "--admin-listen", "127.0.0.1:0", "--work-dir", work]
    log = open(os.path.join(work, "demo.out"), "w")
    demo = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, text=True)
    try:
        out = lambda: open(os.path.join(work, "demo.out")).read()
        check(eventually(lambda: "serving until Ctrl-C" in out()), "demo serving: " + out()[-1000:])
        check(re.search(r"kubectl --kubeconfig \S+ get kt -n cross-domain", out()), "the kubectl hint")
        kubeconfig = os.path.join(work, "cluster.kubeconfig")
        url = re.search(r"timeline web page: (http://\S+)/ui/", out()).group(1)
        kt = kubectl(kubeconfig, "get", "kt", "-n", "cross-domain")
        check(re.search(r"NAME\s+STARTTIME\s+COMPLETIONTIME\s+LASTRECONCILETIME\s+PHASE", kt),
              "kubectl get kt shows the CRD's printer columns:\n" + kt)
        # kubectl -w asks for a Table watch: an event during the watch has the list's columns.
        # The pod is created once the watch has printed its list, and the watch is read until the
        # pod's line comes (or 30 s): a loaded machine may take seconds to start each kubectl.
        watch = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(work, "cache"),
                                  "get", "pods", "-n", "alice", "-w", "--request-timeout=60s"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(iter(watch.stdout.readline, "")), daemon=True)
        reader.start()
        new_pod = r"watched\s+0/1\s+Pending\s+0\s+\d+s"
        eventually(lambda: any(re.match(r"NAME\s", l) for l in list(lines)), 30)
        kubectl(kubeconfig, "run", "watched", "-n", "alice", "--image=busybox")
        eventually(lambda: any(re.search(new_pod, l) for l in list(lines)), 30)
        watch.terminate()
        watch.wait(timeout=30)
        reader.join(timeout=30)
        watched = "".join(lines)
        check(re.search(r"NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE", watched)
              and re.search(new_pod, watched),
              "kubectl get pods -w prints a new pod with the list's columns:\n" + watched)
        pods = kubectl(kubeconfig, "get", "pods", "-n", "alice")
        check(re.search(r"NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE", pods) and "watched" in pods,
              "kubectl get pods shows READY, STATUS, RESTARTS and AGE:\n" + pods)
        # The finished tasks' pods are deleted, as Kuscia does; their timelines stay.
        check(eventually(lambda: "demo-task" not in kubectl(kubeconfig, "get", "pods", "-A"), 30),
              "the finished tasks' pods are deleted")
        task = "demo-task-1"
        yaml_times = json.loads(kubectl(kubeconfig, "get", "kt", task, "-n", "cross-domain", "-o", "json"))["status"]
        table = subprocess.run([host_bin, "timeline", task, "--kubeconfig", kubeconfig], capture_output=True,
                               text=True, timeout=30)
        check(table.returncode == 0, "timeline prints the table: " + table.stderr)
        doc = json.loads(subprocess.run([host_bin, "timeline", task, "--kubeconfig", kubeconfig, "-o", "json"],
                                        capture_output=True, text=True, timeout=30).stdout)
        for kind, entries in (("podStatuses", yaml_times["podStatuses"]), ("serviceStatuses", yaml_times["serviceStatuses"])):
            for key, e in entries.items():
                for f in ("createTime", "scheduleTime", "startTime", "readyTime"):
                    if f in e:
                        check(doc["entries"][key]["times"][f] == e[f],
                              "timeline %s %s = kubectl's %s" % (key, f, e[f]))
                        check(e[f][11:19] in table.stdout, "the table shows %s %s" % (key, f))
        check("startup " in table.stdout and "blame: " in table.stdout, "the summary above the table")
        pod = doc["entries"]["alice/demo-task-1-0"]["times"]
        check("imagePullStartTime" in pod and "imagePullEndTime" in pod,
              "the image pull from the Events, the pod gone: %s" % pod)
        check(doc["summary"]["complete"], "the summary of the finished task: %s" % doc["summary"])
        served = json.loads(urllib.request.urlopen("%s/api/v1/timelines/%s" % (url, task), timeout=10).read())
        via = json.loads(subprocess.run([host_bin, "timeline", task, "--server", url, "-o", "json"],
                                        capture_output=True, text=True, timeout=30).stdout)
        check(via["summary"] == served["summary"], "timeline --server prints the API's summary")
        check(served["summary"]["startupSeconds"] == doc["summary"]["startupSeconds"]
              and served["summary"]["lastParty"] == doc["summary"]["lastParty"],
              "the API and the CLI agree on the startup and the last party: %s vs %s"
              % (served["summary"], doc["summary"]))
        if mode == "--browser":
            browser(url, task, yaml_times)
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            check(demo.wait(timeout=20) == 0, "the demo exits 0 on Ctrl-C")
        except subprocess.TimeoutExpired:
            demo.kill()
            raise


def browser(url, task, status):
    chromium = shutil.which("chromium")
    check(chromium is not None, "chromium is installed")
    page = "%s/ui/#%s" % (url, task)
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--user-data-dir=" + os.path.join(work, "chromium"), "--virtual-time-budget=8000"]
    dom = subprocess.run(common + ["--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    shot = os.path.join(artifacts, "timeline.png")
    subprocess.run(common + ["--window-size=1400,900", "--screenshot=" + shot, page],
                   capture_output=True, text=True, timeout=120)
    check('data-loaded="true"' in dom, "the page loaded its data")
    for key, e in list(status["podStatuses"].items()) + list(status["serviceStatuses"].items()):
        check(dom.count('data-entry="%s"' % key) >= 2, "a Gantt row and a table row for " + key)
        for f in ("createTime", "startTime", "readyTime"):
            if f in e:
                check(e[f] in dom, "the page shows %s %s" % (key, f))
    check(os.path.getsize(shot) > 10000, "screenshot kept: " + shot)
    # The task-level answer at a glance: the summary, the axis, the critical path, party marks.
    check(re.search(r'data-startup-seconds="[0-9.]+"[^>]*>Startup [0-9.]+ s \S+ last party (alice|bob)', dom),
          "the summary header: startup and last party")
    check(re.search(r'id="blame"[^>]*data-phase="[a-z]+"', dom) or re.search(r'data-phase="[a-z]+"[^>]*id="blame"', dom)
          or 'Blame: </b>' in dom, "the blame line")
    check(len(re.findall(r'class="tick" data-tick="', dom)) >= 2, "a time axis with ticks in seconds")
    check(dom.count('data-critical="true"') >= 2, "the critical path marked on the bars")
    check('data-party-ready="alice"' in dom and 'data-party-ready="bob"' in dom, "each party's ready mark")
    check('data-job="demo-job-1"' in dom and "Before it, in job" in dom,
          "the task says what came before it in its job, with a link to the job")
    job_page(url, common)
    live(url, common)
    hostile(url, common)
    missing(url, common)


def job_page(url, common):
    """The job's view: its tasks, each one's queue, startup and running time, the overhead."""
    dom = subprocess.run(common + ["--dump-dom", "%s/ui/#job/demo-job-1" % url], capture_output=True,
                         text=True, timeout=120).stdout
    check('data-job-task="demo-task-1"' in dom, "the job page lists its task")
    check(re.search(r'data-overhead-seconds="[0-9.]+"[^>]*>Startup overhead [0-9.]+ s', dom),
          "the job page says the job's startup overhead")
    check(re.search(r'data-queued-seconds="[0-9.]+"', dom), "the task's wait in the job's queue")


def missing(url, common):
    """A link to a task the host does not know says so, instead of "Loading..." over "HTTP 404",
    and points at its recorded timeline."""
    dom = subprocess.run(common + ["--dump-dom", "%s/ui/#task/no-such-task" % url], capture_output=True,
                         text=True, timeout=120).stdout
    check('data-missing="task/no-such-task"' in dom, "the page marks the task as missing")
    check("No task task/no-such-task" in dom, "the title says there is no such task")
    check("knows no task named task/no-such-task" in dom, "the page says why nothing is drawn")
    check('href="#history/task%2Fno-such-task"' in dom, "a link to its recorded timeline")
    check("Loading" not in dom and "HTTP 404" not in dom, "no Loading... over a bare HTTP 404")


def one_party_task(kubeconfig, name, party):
    """Creates a KusciaTask of one party that no sim-agent serves; returns the file it wrote."""
    task = {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
            "metadata": {"name": name, "namespace": "cross-domain"},
            "spec": {"initiator": party, "parties": [{"domainID": party, "appImageRef": "x"}]}}
    path = os.path.join(work, name + ".json")
    with open(path, "w") as f:
        json.dump(task, f)
    kubectl(kubeconfig, "create", "-f", path)
    return path


def live(url, common):
    """A task the test moves while the page is open: the page redraws from starting to complete
    without a reload (a pod entry of a party no sim-agent serves, its readyTime set once the page has
    asked for it a few times)."""
    kubeconfig = os.path.join(work, "cluster.kubeconfig")
    one_party_task(kubeconfig, "live", "dave")
    created = json.loads(kubectl(kubeconfig, "get", "kt", "live", "-n", "cross-domain", "-o", "json"))[
        "metadata"]["creationTimestamp"]
    entry = {"namespace": "dave", "podName": "live-0", "podPhase": "Running", "createTime": created,
             "startTime": created}
    patch = lambda e: kubectl(kubeconfig, "patch", "kt", "live", "-n", "cross-domain", "--subresource=status",
                              "--type=merge", "-p", json.dumps({"status": {"podStatuses": {"dave/live-0": e}}}))
    patch(entry)
    import threading
    # `timeline --watch` redraws until the task is ready, then exits 0.
    watch = subprocess.Popen([host_bin, "timeline", "live", "--kubeconfig", kubeconfig, "--watch"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The page's requests are counted by the host: once it has drawn the task a few times, the
    # task becomes ready (whatever the machine's speed).
    def page_requests():
        text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
        return sum(float(v) for v in re.findall(
            r'^kuscia_host_plugin_callbacks_total\{plugin="task-timeline",[^}]*callback="on_http_request"\} (\S+)$',
            text, re.M))

    def ready_after_draws():
        start = page_requests()
        deadline = time.time() + 120
        while page_requests() < start + 6 and time.time() < deadline:
            time.sleep(0.05)
        patch(dict(entry, readyTime=created))
    timer = threading.Thread(target=ready_after_draws)
    timer.start()
    # Virtual time pauses while the page's fetches are in flight: 750 redraws take real seconds.
    budget = [a for a in common if not a.startswith("--virtual-time-budget")] + ["--virtual-time-budget=150000"]
    dom = subprocess.run(budget + ["--dump-dom", "%s/ui/?refresh=200#live" % url], capture_output=True,
                         text=True, timeout=180).stdout
    timer.join()
    states = re.search(r'data-states="([^"]*)"', dom)
    draws = re.search(r'data-draws="(\d+)"', dom)
    out, err = watch.communicate(timeout=60)
    check(watch.returncode == 0 and "startup not complete" in out and "\n---\n" in out
          and out.rstrip().split("---")[-1].lstrip().startswith("startup "),
          "timeline --watch redrew until the task was ready, then exited: %s%s" % (out[-600:], err))
    check(states and states.group(1) == "starting,complete" and int(draws.group(1)) > 1,
          "the page redrew the task live, from starting to complete, without a reload: %s, %s draws"
          % (states and states.group(1), draws and draws.group(1)))


def hostile(url, common):
    """The page escapes what it renders: a task whose phase and entry key are markup (a party no
    sim-agent serves, so nothing rewrites them) shows as text and runs nothing."""
    kubeconfig = os.path.join(work, "cluster.kubeconfig")
    markup = '<img src=x onerror="document.body.dataset.pwned=1">'
    path = one_party_task(kubeconfig, "hostile", "carol")
    status = {"status": {"phase": markup, "podStatuses": {
        "carol/" + markup: {"namespace": "carol", "podName": markup, "podPhase": "Pending",
                            "createTime": "2026-01-01T00:00:00Z"}}}}
    kubectl(kubeconfig, "patch", "kt", "hostile", "-n", "cross-domain", "--subresource=status",
            "--type=merge", "-p", json.dumps(status))
    # A pod of alice's for the task whose container waits with markup for a reason: alice's
    # task-timeline carries it into the entry's reasons, the summary and the table.
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "hostile-0", "namespace": "alice",
                        "annotations": {"kuscia.secretflow/task-id": "hostile"}},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    with open(path, "w") as f:
        json.dump(pod, f)
    kubectl(kubeconfig, "create", "-f", path)
    kubectl(kubeconfig, "patch", "pod", "hostile-0", "-n", "alice", "--subresource=status", "--type=merge", "-p",
            json.dumps({"status": {"phase": "Pending", "startTime": "2026-01-01T00:00:01Z", "containerStatuses": [
                {"name": "c", "ready": False, "restartCount": 0, "image": "x", "imageID": "",
                 "state": {"waiting": {"reason": "ErrImagePull", "message": markup}}}]}}))
    doc = lambda: json.loads(urllib.request.urlopen(url + "/api/v1/timelines/hostile", timeout=10).read())
    check(eventually(lambda: "alice/hostile-0" in doc()["entries"]
                     and "ErrImagePull" in json.dumps(doc()["entries"]["alice/hostile-0"].get("phases"))),
          "the hostile reason reached the timeline")
    dom = subprocess.run(common + ["--dump-dom", "%s/ui/#hostile" % url], capture_output=True, text=True,
                         timeout=120).stdout
    check('data-loaded="true"' in dom, "the page loaded the hostile task")
    check("&lt;img src=x" in dom, "the markup is shown as text")
    check("<img" not in dom and "data-pwned" not in dom,
          "no element made from the data, no script run")


try:
    if mode == "--p2p":
        exit_when_done(True)
    elif mode == "--browser":
        serving()
    else:
        exit_when_done(False)
        slow_party()
        serving()
    print("demo e2e passed (%s)" % mode)
finally:
    shutil.rmtree(work, ignore_errors=True)
