#!/usr/bin/python3
"""Chaos soak: the timeline stays exact while the API server, a rival writer and SIGKILL fight it.

The cluster is `kuscia-host apiserver --fault-injection` in its own process (it outlives the
hosts). sim-agent plays Kuscia's agent for alice and bob in a host of its own, so that startups go
on while the timeline host (task-timeline, gateway-ready-time, scheduler-time) is down. While
two-party tasks are submitted and start:

- faults are injected at random: every open watch dropped, the watch history compacted and the
  watches dropped (the next watch from an old resourceVersion gets 410 and the informer relists), bursts of 429, 500 and 503
  with Retry-After on one resource path, added latency for a while;
- a blind rival writer replaces task status with full-object PUTs that drop every timing field,
  as an older controller that does not know the fields does;
- a reactive writer does what Kuscia's own task controller does since 2023 (tests/e2e/
  e2e_support.py, UpstreamController): on every change of a task it recomputes the times of each
  entry with upstream's rule (readyTime = the latest Ready) and PUTs the whole status when it
  differs;
- the timeline host is killed with SIGKILL at random points and started again.

Then the faults stop, the host runs until the status stops changing, and every entry of every task
is compared field by field with the objects' own times (createTime, scheduleTime, startTime and
readyTime of each pod, createTime and readyTime of each service). The report lists the faults
injected by kind, kills, rival PUTs, relists and retries (the hosts' own counters, read before
each kill), the status writes per task of the host and of the reactive writer, and the times lost
(absent) and wrong (differing or extra): both must be 0. Once converged, the reactive writer goes
on for 10 s more, in which neither it nor the host may write more than twice: no write war.

usage: chaos_soak.py <kuscia-host> <plugin-dir> [--tasks N] [--submit-seconds S] [--seed S]
                     [--report FILE] [--keep]
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_support import UpstreamController  # noqa: E402

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("host_bin")
ap.add_argument("plugin_dir")
ap.add_argument("--tasks", type=int, default=200, help="two-party tasks to submit (default 200)")
ap.add_argument("--submit-seconds", type=float, default=60, help="spread the submissions over S seconds")
ap.add_argument("--seed", type=int, default=int(time.time()), help="random seed (printed; default: the time)")
ap.add_argument("--report", help="also write the report as JSON to FILE")
ap.add_argument("--keep", action="store_true", help="keep the work directory (logs, configs)")
args = ap.parse_args()
rng = random.Random(args.seed)
work = tempfile.mkdtemp(prefix="kh-soak-")
TASK_NS = "cross-domain"
PARTIES = ("alice", "bob")
TASKS_PATH = "/apis/kuscia.secretflow/v1alpha1/namespaces/%s/kusciatasks" % TASK_NS
stop = threading.Event()
lock = threading.Lock()
counts = {}  # what the soak did, by kind
procs = []


def count(kind, n=1):
    with lock:
        counts[kind] = counts.get(kind, 0) + n


def log(msg):
    print("[%6.1fs] %s" % (time.time() - started, msg), flush=True)


started = time.time()


class Api:
    """Plain HTTP to the API server, one keep-alive connection per thread. The soak's own requests
    meet the injected faults too: they are retried until they get a real answer."""

    def __init__(self, port):
        self.port = port
        self.local = threading.local()

    def conn(self):
        if getattr(self.local, "c", None) is None:
            self.local.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        return self.local.c

    def once(self, method, path, body=None, ctype="application/json"):
        c = self.conn()
        try:
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Content-Type": ctype, "User-Agent": "chaos-soak"})
            r = c.getresponse()
            data = r.read()
            if r.getheader("Connection", "").lower() == "close":
                c.close()
                self.local.c = None
            return r.status, (json.loads(data) if data else None)
        except (OSError, http.client.HTTPException):
            c.close()
            self.local.c = None
            return 0, None

    def call(self, method, path, body=None, ctype="application/json", tries=200):
        for _ in range(tries):
            status, doc = self.once(method, path, body, ctype)
            if status != 0 and status != 429 and status < 500:
                return status, doc
            time.sleep(0.05)
        raise SystemExit("FAIL: %s %s never got an answer through the faults" % (method, path))

    def fault(self, query):
        status, _ = self.call("POST", "/debug/faults/" + query)
        if status != 200:
            raise SystemExit("FAIL: fault %s: HTTP %d" % (query, status))


class Host:
    def __init__(self, name, plugins):
        self.name, self.plugins = name, plugins
        self.log = os.path.join(work, name + ".log")
        self.proc = None
        self.last = {}  # the counters read last from this incarnation

    def start(self):
        config = os.path.join(work, self.name + ".yaml")
        with open(config, "w") as f:
            f.write("mode: centralized\ncluster:\n  kubeconfig: %s\ndomains:\n" % kubeconfig)
            for d in PARTIES:
                f.write("  - id: %s\n    plugins:\n" % d)
                for name, cfg in self.plugins:
                    f.write("      - name: %s\n        config: %s\n" % (name, json.dumps(cfg)))
        self.proc = subprocess.Popen([args.host_bin, "run", "--config", config, "--plugin-dir", args.plugin_dir,
                                      "--admin-listen", "127.0.0.1:0"],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))
        procs.append(self.proc)
        self.last = {}

    def port(self):
        m = re.findall(r"admin server listening on 127\.0\.0\.1:(\d+)", open(self.log).read())
        return int(m[-1]) if m and self.proc.poll() is None else None

    def scrape(self):
        """Reads the host's counters; what an incarnation counted survives it."""
        port = self.port()
        if port is None:
            return
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
            c.close()
        except (OSError, http.client.HTTPException):
            return
        now = {}
        for name in ("kuscia_host_kube_relists_total", "kuscia_host_kube_request_retries_total",
                     "kuscia_host_kube_watch_restarts_total", "kuscia_host_kube_decode_errors_total",
                     "kuscia_timeline_status_writes_total", "kuscia_scheduler_time_status_writes_total",
                     "kuscia_gateway_ready_time_writes_total", "kuscia_timeline_yielded_fields_total",
                     "kuscia_scheduler_time_yielded_fields_total"):
            now[name] = sum(float(v) for v in re.findall(r"^%s(?:\{[^}]*\})? (\S+)$" % name, text, re.M))
        with lock:
            for k, v in now.items():
                totals.setdefault(self.name, {}).setdefault(k, 0)
                totals[self.name][k] += v - self.last.get(k, 0)
            self.last = now

    def kill9(self):
        self.scrape()
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=20)

    def stop(self):
        self.scrape()
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


totals = {}

# --- the cluster ---------------------------------------------------------------------------
kubeconfig = os.path.join(work, "kubeconfig")
apiserver = subprocess.Popen([args.host_bin, "apiserver", "--listen", "127.0.0.1:0", "--fault-injection",
                              "--kubeconfig-out", kubeconfig],
                             stdout=subprocess.PIPE, stderr=open(os.path.join(work, "apiserver.log"), "w"), text=True)
procs.append(apiserver)
line = apiserver.stdout.readline()
m = re.search(r"listening on \S*?:(\d+)", line)
if not m:
    raise SystemExit("FAIL: the apiserver did not start: %r" % line)
api = Api(int(m.group(1)))
for ns in PARTIES + (TASK_NS,):
    api.call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

sim = Host("sim-agent", [("sim-agent", {"scheduleMillis": 300, "startMillis": 500, "readyMillis": 700,
                                        "endpointsMillis": 400, "runMillis": 1500, "distribution": "uniform",
                                        "spread": 0.8, "seed": args.seed % 100000})])
timeline = Host("timeline", [("task-timeline", {"coalesceMillis": 20}), ("gateway-ready-time", {}),
                             ("scheduler-time", {})])
sim.start()
timeline.start()
log("seed %d; %d two-party tasks over %.0f s; work dir %s" % (args.seed, args.tasks, args.submit_seconds, work))


def task_object(name):
    return {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
            "metadata": {"name": name, "namespace": TASK_NS},
            "spec": {"initiator": "alice", "parties": [{"domainID": d, "appImageRef": "secretflow-image"}
                                                      for d in PARTIES]}}


names = ["soak-%04d" % i for i in range(args.tasks)]


# --- the actors ----------------------------------------------------------------------------
def submitter():
    for i, name in enumerate(names):
        status, _ = api.call("POST", TASKS_PATH, task_object(name))
        if status not in (201, 409):
            raise SystemExit("FAIL: creating %s: HTTP %d" % (name, status))
        count("tasks submitted")
        deadline = started + (i + 1) * args.submit_seconds / len(names)
        time.sleep(max(0, deadline - time.time()))


def chaos():
    paths = ["/api/v1/pods", "/api/v1/namespaces/alice/pods", "/api/v1/namespaces/bob/services",
             "/api/v1/endpoints", "/apis/kuscia.secretflow", TASKS_PATH, "/api/v1/namespaces/alice/services"]
    while not stop.wait(rng.uniform(0.3, 1.5)):
        kind = rng.choice(["drop-watches", "compact", "429", "500", "503", "latency"])
        if kind == "drop-watches":
            api.fault("drop-watches")
        elif kind == "compact":
            # The history forgotten, then the watches cut: each informer's next watch starts from
            # a resourceVersion the server no longer has, gets 410 Expired and relists.
            api.fault("compact")
            api.fault("drop-watches")
        elif kind == "latency":
            api.fault("latency?ms=%d" % rng.randint(20, 150))
            stop.wait(rng.uniform(0.5, 2))
            api.fault("latency?ms=0")
        else:
            q = "respond?path=%s&status=%s&count=%d&retryAfter=%d" % (
                rng.choice(paths), kind, rng.randint(1, 8), rng.choice([0, 0, 1]))
            if rng.random() < 0.3:
                q += "&method=" + rng.choice(["PATCH", "GET", "PUT"])
            api.fault(q)
        count("fault: " + kind)


TIME_FIELDS = ("createTime", "scheduleTime", "startTime", "readyTime")
# Per task: 2 pods x 4 times, 2 x 3 services x 2 times.
FIELDS_PER_TASK = 2 * 4 + 2 * 3 * 2


def rival_writer():
    """Full-object PUTs of the status without any time, as a controller that does not know them writes it."""
    while not stop.wait(rng.uniform(0.1, 0.6)):
        with lock:
            n = counts.get("tasks submitted", 0)
        if n == 0:
            continue
        name = names[rng.randrange(n)]
        status, t = api.call("GET", TASKS_PATH + "/" + name)
        if status != 200 or not t.get("status"):
            continue
        st = t["status"]
        for group in ("podStatuses", "serviceStatuses"):
            for e in st.get(group, {}).values():
                for f in TIME_FIELDS:
                    e.pop(f, None)
        status, _ = api.call("PUT", TASKS_PATH + "/" + name + "/status", t)
        count("rival PUTs landed" if status == 200 else "rival PUTs refused (conflict)")


def killer():
    while not stop.wait(rng.uniform(2, 7)):
        timeline.kill9()
        count("timeline host SIGKILLs")
        stop.wait(rng.uniform(0, 2))
        timeline.start()


def scraper():
    while not stop.wait(0.5):
        timeline.scrape()
        sim.scrape()


def phases():
    _, lst = api.call("GET", TASKS_PATH)
    return {t["metadata"]["name"]: t.get("status", {}).get("phase", "") for t in lst["items"]}


errors = []


def guarded(f):
    def run():
        try:
            f()
        except SystemExit as e:
            errors.append(str(e))
            stop.set()
    return run


threads = [threading.Thread(target=guarded(f), daemon=True) for f in (chaos, rival_writer, killer, scraper)]
sub = threading.Thread(target=guarded(submitter), daemon=True)


def expected(pods, services):
    """Every task's entries as the objects say they must be."""
    want = {n: {"podStatuses": {}, "serviceStatuses": {}} for n in names}

    def cond(p, type_):
        for c in p.get("status", {}).get("conditions", []):
            if c["type"] == type_ and c["status"] == "True":
                return c["lastTransitionTime"]
        return None
    for p in pods:
        task = p["metadata"].get("annotations", {}).get("kuscia.secretflow/task-id")
        if task not in want:
            continue
        e = {"createTime": p["metadata"]["creationTimestamp"], "scheduleTime": cond(p, "PodScheduled"),
             "startTime": p.get("status", {}).get("startTime"), "readyTime": cond(p, "Ready")}
        key = "%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
        want[task]["podStatuses"][key] = {k: v for k, v in e.items() if v}
    for s in services:
        meta = s["metadata"]
        task = meta.get("annotations", {}).get("kuscia.secretflow/task-id")
        if task not in want:
            continue
        e = {"createTime": meta["creationTimestamp"],
             "readyTime": meta.get("annotations", {}).get("kuscia.secretflow/ready-time")}
        want[task]["serviceStatuses"]["%s/%s" % (meta["namespace"], meta["name"])] = {k: v for k, v in e.items() if v}
    return want


def compare():
    """(fields compared, lost, wrong, examples): every expected time against the status."""
    _, pods = api.call("GET", "/api/v1/pods")
    _, services = api.call("GET", "/api/v1/services")
    _, tasks = api.call("GET", TASKS_PATH)
    have = {t["metadata"]["name"]: t.get("status", {}) for t in tasks["items"]}
    fields = lost = wrong = 0
    examples = []
    for task, groups in expected(pods["items"], services["items"]).items():
        st = have.get(task, {})
        for group, entries in groups.items():
            for key, want in entries.items():
                got = st.get(group, {}).get(key, {})
                needed = TIME_FIELDS if group == "podStatuses" else ("createTime", "readyTime")
                missing = [f for f in needed if f not in want]
                if missing:
                    examples.append("%s %s: the object has no %s (yet)" % (task, key, ", ".join(missing)))
                for f in TIME_FIELDS:
                    if f in want:
                        fields += 1
                        if f not in got:
                            lost += 1
                            examples.append("%s %s.%s lost (the object says %s)" % (task, key, f, want[f]))
                        elif got[f] != want[f]:
                            wrong += 1
                            examples.append("%s %s.%s is %s, the object says %s" % (task, key, f, got[f], want[f]))
                    elif f in got:
                        wrong += 1
                        examples.append("%s %s.%s is %s, the object has none" % (task, key, f, got[f]))
    return fields, lost, wrong, examples


controller = UpstreamController(api.port, TASK_NS)


def status_writes():
    with lock:
        t = totals.get("timeline", {})
        return t.get("kuscia_timeline_status_writes_total", 0) + t.get("kuscia_scheduler_time_status_writes_total", 0)


try:
    for t in threads:
        t.start()
    controller.start()
    sub.start()
    # Until every task is submitted and has finished (sim-agent's Succeeded), with progress.
    last = 0
    while True:
        if errors:
            raise SystemExit(errors[0])
        if sim.proc.poll() is not None:
            raise SystemExit("FAIL: the sim-agent host died (exit %s)" % sim.proc.returncode)
        done = sum(1 for p in phases().values() if p == "Succeeded")
        if time.time() - last > 10:
            log("%d/%d tasks submitted, %d finished; %s" % (counts.get("tasks submitted", 0), args.tasks, done,
                                                          ", ".join("%s %d" % kv for kv in sorted(counts.items())
                                                                    if kv[0].startswith("fault") or "SIGKILL" in kv[0])))
            last = time.time()
        if not sub.is_alive() and done == args.tasks:
            break
        if time.time() - started > args.submit_seconds + 300:
            raise SystemExit("FAIL: tasks still not finished after %.0f s" % (time.time() - started))
        time.sleep(1)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    api.fault("reset")
    if timeline.proc.poll() is not None:
        timeline.start()
    log("faults stopped; waiting for the timeline to converge")
    # Converged: every object has all its times (the services' ready-time annotations come from
    # the timeline host's gateway-ready-time, which may just have been restarted) and the status
    # holds exactly them; or nothing has changed for 15 s.
    deadline = time.time() + 120
    previous, stable_since = None, time.time()
    while time.time() < deadline:
        fields, lost, wrong, examples = compare()
        if lost == 0 and wrong == 0 and fields == FIELDS_PER_TASK * args.tasks:
            break
        if (fields, lost, wrong) != previous:
            previous, stable_since = (fields, lost, wrong), time.time()
        elif time.time() - stable_since > 15:
            break
        time.sleep(1)
    # A timeline host restarted near the end begins with a pass over every task, whose writes
    # can come after the compared times converged (slowed by a sanitizer, seconds after): that
    # is its first pass, not a war. The window starts once the host has counted no status write
    # for 3 s, or after 60 s: a host in a war never falls still, and the window still sees it.
    timeline.scrape()
    last_writes, still_since, settle_deadline = status_writes(), time.time(), time.time() + 60
    while time.time() - still_since < 3 and time.time() < settle_deadline:
        time.sleep(0.5)
        timeline.scrape()
        if status_writes() != last_writes:
            last_writes, still_since = status_writes(), time.time()
    # No write war: Kuscia's controller goes on reacting to every change for 10 s more.
    timeline.scrape()
    quiet_writes, quiet_puts = status_writes(), controller.puts
    time.sleep(10)
    timeline.scrape()
    quiet_writes, quiet_puts = status_writes() - quiet_writes, controller.puts - quiet_puts
    controller.stop()
    sim.scrape()
    host_alive = timeline.proc.poll() is None and sim.proc.poll() is None
    code = timeline.stop() if timeline.proc.poll() is None else None
    sim.stop()

    report = {
        "seed": args.seed, "tasks": args.tasks, "seconds": round(time.time() - started, 1),
        "entries": args.tasks * len(PARTIES) * 4,
        "time fields compared": fields, "lost": lost, "wrong": wrong,
        "actions": dict(sorted(counts.items())),
        "status writes per task": {"host": round(status_writes() / args.tasks, 2),
                                   "reactive controller": round(controller.puts / args.tasks, 2),
                                   "reactive controller, most for one task": max(controller.puts_by_task.values(), default=0)},
        "after converging, in 10 s": {"host status writes": int(quiet_writes), "controller PUTs": quiet_puts},
        "host counters (all incarnations)": {h: {k: int(v) for k, v in c.items()} for h, c in totals.items()},
        "examples": examples[:20],
    }
    print(json.dumps(report, indent=2))
    if args.report:
        with open(args.report, "w") as f:
            json.dump(report, f, indent=2)
    faults = sum(v for k, v in counts.items() if k.startswith("fault"))
    relists = totals.get("timeline", {}).get("kuscia_host_kube_relists_total", 0)
    no_war = quiet_writes <= 2 and quiet_puts <= 2
    ok = lost == 0 and wrong == 0 and host_alive and code == 0 and fields == FIELDS_PER_TASK * args.tasks and no_war
    print("soak: %d tasks, %d time fields compared (of %d), %d lost, %d wrong; %d faults, %d SIGKILLs, %d rival PUTs, "
          "%d relists by the timeline host; status writes per task: host %.2f, reactive controller %.2f; "
          "after converging, in 10 s: %d host writes, %d controller PUTs; %s" % (
              args.tasks, fields, FIELDS_PER_TASK * args.tasks, lost, wrong, faults, counts.get("timeline host SIGKILLs", 0),
              counts.get("rival PUTs landed", 0), relists, status_writes() / args.tasks, controller.puts / args.tasks,
              quiet_writes, quiet_puts, "PASSED" if ok else "FAILED"))
    if not ok:
        if not host_alive or code not in (0, None):
            print("a host died or exited %s" % code, file=sys.stderr)
        if not no_war:
            print("a write war: writes went on after converging", file=sys.stderr)
        raise SystemExit(1)
except SystemExit:
    args.keep = True
    for name in ("timeline.log", "sim-agent.log", "apiserver.log"):
        p = os.path.join(work, name)
        if os.path.exists(p):
            print("--- %s (last 3000 bytes) ---\n%s" % (name, open(p).read()[-3000:]), file=sys.stderr)
    raise
finally:
    stop.set()
    for p in procs:
        if p.poll() is None:
            p.kill()
    if args.keep:
        print("work directory kept: %s" % work, file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
