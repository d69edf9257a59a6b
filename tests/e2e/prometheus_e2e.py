#!/usr/bin/python3
"""The host's metrics read by the real Prometheus (Debian's prometheus package).

A serving `kuscia-host demo` (one host, domains alice and bob, every bundled plugin: sim-agent,
task-timeline, gateway-ready-time, scheduler-time) is scraped every second by `prometheus`, which
loads the shipped recording rules (config/prometheus/kuscia-host-rules.yml):

1. `promtool check metrics` passes on the host's /metrics, and `promtool check rules` on the rules;
2. Prometheus's HTTP API: the scrape target is up; the timeline histograms have samples for each
   domain; the PromQL of docs/operators/prometheus.md for "p99 pod create->ready per domain over the last hour" and its
   recording rule give a finite number of seconds for both domains;
3. exemplars: /metrics asked for OpenMetrics (as Prometheus asks) answers it, which the Python client's strict
   OpenMetrics parser reads, with the startup buckets' exemplars; Prometheus, with exemplar storage on, returns for
   the task startup histogram each task's trace id with the task's startup, the greatest a slowest task's, whose
   trace otel-export sent to the receiver.

Prometheus starts first and finds the host through a file of targets written once the demo's
admin server listens; it listens on 127.0.0.1:0, and its port is read from the kernel (its
listening socket).

usage: prometheus_e2e.py <kuscia-host> <plugin-dir>
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from hashlib import sha256

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from e2e_support import check, eventually, listening_port

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "otel"))
from otlp_support import Capture, spans_of  # noqa: E402

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
rules = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config", "prometheus",
                     "kuscia-host-rules.yml")
alerts = os.path.join(os.path.dirname(rules), "kuscia-host-alerts.yml")
dashboard = os.path.join(os.path.dirname(rules), "..", "grafana", "kuscia-host.json")
procs = []
DOMAINS = ("alice", "bob")


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()


def trace_id(task):
    """The trace id otel-export derives for a task (docs/operators/otel-export.md)."""
    return sha256(("kuscia-host/trace/v1\n" + task).encode()).hexdigest()[:32]


def check_openmetrics(admin):
    """What Prometheus is served: OpenMetrics, strictly parsed, with exemplars on the startup buckets."""
    accept = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
              "text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
    with urllib.request.urlopen(urllib.request.Request(admin + "/metrics", headers={"Accept": accept}),
                                timeout=10) as r:
        kind, body = r.headers["Content-Type"], r.read().decode()
    check(kind.startswith("application/openmetrics-text; version=1.0.0"), "OpenMetrics is served: " + kind)
    check(body.endswith("# EOF\n"), "it ends with # EOF")
    exemplars = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.exemplar:
                exemplars.setdefault(family.name, set()).add(sample.exemplar.labels["trace_id"])
    tasks = {trace_id("demo-task-%d" % i) for i in (1, 2, 3)}
    check(exemplars.get("kuscia_timeline_task_startup_seconds", set()) <= tasks and
          exemplars.get("kuscia_timeline_task_startup_seconds") and
          exemplars.get("kuscia_timeline_pod_create_to_ready_seconds"),
          "the strict OpenMetrics parser reads the startup buckets' exemplars: %s" % exemplars)


def check_exemplars(api, admin, receiver):
    """Prometheus's stored exemplars of the task startup histogram: each names a demo task's trace with
    that task's startup; the greatest is a slowest task's (times are whole seconds: tasks may tie, and a
    bucket keeps its latest exemplar)."""
    startup = {}
    for i in (1, 2, 3):
        task = "demo-task-%d" % i
        startup[trace_id(task)] = (task, json.loads(get(admin + "/api/v1/timelines/" + task))["summary"]["startupSeconds"])
    slowest = max(s for _, s in startup.values())

    def stored():
        q = urllib.parse.urlencode({"query": "kuscia_timeline_task_startup_seconds_bucket",
                                    "start": time.time() - 600, "end": time.time() + 60})
        found = {}
        for series in json.loads(get(api + "query_exemplars?" + q))["data"]:
            for e in series["exemplars"]:
                found[e["labels"]["trace_id"]] = float(e["value"])
        return found if found and max(found.values()) == slowest else None

    found = eventually(stored, 20)
    check(found, "Prometheus stored a slowest task's exemplar (%ss): %s, tasks %s" % (slowest, stored(), startup))
    for tid, value in found.items():
        check(tid in startup and abs(value - startup[tid][1]) < 1e-6,
              "exemplar %s %s is %s's startup %s" % (tid, value, *startup.get(tid, ("no task", None))))
    top = max(found, key=found.get)
    # And otel-export sent that trace: the exemplar links the slow bucket to the task's spans.
    sent = eventually(lambda: top in {sp["traceId"] for sp in spans_of(receiver.trees())[2]}, 20)
    check(sent, "otel-export sent the trace %s behind the exemplar" % top)
    print("ok - the slowest task %s (%ss) is behind the exemplar %s" % (startup[top][0], slowest, top))


def check_dashboard(api):
    """The Grafana dashboard (config/grafana/kuscia-host.json): its shape as Grafana's model wants it
    (a schema version, the datasource a variable every panel uses, unique ids, a 24-column grid),
    and every panel's every expression evaluated by this Prometheus over the demo's metrics, with
    Grafana's variables as it would fill them: none may fail or come back empty."""
    d = json.load(open(dashboard))
    check(isinstance(d.get("schemaVersion"), int) and d.get("uid") and d.get("title"), "the dashboard is versioned")
    variables = {v["name"]: v for v in d["templating"]["list"]}
    check(variables.get("datasource", {}).get("type") == "datasource" and
          variables["datasource"].get("query") == "prometheus", "its datasource is a variable")
    ids = [p["id"] for p in d["panels"]]
    check(len(ids) == len(set(ids)), "panel ids are unique")
    fill = {"$domain": ".*", "$__rate_interval": "15s", "$__range": "1h"}
    exprs = 0
    for p in d["panels"]:
        g = p["gridPos"]
        check(0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, "%s fits the grid" % p["title"])
        if p["type"] == "row":
            continue
        check(p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, "%s uses the variable" % p["title"])
        for t in p["targets"]:
            q = t["expr"]
            for var, value in fill.items():
                q = q.replace(var, value)
            ask = lambda: json.loads(get(api + "query?" + urllib.parse.urlencode({"query": q})))
            # A counter's increase needs two samples of it: the last series appear with the tasks.
            r = eventually(lambda: (lambda a: a if a["status"] != "success" or a["data"]["result"] else None)(ask()), 20)
            r = r or ask()
            check(r["status"] == "success" and r["data"]["result"],
                  "panel %r answers %s: %s" % (p["title"], t["refId"], str(r)[:300]))
            exprs += 1
            if t.get("exemplar"):  # the panel shows its exemplars: Prometheus has some for it
                found = json.loads(get(api + "query_exemplars?" + urllib.parse.urlencode(
                    {"query": q, "start": time.time() - 600, "end": time.time() + 60})))["data"]
                check(found and found[0]["exemplars"], "panel %r has exemplars: %s" % (p["title"], str(found)[:200]))
    domains = json.loads(get(api + "label/domain/values"))["data"]
    check(set(DOMAINS) <= set(domains), "the domain variable's values: %s" % domains)
    print("ok - the dashboard's %d expressions all answer" % exprs)


try:
    # Prometheus first, its target from a file: the host is scraped from its first second, before
    # any pod is ready (rate() needs the increase between two samples).
    targets = os.path.join(work, "targets.json")
    with open(targets, "w") as f:
        json.dump([], f)
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n  - %s\n"
                "scrape_configs:\n  - job_name: kuscia-host\n    file_sd_configs:\n"
                "      - files: ['%s']\n        refresh_interval: 1s\n" % (rules, alerts, targets))
    prom = subprocess.Popen(["prometheus", "--config.file=" + config, "--storage.tsdb.path=" + os.path.join(work, "data"),
                             "--web.listen-address=127.0.0.1:0", "--log.level=warn",
                             "--enable-feature=exemplar-storage"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"))
    procs.append(prom)
    port = eventually(lambda: prom.poll() is None and listening_port(prom.pid), 30)
    check(port, "prometheus listens on 127.0.0.1:%s" % port)
    api = "http://127.0.0.1:%d/api/v1/" % port

    # The demo: a phase takes about two seconds, so pods become ready well after the first scrape.
    demo_out = os.path.join(work, "demo.out")
    # Traces go to a receiver that takes them: the dashboard's export panels have samples too.
    receiver = Capture()
    demo = subprocess.Popen([host_bin, "demo", "--tasks", "3", "--phase-millis", "2000", "--plugin-dir", plugin_dir,
                             "--admin-listen", "127.0.0.1:0", "--work-dir", work, "--otlp-endpoint", receiver.url],
                            stdout=open(demo_out, "w"), stderr=subprocess.STDOUT)
    procs.append(demo)
    url = eventually(lambda: re.search(r"admin server listening on (127\.0\.0\.1:\d+)",
                                       open(os.path.join(work, "demo.log")).read()
                                       if os.path.exists(os.path.join(work, "demo.log")) else ""), 30)
    check(url, "the demo serves its admin server")
    target = url.group(1)
    admin = "http://" + target
    with open(targets + ".new", "w") as f:
        json.dump([{"targets": [target]}], f)
    os.rename(targets + ".new", targets)

    def query(q):
        try:
            doc = json.loads(get(api + "query?" + urllib.parse.urlencode({"query": q})))
        except urllib.error.HTTPError as e:
            if e.code == 503:  # Prometheus listens before it is ready (its storage opening)
                return {}
            raise
        if doc["status"] != "success":
            raise SystemExit("FAIL: query %s: %s" % (q, doc))
        return {r["metric"].get("domain", ""): float(r["value"][1]) for r in doc["data"]["result"]}

    check(eventually(lambda: query('up{job="kuscia-host"}').get("") == 1, 30), "the host's target is up")

    # promtool on what the host serves once every plugin has observed something.
    check(eventually(lambda: "demo-task-3" in open(demo_out).read() and "tasks ready 3/3" in open(demo_out).read(), 90),
          "the demo's three tasks are ready")
    metrics = get(admin + "/metrics")
    r = subprocess.run(["promtool", "check", "metrics"], input=metrics, capture_output=True, text=True)
    check(r.returncode == 0 and not r.stdout.strip() and not r.stderr.strip(),
          "promtool check metrics passes on /metrics (%d lines): %s%s" % (metrics.count("\n"), r.stdout, r.stderr))
    for plugin in ("task-timeline", "gateway-ready-time", "scheduler-time", "sim-agent"):
        check('plugin="%s"' % plugin in metrics, "/metrics has series of %s" % plugin)
    r = subprocess.run(["promtool", "check", "rules", rules, alerts], capture_output=True, text=True)
    check(r.returncode == 0, "promtool check rules passes on the shipped rules: " + r.stdout + r.stderr)

    # The histograms, per domain, as Prometheus stored them.
    for hist in ("kuscia_timeline_pod_create_to_ready_seconds", "kuscia_timeline_pod_create_to_start_seconds",
                 "kuscia_timeline_task_startup_seconds", "kuscia_timeline_pod_image_pull_seconds",
                 "kuscia_timeline_pod_start_to_ready_seconds", "kuscia_timeline_service_create_to_ready_seconds"):
        counts = eventually(lambda: (lambda c: c if all(c.get(d, 0) > 0 for d in DOMAINS) else None)(
            query("sum by (domain) (%s_count)" % hist)), 30)
        check(counts, "%s has samples for %s: %s" % (hist, " and ".join(DOMAINS), counts))
    # The documented PromQL (docs/operators/prometheus.md) and its recording rule: p99 pod create -> ready per domain, last hour.
    promql = ("histogram_quantile(0.99, sum by (domain, le) "
              "(rate(kuscia_timeline_pod_create_to_ready_seconds_bucket[1h])))")
    p99 = eventually(lambda: (lambda v: v if all(d in v and math.isfinite(v[d]) and v[d] > 0 for d in DOMAINS)
                              else None)(query(promql)), 30)
    check(p99, "p99 pod create->ready per domain over the last hour: %s" % (p99 or query(promql)))
    recorded = eventually(lambda: (lambda v: v if all(d in v and math.isfinite(v[d]) for d in DOMAINS) else None)(
        query("domain:kuscia_timeline_pod_create_to_ready_seconds:p99_1h")), 30)
    check(recorded, "the recording rule gives it too: %s"
          % (recorded or query("domain:kuscia_timeline_pod_create_to_ready_seconds:p99_1h")))
    # The alerting rules are loaded (and, the demo's tasks being fast and unstuck, inactive).
    groups = json.loads(get(api + "rules"))["data"]["groups"]
    names = {r["name"]: r.get("state") for g in groups for r in g["rules"] if r["type"] == "alerting"}
    check(set(names) == {"KusciaTaskEntriesStuck", "KusciaTaskStartupSlow", "KusciaPartyBlameJump",
                         "KusciaPartyFailingForOneReason", "KusciaTasksStuck",
                         "KusciaTraceExportFailing", "KusciaHostFallingBehind",
                         "KusciaTaskStartupSLOBurningFast", "KusciaTaskStartupSLOBurningSlowly"}
          and set(names.values()) == {"inactive"}, "Prometheus loaded the alerting rules: %s" % names)
    check_openmetrics(admin)
    check_exemplars(api, admin, receiver)
    check_dashboard(api)
    receiver.stop()
    print("prometheus e2e passed")
except SystemExit:
    for name in ("demo.out", "prometheus.log"):
        p = os.path.join(work, name)
        if os.path.exists(p):
            print("--- %s ---\n%s" % (name, open(p).read()[-3000:]), file=sys.stderr)
    raise
finally:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    shutil.rmtree(work, ignore_errors=True)
