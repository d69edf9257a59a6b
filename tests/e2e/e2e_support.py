"""What every end-to-end script shares: a checked step that prints `ok - ...` or stops the script
with `FAIL: ...`, polling until a condition holds, and the port a process listens on."""
import os
import re
import time


def check(cond, what):
    """Prints `ok - what`, or raises SystemExit("FAIL: what") when `cond` is false."""
    if not cond:
        raise SystemExit("FAIL: " + what)
    print("ok -", what, flush=True)


def eventually(pred, seconds=60, interval=0.1):
    """Calls pred() until it returns something true (returned) or `seconds` pass (then pred()'s
    last answer)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    return pred()


def listening_port(pid):
    """The TCP port `pid` listens on (it was given port 0): its socket inodes against
    /proc/net/tcp's LISTEN entries."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        m = re.match(r"socket:\[(\d+)\]", target)
        if m:
            inodes.add(m.group(1))
    with open("/proc/%d/net/tcp" % pid) as f:
        for line in f.readlines()[1:]:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if state == "0A" and inode in inodes and local.startswith("0100007F:"):
                return int(local.split(":")[1], 16)
    return None


class UpstreamController:
    """Kuscia's own task controller as far as the timing fields go (upstream
    pkg/controllers/kusciatask/handler/common.go, refreshPodStatuses and refreshServiceStatuses,
    since 2023): on every change of a task it recomputes each entry the status already holds from
    its pod or service (createTime; startTime = status.startTime; readyTime = the Ready condition's
    lastTransitionTime whenever Ready is True, so the latest ready; a service's readyTime from its
    kuscia.secretflow/ready-time annotation) and PUTs the whole status when that differs from
    the stored one. A writer that reacts to every write, with meanings of its own.

    `port`: the API server's plain-HTTP port on 127.0.0.1. Runs in a thread of its own until
    stop(); survives dropped watches and error answers (it relists)."""

    def __init__(self, port, namespace="cross-domain", user_agent="upstream-controller"):
        import threading
        self.port, self.namespace, self.user_agent = port, namespace, user_agent
        self.puts = 0          # status PUTs that landed
        self.puts_by_task = {}
        self.conflicts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=10)

    def _call(self, method, path, body=None):
        import http.client
        import json
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            c.request(method, path, body=None if body is None else json.dumps(body),
                      headers={"Content-Type": "application/json", "User-Agent": self.user_agent})
            r = c.getresponse()
            data = r.read()
            return r.status, (json.loads(data) if data else None)
        except (OSError, http.client.HTTPException, ValueError):
            return 0, None
        finally:
            c.close()

    def _tasks_path(self):
        return "/apis/kuscia.secretflow/v1alpha1/namespaces/%s/kusciatasks" % self.namespace

    @staticmethod
    def _condition(pod, type_):
        for c in pod.get("status", {}).get("conditions", []) or []:
            if c.get("type") == type_:
                return c
        return None

    def reconcile(self, task):
        import copy
        status = task.get("status") or {}
        want = copy.deepcopy(status)
        for st in (want.get("podStatuses") or {}).values():
            if st.get("podPhase") in ("Succeeded", "Failed"):
                continue
            code, pod = self._call("GET", "/api/v1/namespaces/%s/pods/%s" % (st.get("namespace"), st.get("podName")))
            if code != 200:
                continue
            if pod.get("status", {}).get("phase"):
                st["podPhase"] = pod["status"]["phase"]
            st["createTime"] = pod["metadata"]["creationTimestamp"]
            start = pod.get("status", {}).get("startTime")
            if start:
                st["startTime"] = start
            else:
                st.pop("startTime", None)
            ready = self._condition(pod, "Ready")
            if ready and ready.get("status") == "True" and ready.get("lastTransitionTime"):
                st["readyTime"] = ready["lastTransitionTime"]
        for st in (want.get("serviceStatuses") or {}).values():
            code, svc = self._call("GET", "/api/v1/namespaces/%s/services/%s" % (st.get("namespace"), st.get("serviceName")))
            if code != 200:
                continue
            st["createTime"] = svc["metadata"]["creationTimestamp"]
            rt = (svc["metadata"].get("annotations") or {}).get("kuscia.secretflow/ready-time")
            if rt:
                st["readyTime"] = rt
        if want == status:
            return
        task = copy.deepcopy(task)
        task["status"] = want
        name = task["metadata"]["name"]
        code, _ = self._call("PUT", "%s/%s/status" % (self._tasks_path(), name), task)
        if code == 200:
            self.puts += 1
            self.puts_by_task[name] = self.puts_by_task.get(name, 0) + 1
        elif code == 409:
            self.conflicts += 1

    def _run(self):
        import http.client
        import json
        while not self._stop.is_set():
            code, lst = self._call("GET", self._tasks_path())
            if code != 200:
                self._stop.wait(0.2)
                continue
            for t in lst.get("items", []):
                self.reconcile(t)
            # A quiet watch for 5 s ends in a relist: level-triggered, nothing is missed.
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            try:
                c.request("GET", "%s?watch=1&resourceVersion=%s" % (self._tasks_path(), lst["metadata"]["resourceVersion"]),
                          headers={"User-Agent": self.user_agent})
                r = c.getresponse()
                if r.status != 200:
                    raise OSError("watch: HTTP %d" % r.status)
                while not self._stop.is_set():
                    line = r.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self.reconcile(ev["object"])
            except (OSError, http.client.HTTPException, ValueError):
                self._stop.wait(0.2)
            finally:
                c.close()


def apiserver(host_bin, work, procs):
    """`kuscia-host apiserver` with the namespaces alice, bob and cross-domain: its kubeconfig.
    The process goes into `procs`."""
    import subprocess
    kubeconfig = os.path.join(work, "r.kubeconfig")
    api = subprocess.Popen([host_bin, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", kubeconfig],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(api)
    check("listening on" in api.stdout.readline(), "apiserver started")
    for n in ("alice", "bob", "cross-domain"):
        subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "create", "namespace", n],
                       capture_output=True, timeout=60)
    return kubeconfig


def kubectl(kubeconfig, *args):
    """kubectl against `kubeconfig`: its completed process (output as text)."""
    import subprocess
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True, text=True,
                          timeout=60)


def delete_events(kubeconfig, namespaces=("alice", "bob")):
    """Deletes every Event of the namespaces, as they expire on a real cluster (checked)."""
    import json
    for ns in namespaces:
        r = kubectl(kubeconfig, "get", "events", "-n", ns, "-o", "json")
        check(r.returncode == 0, "events listed: " + r.stderr)
        for e in json.loads(r.stdout)["items"]:
            kubectl(kubeconfig, "delete", "event", "-n", ns, e["metadata"]["name"])
        r = kubectl(kubeconfig, "get", "events", "-n", ns, "-o", "json")
        check(json.loads(r.stdout)["items"] == [], "%s's Events deleted" % ns)


class RunningHost:
    """`kuscia-host run --config CONFIG` on any admin port, its output appended to `log`: start()
    waits until it serves (url), kill() sends SIGKILL; get() and text() read its admin server
    (None when it does not answer). Each process goes into `procs`."""

    def __init__(self, host_bin, config, log, procs):
        self.host_bin, self.config, self.log, self.procs, self.proc = host_bin, config, log, procs, None

    def start(self):
        import subprocess
        self.proc = subprocess.Popen([self.host_bin, "run", "--config", self.config, "--admin-listen", "127.0.0.1:0"],
                                     stdout=open(self.log, "a"), stderr=subprocess.STDOUT)
        self.procs.append(self.proc)
        seen = lambda: re.findall(r"admin server listening on (127\.0\.0\.1:\d+)", open(self.log).read())
        before = len(seen())
        check(eventually(lambda: len(seen()) > before, 60), "the host serves: " + open(self.log).read()[-800:])
        self.url = "http://" + seen()[-1]

    def kill(self):
        import signal
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def text(self, path):
        import urllib.request
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as r:
                return r.read().decode()
        except Exception:
            return None

    def get(self, path):
        import json
        t = self.text(path)
        return json.loads(t) if t is not None else None


def sim_cluster(host_bin, work, extra, phase_millis, procs):
    """`kuscia-host apiserver` with the namespaces alice, bob and cross-domain, and a centralized
    host config against it for both domains: sim-agent at `phase_millis`, task-timeline,
    gateway-ready-time, then `extra` (a YAML list of plugins, as under `plugins:`, with %(domain)s
    for the domain). Returns (kubeconfig, config path); the apiserver goes into `procs`."""
    kubeconfig = apiserver(host_bin, work, procs)
    config = os.path.join(work, "r.yaml")
    with open(config, "w") as f:
        f.write("mode: centralized\ncluster:\n  kubeconfig: %s\ndomains:\n" % kubeconfig)
        for d in ("alice", "bob"):
            f.write("  - id: %s\n    plugins:\n      - name: sim-agent\n        config: { phaseMillis: %d }\n"
                    "      - name: task-timeline\n      - name: gateway-ready-time\n" % (d, phase_millis) +
                    extra % {"domain": d})
    return kubeconfig, config


class PostgresServer:
    """A real PostgreSQL server (Debian's binaries) in a temporary directory, on a Unix socket
    there only (no TCP port), as `nobody` when the tests run as root (PostgreSQL refuses root).
    uri(db) is libpq's URI of a database as its superuser `kh`; stop() and start() keep the data
    (a database that goes away for a while)."""

    def __init__(self, work):
        import glob
        import shutil
        import subprocess
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise SystemExit("FAIL: no PostgreSQL server binaries (Debian's postgresql)")
        self.bin = os.path.dirname(bins[-1])
        self.dir = os.path.join(work, "pg")
        os.makedirs(self.dir)
        os.chmod(work, 0o755)
        self.prefix = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody", "nogroup")
            self.prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
        self.subprocess = subprocess
        r = self._run("initdb", "-D", self.dir + "/data", "-U", "kh", "-A", "trust", "--no-sync", "-E", "UTF8")
        if r.returncode != 0:
            raise SystemExit("FAIL: initdb: " + r.stdout + r.stderr)
        self.start()

    def _run(self, tool, *args):
        return self.subprocess.run(self.prefix + [os.path.join(self.bin, tool), *args],
                                   capture_output=True, text=True, timeout=120)

    def start(self):
        r = self._run("pg_ctl", "-D", self.dir + "/data", "-l", self.dir + "/server.log", "-w", "-t", "60",
                      "-o", "-k %s -c listen_addresses='' -c fsync=off" % self.dir, "start")
        if r.returncode != 0:
            raise SystemExit("FAIL: PostgreSQL did not start: " + open(self.dir + "/server.log").read())

    def stop(self):
        self._run("pg_ctl", "-D", self.dir + "/data", "-m", "fast", "-w", "stop")

    def uri(self, db="postgres"):
        return "postgresql://kh@/%s?host=%s" % (db, self.dir)

    def psql(self, sql, db="postgres"):
        r = self._run("psql", "-X", "-A", "-t", "-q", "-h", self.dir, "-U", "kh", "-d", db, "-c", sql)
        return r.stdout.strip()


def ns(text):
    """RFC 3339 (whole or fractional seconds, Z) -> Unix nanoseconds."""
    import calendar
    m = re.match(r"(\d+)-(\d+)-(\d+)T(\d+):(\d+):(\d+)(\.\d+)?Z$", text)
    secs = calendar.timegm(tuple(int(x) for x in m.groups()[:6]))
    return secs * 10**9 + int(round(float("0" + (m.group(7) or "")) * 1e9))


def submit_fault_tasks(kubeconfig, work, faults, lifecycle_seconds):
    """A KusciaTask of alice (initiator) and bob per task of `faults` (task -> the fault sim-agent
    plays in bob, its `sim.kuscia-host/fault` annotation; "" none), applied with kubectl."""
    import json
    for task, fault in faults.items():
        obj = {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
               "metadata": {"name": task, "namespace": "cross-domain",
                            "annotations": {"sim.kuscia-host/fault": "bob=" + fault if fault else ""}},
               "spec": {"initiator": "alice", "taskInputConfig": "{}",
                        "scheduleConfig": {"minReservedMembers": 2, "lifecycleSeconds": lifecycle_seconds},
                        "parties": [{"domainID": "alice", "appImageRef": "secretflow-image"},
                                    {"domainID": "bob", "appImageRef": "secretflow-image"}]}}
        path = os.path.join(work, task + ".json")
        with open(path, "w") as f:
            json.dump(obj, f)
        r = kubectl(kubeconfig, "apply", "-f", path)
        check(r.returncode == 0, "task %s submitted: %s" % (task, r.stderr))
