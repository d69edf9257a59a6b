#!/usr/bin/python3
"""task-history end to end: real hosts record real tasks, and the history outlives them.

Centralized and p2p (`kuscia-host demo`, which records into a fresh SQLite file): once every task
started, the KusciaTasks are deleted (their pods are gone already); the history still serves every
task, each time exactly as the demo's own timeline had it, and each KusciaJob's view (deleted
too), through `kuscia-host history --server` while the demo runs and `kuscia-host history --db`
after it exited. In p2p both hosts share the
file: each task is one record holding both parties' entries.

Restart and PostgreSQL: `kuscia-host run` against `kuscia-host apiserver`, recording into a real
PostgreSQL server the test starts. The host is killed with SIGKILL while a task starts and started
again: no duplicates. Then PostgreSQL is stopped for 5 s (at least until its failures are
counted) while tasks start: nothing is lost once it is back, and the failures were counted, none
dropped.

A burst killed (SQLite in WAL, then PostgreSQL): twenty tasks start at once, the host is killed
with SIGKILL once the first are recorded; the SQLite file passes `PRAGMA integrity_check`, and
after the restart each task is recorded once, with both parties.

usage: history_e2e.py <kuscia-host> <plugin-dir>
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from e2e_support import PostgresServer, check, eventually, listening_port, sim_cluster

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
procs = []


def history(*args):
    """`kuscia-host history ARGS -o json` -> parsed JSON, or None when it failed."""
    r = subprocess.run([host_bin, "history", "--plugin-dir", plugin_dir, *args, "-o", "json"]
                       if "--db" in args else [host_bin, "history", *args, "-o", "json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        print("  (history %s: %s)" % (" ".join(args), r.stderr.strip()), flush=True)
        return None
    return json.loads(r.stdout)


def job_kept(source, docs, mode):
    """Each demo job's view from the history, after the jobs and tasks were deleted: its task
    with the startup the demo's timeline had."""
    for task, want in sorted(docs.items()):
        job = want["job"]["job"]
        view = history(*source, "--job", job)
        check(view is not None and view["tasks"][0]["task"] == task and
              view["tasks"][0].get("startupSeconds") == want["summary"]["startupSeconds"] and
              view["tasks"][0]["queued"].get("seconds", -1) >= 0,
              "%s: %s's view kept, its task's startup as the demo had it: %s" % (mode, job, view))


def complete_items(source, n):
    items = history(*source, "--since", "1d") or []
    return len(items) == n and all(i["summary"].get("complete") for i in items) and items


def same_times(task, want, got):
    """Every time the demo's document has, the history's has, equal."""
    bad = []
    for key, entry in want["entries"].items():
        have = got["entries"].get(key, {}).get("times", {})
        for field, value in entry["times"].items():
            if have.get(field) != value:
                bad.append("%s %s: %s, history %s" % (key, field, value, have.get(field)))
    check(not bad and len(got["entries"]) == len(want["entries"]),
          "%s: the history holds every time of its %d entries exactly%s" %
          (task, len(want["entries"]), ("; " + "; ".join(bad[:5])) if bad else ""))


def kubectl(kubeconfig, *args, stdin=None):
    return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--cache-dir", os.path.join(work, "kcache"),
                           *args], input=stdin, capture_output=True, text=True, timeout=60)


def browser(url, docs):
    """The web page's history view in headless Chromium: the recorded tasks' table, the chart of
    startup per day (p50 and p99, a line per party), and a recorded task's Gantt chart and table
    drawn from the history once its KusciaTask is gone."""
    chromium = shutil.which("chromium")
    check(chromium is not None, "chromium is installed")
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              "--user-data-dir=" + os.path.join(work, "chromium"), "--virtual-time-budget=8000", "--dump-dom"]
    dom = subprocess.run(common + [url + "/ui/#history"], capture_output=True, text=True, timeout=120).stdout
    check('data-history-loaded="true"' in dom and 'data-view="history"' in dom, "the history view loaded")
    for task in docs:
        check('data-history-task="%s"' % task in dom, "the history table lists " + task)
    for series in ("alice-p50", "alice-p99", "bob-p50", "bob-p99"):
        check('data-series="%s"' % series in dom, "the chart has the line " + series)
    task, want = sorted(docs.items())[0]
    dom = subprocess.run(common + [url + "/ui/#history/" + task], capture_output=True, text=True,
                         timeout=120).stdout
    check('data-view="stored"' in dom and 'data-loaded="true"' in dom, "a recorded task opens from the history")
    for key, e in want["entries"].items():
        check(dom.count('data-entry="%s"' % key) >= 2, "%s: a Gantt row and a table row for %s" % (task, key))
        check(all(t in dom for t in e["times"].values()), "%s: the page shows every time of %s" % (task, key))
    check(re.search(r'data-startup-seconds="[0-9.]+"[^>]*>Startup', dom), "with the task's summary")


def demo(p2p):
    mode = "p2p" if p2p else "centralized"
    dir = os.path.join(work, mode)
    out = os.path.join(dir, "out")
    args = [host_bin, "demo", "--tasks", "3", "--phase-millis", "300", "--plugin-dir", plugin_dir,
            "--admin-listen", "127.0.0.1:0", "--work-dir", dir, "--output", out] + (["--p2p"] if p2p else [])
    os.makedirs(dir)
    log = os.path.join(dir, "demo.out")
    proc = subprocess.Popen(args, stdout=open(log, "w"), stderr=subprocess.STDOUT, text=True)
    procs.append(proc)
    text = lambda: open(log).read()
    serving = eventually(lambda: "serving until Ctrl-C" in text(), 90)
    check(serving, "%s demo serving%s" % (mode, "" if serving else ": " + text()[-800:]))
    m = re.search(r"history API: (http://[0-9.:]+)/api/v1/history", text())
    check(m, "the demo says where the history API is")
    db = re.search(r"kuscia-host history --db (\S+)", text())
    check(db, "and how to read the database")
    server = ["--server", m.group(1)]
    docs = {f[:-5]: json.load(open(os.path.join(out, f)))
            for f in os.listdir(out) if f.startswith("demo-task-")}  # not the jobs' views
    check(eventually(lambda: complete_items(server, 3), 30),
          "%s: three complete tasks recorded (kuscia-host history --server)" % mode)
    clusters = [os.path.join(dir, c + ".kubeconfig") for c in (["alice", "bob"] if p2p else ["cluster"])]
    for k in clusters:
        r = kubectl(k, "delete", "kt,kusciajobs", "--all", "-n", "cross-domain")
        check(r.returncode == 0, "the KusciaTasks and KusciaJobs deleted (%s): %s" % (os.path.basename(k), r.stderr))
    check(eventually(lambda: all("demo-task" not in kubectl(k, "get", "kt", "-n", "cross-domain").stdout
                                 for k in clusters), 30), "no KusciaTask is left")
    time.sleep(2)  # past recordDelaySeconds: whatever the deletions brought is recorded
    for task, want in sorted(docs.items()):
        got = history(*server, task)
        check(got is not None, "%s is served after its task was deleted" % task)
        same_times(task, want, got)
        parties = sorted({k.split("/")[0] for k in got["entries"]})
        check(parties == ["alice", "bob"], "%s: one record with both parties' entries" % task)
    job_kept(server, docs, mode)
    if not p2p:
        browser(m.group(1), docs)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    # After the demo exited: the database itself.
    source = ["--db", db.group(1)]
    check(len(complete_items(source, 3) or []) == 3, "%s: the database still lists the three tasks" % mode)
    for task, want in sorted(docs.items()):
        same_times(task, want, history(*source, task))
    job_kept(source, docs, mode)
    for party in ("alice", "bob"):
        check(len(history(*source, "--party", party) or []) == 3, "--party %s finds the three" % party)
    stats = history(*source, "--stats", "--group-by", "party")
    check(stats and [g["key"] for g in stats["groups"]] == ["alice", "bob"] and
          all(g["tasks"] == 3 and g["complete"] == 3 for g in stats["groups"]),
          "--stats --group-by party: three complete tasks for each party")
    r = subprocess.run([host_bin, "history", "--db", db.group(1), "--plugin-dir", plugin_dir, "-o", "csv"],
                       capture_output=True, text=True, timeout=60)
    lines = r.stdout.strip().splitlines()
    check(r.returncode == 0 and lines[0].startswith("TASK,CREATED,PHASE,STARTUP") and len(lines) == 4,
          "-o csv: a header and three tasks")


def start_host(config, log):
    """`kuscia-host run --config CONFIG`: the process, and the `--server` arguments of its admin API."""
    proc = subprocess.Popen([host_bin, "run", "--config", config, "--plugin-dir", plugin_dir,
                             "--admin-listen", "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                            stderr=open(log, "a"))
    procs.append(proc)
    port = eventually(lambda: listening_port(proc.pid), 30)
    check(port, "the host serves its admin API")
    return proc, ["--server", "http://127.0.0.1:%d" % port]


def create_task(kubeconfig, name):
    """A KusciaTask of alice and bob, as Kuscia's users create one."""
    task = {"apiVersion": "kuscia.secretflow/v1alpha1", "kind": "KusciaTask",
            "metadata": {"name": name, "namespace": "cross-domain"},
            "spec": {"initiator": "alice", "parties": [{"domainID": "alice", "appImageRef": "x"},
                                                       {"domainID": "bob", "appImageRef": "x"}]}}
    r = kubectl(kubeconfig, "create", "-f", "-", stdin=json.dumps(task))
    check(r.returncode == 0, "task %s created: %s" % (name, r.stderr))


def restart_and_postgres():
    pg = PostgresServer(work)
    pg.psql("CREATE DATABASE history")
    kubeconfig, config = sim_cluster(host_bin, work, """      - name: task-history
        config: { database: "%s", recordDelaySeconds: 1 }
""" % pg.uri("history"), 400, procs)
    log = os.path.join(work, "r.log")

    run_host = lambda: start_host(config, log)
    submit = lambda name: create_task(kubeconfig, name)

    host, server = run_host()
    submit("r-1")
    submit("r-2")
    check(eventually(lambda: complete_items(server, 2), 60), "r-1 and r-2 recorded in PostgreSQL")
    submit("r-3")
    time.sleep(0.8)  # r-3 is starting
    host.send_signal(signal.SIGKILL)
    host.wait()
    host, server = run_host()
    check(eventually(lambda: complete_items(server, 3), 60), "the restarted host records r-3")
    time.sleep(2)
    check(pg.psql("SELECT count(*) FROM tasks", "history") == "3" and
          pg.psql("SELECT count(*) FROM recordings", "history") == "6",
          "no duplicates: 3 tasks, one recording per party each (%s, %s)" %
          (pg.psql("SELECT count(*) FROM tasks", "history"), pg.psql("SELECT count(*) FROM recordings", "history")))

    pg.stop()
    stopped = time.time()
    submit("r-4")
    submit("r-5")
    metrics = lambda: subprocess.run(["curl", "-fsS", server[1] + "/metrics"], capture_output=True,
                                     text=True, timeout=30).stdout
    def failures():
        return sum(float(l.split()[-1]) for l in metrics().splitlines()
                   if l.startswith("kuscia_history_write_failures_total{"))
    check(eventually(lambda: failures() > 0, 20), "the failing database is counted")
    check(re.search(r"recording task history fails", open(log).read()), "and logged")
    time.sleep(max(0, 5 - (time.time() - stopped)))
    pg.start()
    check(eventually(lambda: complete_items(server, 5), 90),
          "PostgreSQL back after its outage: r-4 and r-5 recorded, nothing lost")
    dropped = sum(float(l.split()[-1]) for l in metrics().splitlines()
                  if l.startswith("kuscia_history_dropped_total{"))
    check(dropped == 0, "nothing was dropped (the queue held it)")
    check(eventually(lambda: "recording task history works again" in open(log).read(), 10),
          "the recovery is logged")
    for i in range(1, 6):
        name = "r-%d" % i
        r = subprocess.run(["curl", "-fsS", server[1] + "/api/v1/timelines/" + name],
                           capture_output=True, text=True, timeout=30)
        want = json.loads(r.stdout)
        got = history(*server, name)
        # The status's times (the timeline serves this host's first ready and facts too, which
        # the history holds for the entries whose pods it saw).
        for e in want["entries"].values():
            e["times"] = {k: v for k, v in e["times"].items()
                          if k in ("createTime", "scheduleTime", "startTime", "readyTime")}
        same_times(name, want, got)
    check(history("--db", pg.uri("history"), "r-1") is not None, "--db postgresql:// reads it too")
    host.terminate()
    host.wait(timeout=30)
    pg.stop()


def burst_killed(kind):
    """SIGKILL during a burst of recordings (SQLite in WAL, or PostgreSQL): the database is
    consistent, and once the host is back every task is recorded once, with both parties."""
    import sqlite3
    sub = os.path.join(work, "burst-" + kind)
    os.makedirs(sub)
    if kind == "sqlite":
        database = os.path.join(sub, "history.db")

        def query(sql):
            with sqlite3.connect(database) as c:
                return str(c.execute(sql).fetchone()[0])
    else:
        pg = PostgresServer(sub)
        pg.psql("CREATE DATABASE history")
        database = pg.uri("history")

        def query(sql):
            return pg.psql(sql, "history")
    kubeconfig, config = sim_cluster(host_bin, sub, """      - name: task-history
        config: { database: "%s", recordDelaySeconds: 1 }
""" % database, 200, procs)

    run_host = lambda: start_host(config, os.path.join(sub, "host.log"))
    tasks = ["b-%02d" % i for i in range(20)]
    host, server = run_host()
    for name in tasks:
        create_task(kubeconfig, name)
    recorded = lambda: len(history(*server, "--since", "1d") or [])
    check(eventually(lambda: recorded() >= 3, 60), "%s: the burst is being recorded" % kind)
    host.send_signal(signal.SIGKILL)
    host.wait()
    if kind == "sqlite":
        check(query("PRAGMA integrity_check") == "ok" and query("PRAGMA journal_mode") == "wal",
              "killed mid-burst: PRAGMA integrity_check ok, in WAL mode")
    host, server = run_host()
    check(eventually(lambda: complete_items(server, len(tasks)), 90),
          "%s, restarted: all %d tasks recorded, complete" % (kind, len(tasks)))
    time.sleep(2)  # past recordDelaySeconds: a duplicate would be written by now
    counts = (query("SELECT count(*) FROM tasks"), query("SELECT count(*) FROM recordings"),
              query("SELECT count(DISTINCT task) FROM recordings"))
    check(counts == (str(len(tasks)), str(2 * len(tasks)), str(len(tasks))),
          "%s: each task once, one recording per party: %s" % (kind, counts))
    if kind == "sqlite":
        check(query("PRAGMA integrity_check") == "ok", "and the file consistent")
    host.terminate()
    host.wait(timeout=30)
    if kind != "sqlite":
        pg.stop()


try:
    demo(False)
    demo(True)
    restart_and_postgres()
    burst_killed("sqlite")
    burst_killed("postgresql")
    print("history e2e passed")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
