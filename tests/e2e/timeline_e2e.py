#!/usr/bin/python3
"""Acceptance for the timeline plugins, end to end with real processes and kubectl.

Centralized: one `kuscia-host apiserver`, one host serving domains alice and bob with
task-timeline and gateway-ready-time; kubectl plays Kuscia (the task, each party's pod and
services, the agent's status updates, the endpoints). Every entry of the task's status must hold
exactly the objects' own times, with createTime <= startTime <= readyTime; scheduleTime is absent
until scheduler-time is enabled; beside a writer that does what Kuscia's own task controller does
(the latest Ready in readyTime, full-status PUTs on every change) a readiness flap moves readyTime
to the latest Ready, the timeline keeps the first, and the host writes at most twice in the 15 s
after the flap settles (no write war); a malformed ready-time
annotation is counted and the host keeps running; a full-status PUT that drops the times is
repaired; a `kill -9` of the host mid-startup converges to the same status, and a KusciaJob that
awaited bob's approval across the restart has its approval observed, kept on the job and served
with bob to blame (/api/v1/jobs/<job>); the timeline route
shows a pod held Unschedulable with its reason; the API server's audit log shows that the hosts
needed exactly the permissions of config/k8s/base/rbac.yaml's ClusterRole.

P2P (--p2p): two API servers (alice's and bob's clusters), the task created in both, one host
per party in p2p mode: each fills its own party's entries in its own cluster; alice's host alone
blames bob's slow reservation, known in alice's cluster by its stub TaskResource, and says the
same after a restart once Kuscia deleted the TaskResources (kept on the task); bob's host, killed
and restarted while a job awaits bob's approval in bob's cluster, dates the approval. Then a writer that
fights back on every field (replaces each time the host writes with one of its own) makes alice's
host yield those fields: its writes stop, and its timeline keeps its own values.

usage: timeline_e2e.py <kuscia-host> <plugin-dir> [--p2p]
"""
import copy
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from e2e_support import UpstreamController, check, eventually, ns

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
p2p = "--p2p" in sys.argv[3:]
work = tempfile.mkdtemp()
TASK = "secretflow-task-psi"
PARTIES = ("alice", "bob")
procs = []
VIEWER_TOKEN = "viewer-token-0123456789"


class Cluster:
    """A `kuscia-host apiserver` process and kubectl against it."""

    def __init__(self, name):
        self.name = name
        self.kubeconfig = os.path.join(work, name + ".kubeconfig")
        self.audit = os.path.join(work, name + ".audit")
        # The test reads the hosts' admin servers as the user kuscia-viewer, bound to the shipped
        # kuscia-host-viewer role: the hosts (auth: kubernetes) review its token and its paths.
        tokens = os.path.join(work, name + ".tokens")
        with open(tokens, "w") as f:
            f.write("%s,kuscia-viewer,viewer-uid\n" % VIEWER_TOKEN)
        self.proc = subprocess.Popen([host_bin, "apiserver", "--listen", "127.0.0.1:0",
                                      "--kubeconfig-out", self.kubeconfig, "--audit-log", self.audit,
                                      "--token-auth-file", tokens],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(self.proc)
        line = self.proc.stdout.readline()
        check("listening on" in line, "%s: apiserver started" % name)
        self.port = int(re.search(r"listening on \S*?:(\d+)", line).group(1))
        access = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../config/k8s/base/admin-access.yaml")
        import yaml
        role = [d for d in yaml.safe_load_all(open(access)) if d and d["metadata"]["name"] == "kuscia-host-viewer"][0]
        self.apply(role)
        self.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                    "metadata": {"name": "kuscia-viewer"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "kuscia-host-viewer"},
                    "subjects": [{"kind": "User", "name": "kuscia-viewer"}]})

    def kubectl(self, *args, stdin=None, ok=True):
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig,
                            "--cache-dir", os.path.join(work, self.name + "-cache"), *args],
                           input=stdin, capture_output=True, text=True, timeout=60)
        if ok and r.returncode != 0:
            raise SystemExit("FAIL: kubectl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def get(self, kind, name, ns):
        return json.loads(self.kubectl("get", kind, name, "-n", ns, "-o", "json"))

    def apply(self, obj):
        self.kubectl("apply", "-f", "-", stdin=json.dumps(obj))

    def status_patch(self, kind, name, ns, patch, kind_type="merge"):
        self.kubectl("patch", kind, name, "-n", ns, "--subresource=status", "--type=" + kind_type,
                     "-p", json.dumps(patch))

    def task(self):
        return self.get("kusciatask", TASK, "cross-domain")


class Host:
    """A `kuscia-host run` process for some domains."""

    def __init__(self, name, cluster, domains, plugins, mode):
        self.name, self.cluster, self.domains, self.plugins, self.mode = name, cluster, domains, plugins, mode
        self.log = os.path.join(work, name + ".log")
        self.proc = None

    def start(self):
        config = os.path.join(work, self.name + ".yaml")
        lines = ["mode: %s" % self.mode, "admin: {auth: kubernetes}", "cluster:",
                 "  kubeconfig: %s" % self.cluster.kubeconfig, "domains:"]
        for d in self.domains:
            lines.append("  - id: %s" % d)
            lines.append("    plugins:")
            for p in self.plugins:
                lines.append("      - name: %s" % p)
                if p != "gateway-ready-time":
                    lines.append("        config: {coalesceMillis: 20}")
        with open(config, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.proc = subprocess.Popen([host_bin, "run", "--config", config, "--plugin-dir", plugin_dir,
                                      "--admin-listen", "127.0.0.1:0"],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "a"))
        procs.append(self.proc)
        host_pids.add(self.proc.pid)
        check(eventually(lambda: self.port() is not None, 20), "%s started" % self.name)

    def port(self):
        m = re.findall(r"admin server listening on 127\.0\.0\.1:(\d+)", open(self.log).read())
        return int(m[-1]) if m and self.proc.poll() is None else None

    def admin(self, path):
        if self.port() is None:
            raise SystemExit("FAIL: %s is not running (exit %s)" % (self.name, self.proc.poll()))
        try:
            req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port(), path),
                                         headers={"Authorization": "Bearer " + VIEWER_TOKEN})
            with urllib.request.urlopen(req) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def metric(self, pattern):
        _, text = self.admin("/metrics")
        m = re.search(r"^%s (\S+)$" % pattern, text, re.M)
        return float(m.group(1)) if m else None

    def metric_sum(self, name, labels=""):
        """The sum of a family's series whose labels contain `labels`."""
        _, text = self.admin("/metrics")
        return sum(float(v) for lab, v in re.findall(r"^%s\{([^}]*)\} (\S+)$" % name, text, re.M) if labels in lab)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        check(self.proc.wait(timeout=20) == 0, "%s exits 0 on SIGTERM" % self.name)


def fixture(name):
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "fixtures", name)) as f:
        return json.load(f)


def clean(obj):
    obj = copy.deepcopy(obj)
    for k in ("uid", "resourceVersion", "creationTimestamp", "generation", "ownerReferences"):
        obj["metadata"].pop(k, None)
    obj.pop("status", None)
    return obj


def task_object():
    t = clean(fixture("kusciatask.json"))
    return t


def pod_object(party, i):
    p = clean(fixture("pod.json"))
    p["metadata"]["namespace"] = party
    p["metadata"]["name"] = "%s-%d" % (TASK, i)
    return p


def service_objects(party):
    svcs = []
    for port in ("spu", "fed", "global"):
        s = clean(fixture("service.json"))
        s["metadata"]["namespace"] = party
        s["metadata"]["name"] = "%s-0-%s" % (TASK, port)
        s["metadata"]["annotations"].pop("kuscia.secretflow/ready-time", None)
        s["metadata"]["labels"]["kuscia.secretflow/port-name"] = port
        svcs.append(s)
    return svcs


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def start_pod(cluster, party, name):
    """The agent accepts the pod: scheduled, started."""
    t = now()
    cluster.status_patch("pod", name, party, {"status": {
        "phase": "Running", "startTime": t,
        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": t}]}},
        kind_type="strategic")


def ready_pod(cluster, party, name, ready=True, reason=None):
    cond = {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now()}
    if reason:
        cond["reason"] = reason
    cluster.status_patch("pod", name, party, {"status": {"conditions": [cond]}}, kind_type="strategic")


def add_endpoints(cluster, party, svc):
    cluster.apply({"apiVersion": "v1", "kind": "Endpoints",
                   "metadata": {"name": svc, "namespace": party},
                   "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 8080}]}]})


def condition(pod, type_):
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == type_:
            return c
    return None


def expected_entries(cluster, party):
    """What the status must hold for the party: the objects' own times."""
    pods, svcs = {}, {}
    for p in json.loads(cluster.kubectl("get", "pods", "-n", party, "-o", "json"))["items"]:
        e = {"namespace": party, "podName": p["metadata"]["name"],
             "createTime": p["metadata"]["creationTimestamp"]}
        if "startTime" in p.get("status", {}):
            e["startTime"] = p["status"]["startTime"]
        key = "%s/%s" % (party, p["metadata"]["name"])
        ready = condition(p, "Ready")
        if ready and ready["status"] == "True":
            e["readyTime"] = ready["lastTransitionTime"]  # the latest Ready, as Kuscia means it
        pods[key] = e
    for s in json.loads(cluster.kubectl("get", "services", "-n", party, "-o", "json"))["items"]:
        e = {"namespace": party, "serviceName": s["metadata"]["name"],
             "createTime": s["metadata"]["creationTimestamp"]}
        rt = s["metadata"].get("annotations", {}).get("kuscia.secretflow/ready-time")
        if rt:
            e["readyTime"] = rt
        svcs["%s/%s" % (party, s["metadata"]["name"])] = e
    return pods, svcs


def status_matches(cluster, party, pods=None, svcs=None):
    want_pods, want_svcs = expected_entries(cluster, party)
    if pods is not None:
        want_pods = {k: v for k, v in want_pods.items() if k in pods}
    status = cluster.task().get("status", {})
    have_pods, have_svcs = status.get("podStatuses", {}), status.get("serviceStatuses", {})
    for key, want in list(want_pods.items()) + list(want_svcs.items()):
        have = have_pods.get(key) if key in want_pods else have_svcs.get(key)
        if have is None:
            return "%s missing" % key
        for field, value in want.items():
            if have.get(field) != value:
                return "%s.%s is %r, the object says %r" % (key, field, have.get(field), value)
        extra = {"createTime", "startTime", "readyTime"} & set(have) - set(want)
        if extra:
            return "%s has %s the object has not" % (key, extra)
    return None


def ordered(entry):
    t = [entry.get(f) for f in ("createTime", "startTime", "readyTime") if entry.get(f)]
    return t == sorted(t)


def startup(cluster, party, i=0):
    cluster.apply(pod_object(party, i))
    for s in service_objects(party):
        cluster.apply(s)


def finish_startup(cluster, party, i=0):
    name = "%s-%d" % (TASK, i)
    start_pod(cluster, party, name)
    time.sleep(1.1)  # one-second API timestamps: let each phase take a visible second
    ready_pod(cluster, party, name)
    for s in service_objects(party):
        add_endpoints(cluster, party, s["metadata"]["name"])


def pull_events(cluster, party, name, start, end):
    """kubelet's Pulling and Pulled Events for the pod, at times the test chooses."""
    uid = cluster.get("pod", name, party)["metadata"]["uid"]
    for reason, at in (("Pulling", start), ("Pulled", end)):
        cluster.apply({"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": "%s.%s" % (name, reason.lower()), "namespace": party},
                       "involvedObject": {"kind": "Pod", "name": name, "namespace": party, "uid": uid},
                       "reason": reason, "message": "%s image \"secretflow\"" % reason,
                       "type": "Normal", "firstTimestamp": at, "lastTimestamp": at})


def check_summary(doc, cluster, parties):
    """The document's summary against the times the test put in the objects: the startup ends at
    the latest ready of the parties' entries, counted from the task's creation."""
    s = doc["summary"]
    status = cluster.task()["status"]
    created = cluster.task()["metadata"]["creationTimestamp"]
    readies = {k: e["readyTime"] for g in ("podStatuses", "serviceStatuses")
               for k, e in status.get(g, {}).items() if k.split("/")[0] in parties}
    last = max(readies.values())
    seconds = lambda a, b: (time.mktime(time.strptime(b, "%Y-%m-%dT%H:%M:%SZ"))
                            - time.mktime(time.strptime(a, "%Y-%m-%dT%H:%M:%SZ")))
    check(s["complete"] and s["allReadyTime"] == last, "the summary is complete at %s: %s" % (last, s))
    check(s["startupSeconds"] == seconds(created, last),
          "startupSeconds = the last ready - the task's creation (%s)" % s.get("startupSeconds"))
    check(sorted(s["parties"]) == sorted(parties), "the parties it sees: %s" % sorted(s["parties"]))
    check(readies.get(s["criticalPath"][-1]["entry"]) == last and s["lastParty"] ==
          s["criticalPath"][-1]["entry"].split("/")[0], "the path ends at a last-ready entry")
    check(s["criticalPath"][0]["phase"] == "creating" and s["criticalPath"][0]["from"] == created,
          "the path starts at the task's creation")
    return s


host_pids = set()  # this test's hosts


def least_privilege(clusters):
    """Every request the hosts made is allowed by the ClusterRole of config/k8s/base/rbac.yaml, and
    every rule of it was needed: the role grants what the plugins use and nothing more."""
    import yaml
    rbac = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../config/k8s/base/rbac.yaml")
    role = [d for d in yaml.safe_load_all(open(rbac)) if d and d["kind"] == "ClusterRole"][0]
    granted = set()
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    granted.add((g, r, v))
    used = set()
    for c in clusters:
        for line in open(c.audit):
            a = json.loads(line)
            pid = re.search(r"^kuscia-host/\S+ \(pid (\d+)\)", a["userAgent"])
            if not pid or int(pid.group(1)) not in host_pids:
                continue  # kubectl playing Kuscia, or a host of another test that found this
                # server on a port its own server had
            ref = a["objectRef"]
            resource = ref["resource"] + ("/" + ref["subresource"] if ref["subresource"] else "")
            used.add((ref["apiGroup"], resource, a["verb"]))
    check(used <= granted, "the ClusterRole allows every request the hosts made; missing: %s"
          % sorted(used - granted))
    check(granted <= used, "every permission of the ClusterRole was used; unused: %s" % sorted(granted - used))


JOB = "job-e2e"


def job_awaiting_approval(c):
    """A KusciaJob of alice and bob that awaits bob's approval, written as Kuscia's kusciajob
    controller writes it (kubectl plays it)."""
    c.apply({"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaJob",
             "metadata": {"name": JOB, "namespace": "cross-domain"},
             "spec": {"initiator": "alice", "maxParallelism": 1, "tasks": [
                 {"alias": "psi", "taskID": JOB + "-psi", "appImage": "secretflow-image", "taskInputConfig": "{}",
                  "parties": [{"domainID": "alice"}, {"domainID": "bob"}]}]}})
    c.status_patch("kusciajob", JOB, "cross-domain", {"status": {
        "phase": "AwaitingApproval", "approveStatus": {"alice": "JobAccepted"}, "startTime": now(),
        "conditions": [{"type": "JobValidated", "status": "True", "lastTransitionTime": now()}]}})


def route_outage(c):
    """The route alice-bob goes down and comes back (kubectl plays Kuscia's route controller): the
    host observed both, to the second, and kept them on the route."""
    route = clean(fixture("control-plane/bob-cluster.clusterdomainroute-alice-bob.json"))
    c.apply(route)

    def ready(status, reason=""):
        c.kubectl("patch", "clusterdomainroute", "alice-bob", "--subresource=status", "--type=merge", "-p",
                  json.dumps({"status": {"conditions": [{"type": "Ready", "status": status, "reason": reason,
                                                         "message": reason or "Success",
                                                         "lastTransitionTime": now()}]}}))

    def kept():
        obj = json.loads(c.kubectl("get", "clusterdomainroute", "alice-bob", "-o", "json"))
        return json.loads(obj["metadata"].get("annotations", {}).get("kuscia-host/observed", "{}")).get("outages", [])
    ready("True")
    time.sleep(1.1)
    down_at = now()
    ready("False", "HeartBeatTimeout")
    check(eventually(lambda: kept() and "since" in kept()[-1]),
          "the host kept when the route went down: %s" % kept())
    check(kept()[-1]["reason"] == "HeartBeatTimeout" and abs(ns(kept()[-1]["since"]) - ns(down_at)) < 3 * 10**9,
          "observed when it went down: %s (at %s)" % (kept(), down_at))
    ready("True")
    check(eventually(lambda: kept() and "until" in kept()[-1]), "and when it came back: %s" % kept())


def job_approved(c, h):
    """bob accepts: the host (restarted while the job awaited) dates the approval it watched end,
    keeps it on the job, and serves the job's view with bob to blame."""
    def kept():
        return json.loads(c.get("kusciajob", JOB, "cross-domain")["metadata"].get("annotations", {})
                          .get("kuscia-host/observed", "{}"))
    check(eventually(lambda: "awaiting" in kept()), "the host kept that it saw the job await approval")
    time.sleep(1.1)
    c.status_patch("kusciajob", JOB, "cross-domain", {"status": {
        "phase": "Pending", "approveStatus": {"alice": "JobAccepted", "bob": "JobAccepted"}}})
    check(eventually(lambda: "approved" in kept()), "the approval's end is kept on the job: %s" % kept())
    code, body = h.admin("/api/v1/jobs/" + JOB)
    check(code == 200, "the job's view is served: %s" % body)
    approval = json.loads(body)["approval"]
    check(approval.get("observed") is True and approval.get("party") == "bob" and approval.get("seconds", 0) >= 1,
          "the approval is observed, bob accepted last: %s" % approval)


def centralized():
    c = Cluster("cluster")
    for ns in ("alice", "bob", "cross-domain"):
        c.kubectl("create", "namespace", ns)
    h = Host("host", c, PARTIES, ["task-timeline", "gateway-ready-time"], "centralized")
    h.start()
    # A pod before its task: applied when the task appears.
    startup(c, "alice")
    time.sleep(0.5)
    c.apply(task_object())
    job_awaiting_approval(c)
    startup(c, "bob")
    time.sleep(1.1)
    # kill -9 mid-startup: what happens meanwhile is picked up after the restart.
    h.kill9()
    finish_startup(c, "alice")
    h.start()
    job_approved(c, h)
    finish_startup(c, "bob")
    for party in PARTIES:
        check(eventually(lambda: status_matches(c, party) is None, 30),
              "every %s entry holds the objects' own times: %s" % (party, status_matches(c, party)))
    status = c.task()["status"]
    for key, e in list(status["podStatuses"].items()) + list(status["serviceStatuses"].items()):
        check(ordered(e) and "readyTime" in e, "%s complete and ordered: %s" % (key, e))
    check(all("scheduleTime" not in e for e in status["podStatuses"].values()),
          "scheduleTime absent without scheduler-time")

    # The summary, and bob's image pull from its pod's Events (times the test chooses: the pull
    # ran from the pod's start to its ready).
    bob_pod = "bob/%s-0" % TASK
    bob_start, bob_ready = status["podStatuses"][bob_pod]["startTime"], status["podStatuses"][bob_pod]["readyTime"]
    pull_events(c, "bob", "%s-0" % TASK, bob_start, bob_ready)

    def doc():
        return json.loads(h.admin("/api/v1/timelines/" + TASK)[1])
    check(eventually(lambda: doc()["entries"][bob_pod]["times"].get("imagePullEndTime") == bob_ready),
          "the image pull from the Events: %s" % doc()["entries"][bob_pod]["times"])
    check("imagePullEndTime" not in c.task()["status"]["podStatuses"][bob_pod],
          "the image pull is not in the status (Kuscia's CRD has no such field)")
    summary = check_summary(doc(), c, PARTIES)
    check(summary["lastParty"] == "bob", "bob started last")
    pulling = [p for p in summary["criticalPath"] if p["phase"] == "pulling"]
    check(pulling and pulling[0]["entry"] == bob_pod and pulling[0]["to"] == bob_ready,
          "bob's pull is on the critical path: %s" % summary["criticalPath"])
    check(eventually(lambda: h.metric('kuscia_timeline_task_startup_seconds_count\\{plugin="task-timeline",'
                                      'domain="alice"\\}') == 1),
          "the task's startup is observed once in the histogram")
    check(h.metric('kuscia_timeline_status_writes_total\\{plugin="task-timeline",domain="alice",result="ok"\\}') >= 1,
          "/metrics counts the status writes")

    # Beside Kuscia's own task controller (a reactive writer with its rule: readyTime = the latest
    # Ready), a readiness flap moves readyTime forward; the timeline keeps the first; no write war.
    pod = "alice/%s-0" % TASK
    first = c.task()["status"]["podStatuses"][pod]["readyTime"]
    controller = UpstreamController(c.port).start()
    time.sleep(1.1)
    ready_pod(c, "alice", "%s-0" % TASK, ready=False, reason="ContainersNotReady")
    time.sleep(1.1)
    ready_pod(c, "alice", "%s-0" % TASK, ready=True)
    latest = condition(c.get("pod", "%s-0" % TASK, "alice"), "Ready")["lastTransitionTime"]
    check(latest != first, "the flap gives a later Ready (%s after %s)" % (latest, first))
    check(eventually(lambda: c.task()["status"]["podStatuses"][pod].get("readyTime") == latest, 20),
          "readyTime is the latest Ready, as Kuscia's controller writes it")
    time.sleep(1)  # settled
    host_writes = lambda: h.metric_sum("kuscia_timeline_status_writes_total", 'plugin="task-timeline"')
    writes_before, puts_before = host_writes(), controller.puts
    time.sleep(15)
    host_delta, puts_delta = host_writes() - writes_before, controller.puts - puts_before
    print("  in the 15 s after the flap settled: %d status writes by the host, %d PUTs by the controller"
          % (host_delta, puts_delta))
    check(host_delta <= 2, "at most 2 status writes by the host in the 15 s after a flap (%d)" % host_delta)
    check(puts_delta <= 2, "at most 2 status PUTs by the controller in those 15 s (%d)" % puts_delta)
    controller.stop()
    code, body = h.admin("/api/v1/timelines/" + TASK)
    times = json.loads(body)["entries"][pod]["times"]
    check(times.get("firstReadyTime") == first and times.get("readyTime") == latest,
          "the timeline shows the first ready and the latest: %s" % times)
    check((h.metric_sum("kuscia_timeline_yielded_fields_total") or 0) == 0,
          "nothing yielded: the host and Kuscia's controller mean the same by every field")

    # A malformed ready-time annotation: counted, the field left unset, the host keeps running.
    bad = service_objects("alice")[0]
    bad["metadata"]["name"] = "%s-0-bad" % TASK
    bad["metadata"]["annotations"]["kuscia.secretflow/ready-time"] = "not a time"
    c.apply(bad)
    key = "alice/%s" % bad["metadata"]["name"]
    check(eventually(lambda: key in c.task()["status"].get("serviceStatuses", {})),
          "the service with a malformed annotation gets its entry")
    check("readyTime" not in c.task()["status"]["serviceStatuses"][key], "its readyTime stays unset")
    check(eventually(lambda: (h.metric('kuscia_timeline_malformed_inputs_total\\{plugin="task-timeline",'
                                       'domain="alice",input="ready-time annotation"\\}') or 0) >= 1),
          "the malformed annotation is counted")
    check(h.proc.poll() is None and h.admin("/livez")[0] == 200, "the host keeps running")
    c.kubectl("delete", "service", bad["metadata"]["name"], "-n", "alice")

    # A full-status PUT (as upstream's controller does) drops the times: they are written again.
    t = c.task()
    t["status"] = {"phase": "Running", "podStatuses": {
        k: {f: v[f] for f in ("namespace", "podName", "podPhase")} for k, v in t["status"]["podStatuses"].items()}}
    c.kubectl("replace", "--subresource=status", "-f", "-", stdin=json.dumps(t))
    check(eventually(lambda: all(status_matches(c, p) is None for p in PARTIES)),
          "a full-status PUT that dropped the times is repaired: %s" %
          [status_matches(c, p) for p in PARTIES])

    # The timeline route: a pod held Unschedulable shows why.
    c.apply(pod_object("bob", 1))
    c.status_patch("pod", "%s-1" % TASK, "bob", {"status": {"conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/1 nodes are available: insufficient cpu", "lastTransitionTime": now()}]}},
        kind_type="strategic")

    def waiting():
        code, body = h.admin("/api/v1/timelines/" + TASK)
        if code != 200:
            return None
        return json.loads(body)["entries"].get("bob/%s-1" % TASK, {}).get("waiting")
    check(eventually(lambda: (waiting() or {}).get("reason") == "Unschedulable"),
          "the timeline shows the pod held Unschedulable: %s" % waiting())
    code, body = h.admin("/api/v1/timelines/" + TASK)
    doc = json.loads(body)
    check(doc["entries"]["alice/%s-0" % TASK]["times"]["readyTime"] == latest,
          "one timeline for the whole task (both domains' entries)")
    check(h.admin("/api/v1/timelines/no-such-task")[0] == 404, "404 for an unknown task")

    # scheduler-time, enabled later, fills scheduleTime for the pods already running.
    h.stop()
    h2 = Host("host-sched", c, PARTIES, ["task-timeline", "gateway-ready-time", "scheduler-time"], "centralized")
    h2.start()

    def scheduled():
        st = c.task()["status"]["podStatuses"]
        for party in PARTIES:
            p = c.get("pod", "%s-0" % TASK, party)
            if st.get("%s/%s-0" % (party, TASK), {}).get("scheduleTime") != condition(p, "PodScheduled")["lastTransitionTime"]:
                return False
        return True
    check(eventually(scheduled), "scheduleTime appears once scheduler-time is enabled")
    route_outage(c)
    h2.stop()
    least_privilege([c])


def task_resource(party, stub):
    """The task's TaskResource of `party` in the initiator's (alice's) cluster, as Kuscia creates it
    (its status comes after, as the controllers write it): alice's own, or the stub alice's
    cluster keeps of partner bob (no pods, label interconn-protocol-type=kuscia)."""
    name = "bob-reserving" if stub else "alice-reserved"
    r = clean(fixture("control-plane/alice-cluster.taskresource-%s.json" % name))
    r["metadata"]["name"] = "%s-%s" % (TASK, party)
    r["metadata"]["annotations"]["kuscia.secretflow/task-id"] = TASK
    return r


def reserve(c, party, phase, **times):
    t = now()
    status = {"phase": phase, "lastTransitionTime": t, "startTime": times.get("start", t)}
    if phase != "Reserving":
        status["conditions"] = [{"type": phase, "status": "True", "lastTransitionTime": t}]
    # TaskResource has no status subresource: its writers update the whole object.
    c.kubectl("patch", "taskresource", "%s-%s" % (TASK, party), "-n", party, "--type=merge",
              "-p", json.dumps({"status": status}))


def reservation_in_alices_cluster(c):
    """Kuscia's gang reservation, p2p, seen from alice's cluster: alice reserves at once, bob
    (known here only by the stub the interconnection moves) three seconds later; then every party's
    pods may bind."""
    c.kubectl("create", "namespace", "bob")  # the partner's domain, as Kuscia's p2p cluster has it
    for party in PARTIES:
        c.apply(task_resource(party, party == "bob"))
    start = now()
    for party in PARTIES:
        reserve(c, party, "Reserving", start=start)
    reserve(c, "alice", "Reserved", start=start)
    time.sleep(3.1)
    reserve(c, "bob", "Reserved", start=start)
    reserve(c, "alice", "Schedulable", start=start)


def blamed_on_bobs_reservation(h, what):
    def served():
        try:
            code, body = h.admin("/api/v1/timelines/" + TASK)
        except urllib.error.URLError:  # a host started again: not listening yet
            return None
        return json.loads(body) if code == 200 and json.loads(body)["summary"].get("complete") else None
    doc = eventually(served, 20)
    check(doc, "%s: the task's timeline is served" % what)
    s, partners = doc["summary"], doc.get("partnerReservations", {})
    path = ["%s:%s" % (p["entry"], p["phase"]) for p in s.get("criticalPath", [])]
    stub = "bob/%s-bob" % TASK
    check(s.get("complete") and path[:3] == [stub + ":creating", stub + ":reserving",
                                              "alice/%s-0:awaiting-parties" % TASK],
          "%s: alice's host alone follows alice's wait to bob's reservation, known by its stub: %s"
          % (what, path))
    check(s["criticalPath"][1]["seconds"] >= 3 and s["blame"]["party"] == "bob"
          and "bob" in partners and "bob" not in s["parties"],
          "%s: bob's reserving took its %s s, bob is blamed (%s), and has no entry here"
          % (what, s["criticalPath"][1]["seconds"], s["blame"]))


def p2p_mode():
    clusters = {party: Cluster(party) for party in PARTIES}
    hosts = {}
    for party, c in clusters.items():
        for ns in (party, "cross-domain"):
            c.kubectl("create", "namespace", ns)
        c.apply(task_object())  # the task exists in every party's cluster
        hosts[party] = Host("host-" + party, c, [party], ["task-timeline", "gateway-ready-time"], "p2p")
        hosts[party].start()
    for party, c in clusters.items():
        startup(c, party)
    reservation_in_alices_cluster(clusters["alice"])
    for party, c in clusters.items():
        finish_startup(c, party)
    for party, c in clusters.items():
        check(eventually(lambda: status_matches(c, party) is None),
              "%s's cluster: its party's entries hold the objects' own times: %s" % (party, status_matches(c, party)))
        other = [p for p in PARTIES if p != party][0]
        st = c.task()["status"]
        code, body = hosts[party].admin("/api/v1/timelines/" + TASK)
        check(code == 200, "%s's host serves the timeline: %s %s" % (party, code, body[:500]))
        doc = json.loads(body)
        check_summary(doc, c, [party])  # a host sees its own party only
        check(not any(k.startswith(other + "/") for k in st.get("podStatuses", {})),
              "%s's host writes only its own party's entries" % party)

    # alice's host alone follows alice's wait to bob's reservation through bob's stub; Kuscia
    # deletes the TaskResources with the group, and alice's host, killed and started again,
    # answers the same from what it kept on the task.
    h = hosts["alice"]
    blamed_on_bobs_reservation(h, "alice's host")
    check(eventually(lambda: "partners" in json.loads(
        clusters["alice"].task()["metadata"].get("annotations", {}).get("kuscia-host/facts", "{}"))),
        "bob's reservation is kept on the task")
    h.kill9()
    for party in PARTIES:
        clusters["alice"].kubectl("delete", "taskresource", "%s-%s" % (TASK, party), "-n", party)
    h.start()
    blamed_on_bobs_reservation(h, "after a restart, the TaskResources gone")

    # In bob's cluster, bob approves alice's job by hand; bob's host, killed and started again
    # while the job waits, dates the approval's end on bob's copy of the job.
    job_awaiting_approval(clusters["bob"])
    time.sleep(1.1)
    hosts["bob"].kill9()
    hosts["bob"].start()
    job_approved(clusters["bob"], hosts["bob"])

    # A writer that fights back on every field: each time the host writes, it puts its own value
    # back. The host yields every such field of every entry: its writes stop.
    c, h = clusters["alice"], hosts["alice"]
    fighter = Fighter(c.port).start()
    writes = lambda: h.metric_sum("kuscia_timeline_status_writes_total", 'result="ok"')
    fields = sum(len([f for f in e if f.endswith("Time")]) for g in ("podStatuses", "serviceStatuses")
                 for e in c.task()["status"][g].values())
    check(eventually(lambda: h.metric_sum("kuscia_timeline_yielded_fields_total") >= fields, 30),
          "alice's host yields all %d fields the fighter keeps replacing (%s)"
          % (fields, h.metric_sum("kuscia_timeline_yielded_fields_total")))
    time.sleep(2)  # a write sent just before the last yield has landed
    before = writes()
    time.sleep(5)
    check(writes() == before, "then its status writes stop (%d in 5 s)" % (writes() - before))
    check(h.metric_sum("kuscia_timeline_yielded_fields_total") == fields,
          "each field is yielded once (%s)" % h.metric_sum("kuscia_timeline_yielded_fields_total"))
    fighter.stop()
    print("  the fighter made %d PUTs; the host wrote %d times in all" % (fighter.puts, writes()))
    _, body = h.admin("/api/v1/timelines/" + TASK)
    entry = json.loads(body)["entries"]["alice/%s-0" % TASK]
    check(entry.get("yielded", {}).get("createTime") not in (None, entry["times"]["createTime"]),
          "the timeline keeps the host's own value of a yielded field: %s" % entry.get("yielded"))
    check(any("yielded to another writer" in line for line in open(h.log)), "the host logs the yield")
    for h in hosts.values():
        h.stop()


class Fighter(UpstreamController):
    """Replaces every time of every entry with one of its own (the same instant in the year 2000)
    on every change."""

    def reconcile(self, task):
        import copy
        status = task.get("status") or {}
        want = copy.deepcopy(status)
        for group in ("podStatuses", "serviceStatuses"):
            for e in (want.get(group) or {}).values():
                for f, v in e.items():
                    if f.endswith("Time") and isinstance(v, str) and not v.startswith("2000"):
                        e[f] = "2000" + v[4:]
        if want == status:
            return
        task = copy.deepcopy(task)
        task["status"] = want
        code, _ = self._call("PUT", "%s/%s/status" % (self._tasks_path(), task["metadata"]["name"]), task)
        if code == 200:
            self.puts += 1


try:
    p2p_mode() if p2p else centralized()
    print("timeline e2e passed (%s)" % ("p2p" if p2p else "centralized"))
except SystemExit:
    for log in sorted(os.listdir(work)):
        if log.endswith(".log"):
            print("--- %s ---\n%s" % (log, open(os.path.join(work, log)).read()[-4000:]), file=sys.stderr)
    raise
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
