#!/usr/bin/python3
"""Why a task failed or is stuck in p2p, each cluster's host alone, before and after a restart.

Two clusters (`kuscia-host apiserver` each), a p2p host per party (alice's, bob's) with sim-agent,
task-timeline and task-history. The tasks are created in both clusters, as Kuscia's
interconnection does; sim-agent plays one fault of bob's per task:
- f-route: the route between alice and bob is down. bob's task controller runs the pre-check for
  bob (its cluster's local party: its status allocates bob's ports alone) and fails the task before
  any pod: RouteNotReady, on the pair alice-bob, party bob, with when the route went down (bob's
  host observed its Ready turn False and kept it on the route). alice's cluster learns that bob
  failed: PartnerFailed, party bob.
- f-image: bob's image cannot be pulled: bob's host flags the task stuck with ImagePull in bob
  (Kuscia never fails it).
The answers come from each host's API; then the Events are deleted, both hosts killed and started
again, and the same answers come from the API, `kuscia-host timeline` on each cluster and
task-history.

usage: failure_p2p_e2e.py <kuscia-host> <plugin-dir>
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_support import (RunningHost, apiserver, check, delete_events, eventually, kubectl, ns,  # noqa: E402
                          submit_fault_tasks)

host_bin, plugin_dir = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
procs = []
STUCK_AFTER = 3
FAULTS = {"f-route": "route-down", "f-image": "image-missing"}
# (cluster, task) -> what its summary must say: kind, reason, party, and the evidence's words.
WANT = {
    ("bob", "f-route"): ("failure", "RouteNotReady", "bob", "HeartBeatTimeout"),
    ("alice", "f-route"): ("failure", "PartnerFailed", "bob", "failed party[bob]"),
    ("bob", "f-image"): ("stuck", "ImagePull", "bob", "ImagePullBackOff"),
}


def host_config(party, kubeconfig, db):
    path = os.path.join(work, party + ".yaml")
    with open(path, "w") as f:
        f.write("mode: p2p\npluginDirs: [%s]\ncluster:\n  kubeconfig: %s\ndomains:\n"
                "  - id: %s\n    plugins:\n"
                "      - name: sim-agent\n        config: { phaseMillis: 300, cleanupMillis: 600 }\n"
                "      - name: task-timeline\n        config: { stuckAfterSeconds: %d }\n"
                "      - name: gateway-ready-time\n"
                "      - name: task-history\n"
                "        config: { database: \"%s\", recordDelaySeconds: 1, stuckAfterSeconds: %d }\n"
                % (plugin_dir, kubeconfig, party, STUCK_AFTER, db, STUCK_AFTER))
    return path


def submit(kubeconfig):
    submit_fault_tasks(kubeconfig, work, FAULTS, 60)


def why(summary):
    for kind in ("failure", "stuck"):
        if kind in summary:
            c = summary[kind]
            return (kind, c.get("reason"), c.get("party"), c.get("excerpt", ""), c.get("pair"))
    return None


def route_down_ok(failure):
    """The route's outage, observed by bob's host when sim-agent made the route not Ready (a
    phase before the task failed on it), kept on the route: it began before the task ended."""
    down = failure.get("routeDown", {})
    ended = failure.get("since")
    return (down.get("observed") is True and "since" in down and ended is not None and
            ns(down["since"]) <= ns(ended))


def matches(cluster, task, summary):
    got = why(summary or {})
    kind, reason, party, words = WANT[(cluster, task)]
    return (got is not None and got[:3] == (kind, reason, party) and words in got[3] and
            (reason != "RouteNotReady" or (got[4] == "alice-bob" and route_down_ok(summary["failure"]))))


def expect(cluster, task, summary, where):
    check(matches(cluster, task, summary), "%s: %s in %s's cluster is %s: %s"
          % (where, task, cluster, WANT[(cluster, task)][:3], why(summary or {})))


def settled(hosts):
    return all(matches(c, t, (hosts[c].get("/api/v1/timelines/" + t) or {}).get("summary"))
               for c, t in WANT)


try:
    clusters, hosts = {}, {}
    for party in ("alice", "bob"):
        os.makedirs(os.path.join(work, party))
        clusters[party] = apiserver(host_bin, os.path.join(work, party), procs)
        submit(clusters[party])
    for party in ("alice", "bob"):
        config = host_config(party, clusters[party], os.path.join(work, party, "history.db"))
        hosts[party] = RunningHost(host_bin, config, os.path.join(work, party + ".log"), procs)
        hosts[party].start()
    check(eventually(lambda: settled(hosts), 90), "every task settled in both clusters: %s" % json.dumps(
        {"%s/%s" % k: why((hosts[k[0]].get("/api/v1/timelines/" + k[1]) or {}).get("summary", {})) for k in WANT}))
    for (cluster, task) in WANT:
        expect(cluster, task, hosts[cluster].get("/api/v1/timelines/" + task)["summary"], "api")
    # bob's status allocated bob's ports alone (the pre-check ran for bob), no pod was created.
    r = kubectl(clusters["bob"], "get", "kusciatasks", "-n", "cross-domain", "f-route", "-o", "json")
    status = json.loads(r.stdout)["status"]
    check([p["domainID"] for p in status.get("allocatedPorts", [])] == ["bob"] and not status.get("podStatuses"),
          "bob's cluster ran bob's pre-check, before any pod: %s" % status)
    # The Events expire, both hosts are killed and started again: the same answers.
    for party in ("alice", "bob"):
        delete_events(clusters[party])
        hosts[party].kill()
    for party in ("alice", "bob"):
        hosts[party].start()
    check(eventually(lambda: settled(hosts), 60), "restarted: every task settled again")
    for (cluster, task) in WANT:
        expect(cluster, task, hosts[cluster].get("/api/v1/timelines/" + task)["summary"], "api after a restart")
        cli = subprocess.run([host_bin, "timeline", task, "--kubeconfig", clusters[cluster], "-o", "json",
                              "--stuck-after", str(STUCK_AFTER)], capture_output=True, text=True, timeout=60)
        check(cli.returncode == 0, "timeline prints %s in %s's cluster: %s" % (task, cluster, cli.stderr))
        expect(cluster, task, json.loads(cli.stdout)["summary"], "cli")

        def stored():
            r = subprocess.run([host_bin, "history", task, "--server", hosts[cluster].url, "-o", "json"],
                               capture_output=True, text=True, timeout=60)
            return json.loads(r.stdout)["summary"] if r.returncode == 0 else None
        check(eventually(lambda: matches(cluster, task, stored()), 30),
              "history: %s in %s's cluster: %s" % (task, cluster, why(stored() or {})))
    table = subprocess.run([host_bin, "timeline", "f-route", "--kubeconfig", clusters["bob"]],
                           capture_output=True, text=True, timeout=60).stdout
    check("failed: RouteNotReady on route alice-bob (HeartBeatTimeout) in bob at " in table and
          "down since " in table and "(observed)" in table,
          "the CLI says which route, whose pre-check and since when it was down: " + table[:600])
    for party in ("alice", "bob"):
        hosts[party].kill()
    print("PASS: in p2p, a route down and an image that cannot be pulled, from each cluster's host, "
          "before and after a restart")
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
