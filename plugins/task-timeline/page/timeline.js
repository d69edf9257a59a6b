"use strict";
// Everything drawn comes from the timeline document (/api/v1/timelines/<task>): each entry's
// "phases" and the task's "summary" are computed by the host, the page only draws them. Every
// value is set as text (textContent, setAttribute), never parsed as markup.
const params = new URLSearchParams(location.search);
const REFRESH_MS = Math.max(200, Number(params.get("refresh")) || 2000);
const LIST_LIMIT = 200;
const TIMES = ["createTime", "scheduleTime", "startTime", "imagePullStartTime", "imagePullEndTime",
               "containersStartTime", "readyTime", "firstReadyTime"];
const TITLES = {createTime: "create", scheduleTime: "schedule", startTime: "start",
                imagePullStartTime: "pull start", imagePullEndTime: "pull end",
                containersStartTime: "containers", readyTime: "ready", firstReadyTime: "first ready"};
let current = "";
let view = "live"; // "live", "history" (the recorded tasks), "stored" (one recorded task), "job"
let currentJob = ""; // the job shown (view "job")
let historyNext = ""; // the continue token of the history list
let draws = 0;
let listHasMore = false; // the list was cut at LIST_LIMIT: a month of history is there
const states = []; // "starting" / "complete" of the task shown, as each redraw changed it

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

// An answer other than 2xx, with its status (a task that is not there is said so, not as a status).
class HttpError extends Error {
  constructor(path, status) {
    super(path + ": HTTP " + status);
    this.status = status;
  }
}

async function getJson(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new HttpError(path, r.status);
  return r.json();
}

// The task asked for is not there (never was, or Kuscia deleted it): said so, nothing stale drawn.
function drawMissing(name, recorded) {
  document.getElementById("title").textContent = "No task " + name;
  for (const id of ["startup", "blame", "parties", "axis", "chart"])
    document.getElementById(id).replaceChildren();
  document.getElementById("failure").hidden = true;
  const table = document.getElementById("table");
  table.tHead.replaceChildren();
  table.tBodies[0].replaceChildren();
  const why = document.getElementById("missing");
  why.replaceChildren(recorded
      ? "This host has no recorded timeline of " + name + ": task-history did not record it."
      : "This host knows no task named " + name + ": it may not exist yet, or Kuscia deleted it. ");
  if (!recorded) {
    why.append(el("a", {href: "#history/" + encodeURIComponent(name)}, "Its recorded timeline"),
               " is kept when task-history is enabled.");
  }
  why.hidden = false;
  document.body.setAttribute("data-missing", name);
}

// The task's document, or null when the host answers 404 (drawn as missing).
async function getTask(path, name, recorded) {
  try {
    const doc = await getJson(path);
    document.getElementById("missing").hidden = true;
    document.body.removeAttribute("data-missing");
    return doc;
  } catch (e) {
    if (e.status !== 404) throw e;
    drawMissing(name, recorded);
    return null;
  }
}

async function loadTasks() {
  // The newest tasks only: with a month of history the whole list is never asked for.
  const list = await getJson("/api/v1/timelines?limit=" + LIST_LIMIT);
  const names = Object.keys(list.tasks || {}).sort((a, b) =>
      String(list.tasks[b].createTime).localeCompare(String(list.tasks[a].createTime)) ||
      a.localeCompare(b));
  const ul = document.getElementById("tasks");
  ul.replaceChildren();
  for (const name of names) {
    const t = list.tasks[name];
    const li = el("li", {"data-task": name}, name);
    li.appendChild(el("small", {}, (t.phase || "Pending") + " \u00b7 " + t.entries + " entries"));
    if (name === current) li.className = "selected";
    li.addEventListener("click", () => { location.hash = encodeURIComponent(name); });
    ul.appendChild(li);
  }
  listHasMore = Boolean(list.continue);
  if (list.continue) {
    ul.appendChild(el("li", {"class": "more"}, "the newest " + LIST_LIMIT +
        " shown; open an older task as #<name>"));
  }
  if (!current && names.length) current = names[0];
}

function ms(text) { return text ? Date.parse(text) : NaN; }
function secs(v) { return (Math.round(v * 10) / 10).toFixed(1) + " s"; }
// Why a phase took its time; a pull says its own duration (the phase also holds the time
// before the pull, and its ends are whole seconds).
function why(p) {
  let pull = "";
  if (typeof p.pullSeconds === "number") {
    pull = "the pull itself " + p.pullSeconds.toFixed(3) + " s";
    const before = (p.seconds || 0) - p.pullSeconds;
    if (before >= 0.05) pull += ", " + secs(before) + " before it";
  }
  const reason = p.reason ? p.reason + (p.message ? ": " + p.message : "") : "";
  return pull && reason ? pull + "; " + reason : pull || reason;
}
function phaseText(p) {
  return p.entry + " " + p.phase + " " + (p.seconds === undefined ? "" : secs(p.seconds)) +
      (p.ongoing ? " so far" : "");
}

// "Failed: OOMKilled in bob (bob/t-0) at ..., cause Expired" of summary.failure or .stuck;
// "Failed: RouteNotReady on route alice-bob (HeartBeatTimeout) in bob at ..., down since ...
// (observed)" for a route.
function whyTitle(c, stuck) {
  return (stuck ? "Stuck" + (c.seconds === undefined ? "" : " " + secs(c.seconds)) : "Failed") +
      ": " + c.reason + (c.pair ? " on route " + c.pair : "") +
      (c.routeReason ? " (" + c.routeReason + ")" : "") +
      (c.party ? " in " + c.party : "") + (c.entry ? " (" + c.entry + ")" : "") +
      (c.since ? (stuck ? " since " : " at ") + c.since : "") + (c.cause ? ", cause " + c.cause : "") +
      (c.routeDown && c.routeDown.since ? ", down since " + c.routeDown.since + " (observed)" : "");
}
function whyShort(s) {
  const c = s.failure || s.stuck;
  return c ? (s.failure ? "failed: " : "stuck: ") + c.reason + (c.party ? " in " + c.party : "") : "";
}

// Why the task failed or is stuck, at the top: the reason, the party and the evidence (text).
function drawFailure(s) {
  const box = document.getElementById("failure");
  const c = s.failure || s.stuck;
  box.hidden = !c;
  if (!c) {
    box.removeAttribute("data-reason");
    return;
  }
  box.className = "failure" + (s.failure ? "" : " stuck");
  box.setAttribute("data-reason", c.reason);
  box.setAttribute("data-party", c.party || "");
  box.setAttribute("data-kind", s.failure ? "failure" : "stuck");
  document.getElementById("failureTitle").textContent = whyTitle(c, !s.failure);
  document.getElementById("failureExcerpt").textContent = c.excerpt || "";
}

function drawSummary(doc) {
  const s = doc.summary || {};
  drawFailure(s);
  const box = document.getElementById("summary");
  box.className = "summary" + (s.complete ? "" : " incomplete");
  const startup = document.getElementById("startup");
  const parties = Object.entries(s.parties || {});
  if (s.complete) {
    startup.textContent = "Startup " + (s.startupSeconds === undefined ? "?" : secs(s.startupSeconds)) +
        " \u00b7 last party " + s.lastParty;
    startup.setAttribute("data-startup-seconds", String(s.startupSeconds));
  } else {
    const ready = parties.reduce((n, [, p]) => n + p.readyEntries, 0);
    const all = parties.reduce((n, [, p]) => n + p.entries, 0);
    startup.textContent = "Starting: " + ready + " of " + all + " entries ready";
    startup.removeAttribute("data-startup-seconds");
  }
  const blame = document.getElementById("blame");
  blame.replaceChildren();
  if (s.blame) {
    blame.appendChild(el("b", {}, s.complete ? "Blame: " : "Waiting longest: "));
    blame.appendChild(document.createTextNode(phaseText(s.blame)));
    if (why(s.blame)) blame.appendChild(el("span", {class: "why"}, " \u2014 " + why(s.blame)));
    blame.setAttribute("data-entry", s.blame.entry);
    blame.setAttribute("data-phase", s.blame.phase);
  }
  document.getElementById("parties").textContent = (s.preparing
      ? "preparing " + secs(s.preparing.seconds) + " \u00b7 " : "") + parties.map(([name, p]) =>
      name + (p.startupSeconds !== undefined ? " ready after " + secs(p.startupSeconds)
                                             : " " + p.readyEntries + "/" + p.entries + " ready"))
      .join(" \u00b7 ");
}

// Tick spacing: a round number of seconds giving at most eight ticks.
function tickStep(spanSeconds) {
  for (const s of [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600])
    if (spanSeconds / s <= 8) return s;
  return 7200;
}

function drawTask(doc) {
  document.getElementById("title").textContent =
      doc.task + (doc.phase ? " (" + doc.phase + ")" : "") +
      (doc.createTime ? ", created " + doc.createTime : "");
  drawJobContext(doc.job);
  drawSummary(doc);
  const s = doc.summary || {};
  const entries = Object.entries(doc.entries || {});
  // A party known here only by its reservation (p2p: the stub TaskResource the initiator's
  // cluster keeps of a partner) gets a row of its reserving: a critical path may go through it.
  const partners = Object.entries(doc.partnerReservations || {})
      .filter(([, r]) => r.reservingTime)
      .map(([party, r]) => [r.taskResource || party + "/" + party, {partner: true, phases: [
        {phase: "reserving", from: r.reservingTime, to: r.reservedTime}]}]);
  const rows = entries.concat(partners);
  const now = Date.now();
  let first = ms(doc.createTime), last = -Infinity;
  for (const [, e] of rows)
    for (const p of e.phases || []) {
      const from = ms(p.from), to = p.to ? ms(p.to) : now;
      if (isNaN(first) || from < first) first = from;
      last = Math.max(last, from, to);
    }
  if (isNaN(first)) first = now;
  const span = Math.max(1000, last - first);
  const pct = t => ((t - first) / span * 100).toFixed(3) + "%";
  const width = (a, b) => "calc(" + pct(b) + " - " + pct(a) + ")";
  // The axis: seconds from the task's creation.
  const axis = document.getElementById("axis");
  axis.replaceChildren();
  const step = tickStep(span / 1000);
  for (let t = 0; t <= span / 1000 + 1e-9; t += step) {
    const tick = el("div", {class: "tick", "data-tick": t});
    tick.style.left = pct(first + t * 1000);
    tick.appendChild(el("span", {}, "+" + t + "s"));
    axis.appendChild(tick);
  }
  const critical = {};
  for (const p of s.criticalPath || []) (critical[p.entry] = critical[p.entry] || []).push(p);
  const chart = document.getElementById("chart");
  chart.replaceChildren();
  const byParty = {};
  for (const [key, e] of rows) {
    const party = key.split("/")[0];
    (byParty[party] = byParty[party] || []).push([key, e]);
  }
  for (const party of Object.keys(byParty).sort()) {
    const info = (s.parties || {})[party] || {};
    const head = el("div", {class: "row party", "data-party": party});
    head.appendChild(el("div", {class: "label"}, party + (info.startupSeconds !== undefined
        ? " \u00b7 ready after " + secs(info.startupSeconds)
        : " \u00b7 " + (info.readyEntries || 0) + "/" + (info.entries || 0) + " ready")));
    const headLane = el("div", {class: "lane"});
    if (info.readyTime) {
      const mark = el("div", {class: "readymark", "data-party-ready": party, title:
                              party + " ready at " + info.readyTime});
      mark.style.left = pct(ms(info.readyTime));
      headLane.appendChild(mark);
    }
    head.appendChild(headLane);
    chart.appendChild(head);
    for (const [key, e] of byParty[party]) {
      const row = el("div", {class: "row", "data-entry": key});
      if (e.partner) row.setAttribute("data-partner", "true");
      row.appendChild(el("div", {class: "label", title: e.partner
          ? key + ": the party's TaskResource (its pods are in its own cluster)" : key},
                         key + (e.partner ? " (reservation)" : "")));
      const lane = el("div", {class: "lane"});
      for (const p of e.phases || []) {
        const from = ms(p.from), to = p.to ? ms(p.to) : now;
        const seg = el("div", {class: "seg ph-" + p.phase + (p.to ? "" : " ongoing"),
                               "data-phase": p.phase,
                               title: p.phase + " " + (p.seconds === undefined ? "" : secs(p.seconds)) +
                                   (p.to ? "" : " so far") + (why(p) ? "\n" + why(p) : "") +
                                   "\n" + p.from + (p.to ? " \u2192 " + p.to : "")});
        seg.style.left = pct(from);
        seg.style.width = width(from, Math.max(to, from));
        lane.appendChild(seg);
      }
      for (const p of critical[key] || []) {
        const from = ms(p.from), to = ms(p.to);
        const box = el("div", {class: "crit", "data-critical": "true", "data-phase": p.phase});
        box.style.left = pct(Math.min(from, to));
        box.style.width = width(Math.min(from, to), Math.max(from, to));
        lane.appendChild(box);
      }
      row.appendChild(lane);
      chart.appendChild(row);
    }
  }
  drawTable(entries, critical);
}

function drawTable(entries, critical) {
  const table = document.getElementById("table");
  const head = el("tr");
  for (const h of ["entry", "kind", ...TIMES.map(f => TITLES[f]), "create\u2192ready",
                   "critical", "why (per phase)"])
    head.appendChild(el("th", {}, h));
  table.tHead.replaceChildren(head);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const [key, e] of entries) {
    const tr = el("tr", {"data-entry": key});
    tr.appendChild(el("td", {class: "key"}, key));
    tr.appendChild(el("td", {}, e.kind));
    for (const f of TIMES) {
      const has = Boolean(e.times[f]);
      // The time of day; the whole timestamp in the tooltip.
      const text = has ? e.times[f].slice(11, 19) : (e.missing.includes(f) ? "pending" : "");
      const attrs = {class: "time" + (has ? "" : " pending"), "data-field": f};
      if (has) attrs.title = e.times[f];
      tr.appendChild(el("td", attrs, text));
    }
    const d = e.durations.createToReady;
    const neg = e.negative.includes("createToReady");
    tr.appendChild(el("td", {class: neg ? "negative" : ""},
                      d === undefined ? "" : secs(d) + (neg ? " (clock skew)" : "")));
    tr.appendChild(el("td", {class: "critical"},
                      (critical[key] || []).map(p => p.phase).join(", ")));
    const reasons = [];
    for (const p of e.phases || [])
      if (why(p)) reasons.push(p.phase + (p.to ? "" : " (now)") + ": " + why(p));
    if (e.waiting && !reasons.length)
      reasons.push(e.waiting.phase + " (now): " + e.waiting.reason + ": " + e.waiting.message);
    const cell = el("td", {class: "reasons"});
    for (const r of reasons) cell.appendChild(el("div", {}, r));
    tr.appendChild(cell);
    body.appendChild(tr);
  }
}

// The view the location's hash names: "#<task>" (live), "#history", "#history/<task>",
// "#job/<job>".
function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  view = hash === "history" ? "history" : hash.startsWith("history/") ? "stored"
      : hash.startsWith("job/") ? "job" : "live";
  current = view === "stored" ? hash.slice(8) : view === "live" ? hash : "";
  currentJob = view === "job" ? hash.slice(4) : "";
  document.getElementById("historyView").hidden = view !== "history";
  document.getElementById("liveView").hidden = view === "history";
  document.getElementById("jobView").hidden = view !== "job";
  document.getElementById("taskView").hidden = view === "job";
  document.getElementById("liveLink").className = view === "live" ? "on" : "";
  document.getElementById("historyLink").className = view === "live" ? "" : "on";
  document.body.setAttribute("data-view", view);
}

function historyQuery() {
  const q = new URLSearchParams();
  for (const [k, v] of new FormData(document.getElementById("filters"))) if (v) q.set(k, v);
  return q;
}

async function loadHistory(more) {
  const error = document.getElementById("historyError");
  const body = document.getElementById("historyTable").tBodies[0];
  try {
    const q = historyQuery();
    q.set("limit", "100");
    if (more) q.set("continue", historyNext);
    const r = await fetch("/api/v1/history?" + q, {cache: "no-store"});
    if (r.status === 404) throw new Error("no history here: enable the task-history plugin");
    if (!r.ok) throw new Error("/api/v1/history: HTTP " + r.status);
    const page = await r.json();
    if (!more) body.replaceChildren();
    for (const it of page.items || []) {
      const s = it.summary || {};
      const tr = el("tr", {"data-history-task": it.task});
      tr.appendChild(el("td", {class: "key"}, it.task));
      tr.appendChild(el("td", {class: "time"}, it.createTime || ""));
      tr.appendChild(el("td", {}, it.phase || ""));
      tr.appendChild(el("td", {"data-startup-seconds": s.complete ? s.startupSeconds : ""},
                        s.complete ? secs(s.startupSeconds) : "not ready"));
      tr.appendChild(el("td", {}, s.lastParty || ""));
      tr.appendChild(el("td", {}, s.blame ? phaseText(s.blame) + (why(s.blame) ? " \u2014 " +
                                            why(s.blame) : "") : ""));
      const reason = (s.failure || s.stuck || {}).reason || "";
      tr.appendChild(el("td", {"data-reason": reason, title: (s.failure || s.stuck || {}).excerpt || ""},
                        whyShort(s)));
      tr.addEventListener("click", () => {
        location.hash = "history/" + encodeURIComponent(it.task);
      });
      body.appendChild(tr);
    }
    historyNext = page.continue || "";
    document.getElementById("older").hidden = !historyNext;
    if (!more) await drawHistoryChart(q.get("since"));
    error.textContent = "";
    document.body.setAttribute("data-history-loaded", "true");
  } catch (e) {
    error.textContent = String(e.message || e);
  }
}

// p50 and p99 of startup per day, a line per party, as inline SVG (no library: offline).
async function drawHistoryChart(since) {
  const stats = await getJson("/api/v1/history/stats?groupBy=day,party&since=" +
                              encodeURIComponent(since || "7d"));
  const svg = document.getElementById("historyChart");
  svg.replaceChildren();
  const ns = "http://www.w3.org/2000/svg";
  const node = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = String(text);
    return n;
  };
  const groups = (stats.groups || []).filter(g => g.startupSeconds);
  const days = [...new Set(groups.map(g => g.day))].sort();
  const parties = [...new Set(groups.map(g => g.party))].sort();
  if (!days.length) {
    svg.appendChild(node("text", {x: 60, y: 110}, "no complete task in this range"));
    return;
  }
  const top = Math.max(1, ...groups.map(g => g.startupSeconds.p99));
  const X0 = 50, X1 = 780, Y0 = 190, Y1 = 20;
  const x = d => days.length === 1 ? (X0 + X1) / 2 : X0 + (X1 - X0) * days.indexOf(d) / (days.length - 1);
  const y = v => Y0 - (Y0 - Y1) * v / top;
  svg.appendChild(node("line", {x1: X0, y1: Y0, x2: X1, y2: Y0, stroke: "#c9cfda"}));
  svg.appendChild(node("line", {x1: X0, y1: Y0, x2: X0, y2: Y1, stroke: "#c9cfda"}));
  svg.appendChild(node("text", {x: 4, y: Y1 + 4}, secs(top)));
  svg.appendChild(node("text", {x: 4, y: Y0}, "0 s"));
  svg.appendChild(node("text", {x: X0, y: 210}, days[0]));
  if (days.length > 1) svg.appendChild(node("text", {x: X1 - 70, y: 210}, days[days.length - 1]));
  const colours = ["#3d7bd9", "#d6336c", "#2b8a3e", "#b58be0", "#e0a526", "#556"];
  parties.forEach((party, i) => {
    const colour = colours[i % colours.length];
    for (const q of ["p50", "p99"]) {
      const points = groups.filter(g => g.party === party).sort((a, b) => a.day.localeCompare(b.day))
          .map(g => x(g.day).toFixed(1) + "," + y(g.startupSeconds[q]).toFixed(1));
      const line = node("polyline", {points: points.join(" "), fill: "none", stroke: colour,
                                     "stroke-width": 2, class: q, "data-series": party + "-" + q});
      line.appendChild(node("title", {}, party + " " + q));
      svg.appendChild(line);
      for (const pt of points) {
        const [cx, cy] = pt.split(",");
        svg.appendChild(node("circle", {cx, cy, r: 2.5, fill: colour}));
      }
    }
    svg.appendChild(node("text", {x: X1 - 60, y: Y1 + 14 * i, style: "fill: " + colour,
                                  "data-party": party}, party));
  });
}

// What came before the task in its KusciaJob (its document's "job"), linking to the job's view.
function drawJobContext(job) {
  const p = document.getElementById("jobContext");
  p.hidden = !job;
  p.replaceChildren();
  if (!job) return;
  p.append("Before it, in job ");
  p.appendChild(el("a", {href: "#job/" + encodeURIComponent(job.job)}, job.job));
  p.append(": ");
  const parts = [];
  if (job.approval) parts.push(approvalText(job.approval));
  parts.push(queuedText(job.queued || {}));
  p.append(parts.join(" \u00b7 "));
  p.setAttribute("data-job", job.job);
}

function approvalText(a) {
  let t = "approval " + (a.seconds === undefined ? "not observed" : secs(a.seconds));
  if (a.ongoing) t += " so far, awaiting " + (a.party || "?");
  else if (a.reason === "rejected") t += ", rejected by " + a.party;
  else if (a.party) t += ", " + a.party + " accepted last";
  return t + (a.observed ? " (observed)" : "");
}

function queuedText(q) {
  return "queued " + (q.seconds === undefined ? "?" : secs(q.seconds)) + (q.ongoing ? " so far" : "") +
      (q.reason ? " (" + q.reason + ")" : "");
}

// A job's view (/api/v1/jobs/<job>): its approval, each task's queue, startup and running time.
function drawJob(doc) {
  document.getElementById("jobTitle").textContent = "Job " + doc.job + " (" + (doc.phase || "new") +
      ") \u00b7 initiator " + doc.initiator;
  const overhead = document.getElementById("jobOverhead");
  overhead.textContent = "Startup overhead " + (doc.startupOverheadSeconds === undefined ? "?"
      : secs(doc.startupOverheadSeconds)) + " (no task running)";
  overhead.setAttribute("data-overhead-seconds", String(doc.startupOverheadSeconds));
  const approval = document.getElementById("jobApproval");
  approval.textContent = doc.approval ? approvalText(doc.approval)
      : "no approval awaited";
  approval.setAttribute("data-approval-party", doc.approval ? doc.approval.party || "" : "");
  if (doc.failure) approval.textContent += " \u00b7 failed: " + doc.failure.reason +
      (doc.failure.party ? " in " + doc.failure.party : "");
  const body = document.getElementById("jobTable").tBodies[0];
  body.replaceChildren();
  for (const t of doc.tasks || []) {
    const tr = el("tr", {"data-job-task": t.task});
    const q = t.queued || {};
    const outcome = t.failure ? "failed: " + t.failure.reason + (t.failure.party ? " in " + t.failure.party : "")
        : t.stuck ? "stuck: " + t.stuck.reason : t.allReadyTime ? "ready" +
          (t.blame ? "; blame " + t.blame.entry + " " + t.blame.phase : "")
        : t.phase === "NotCreated" ? "not created" : t.phase ? "starting" : "waiting";
    const cells = [t.task, q.after || (t.dependencies || []).join(", ") || "",
                   q.seconds === undefined ? "\u2014" : queuedText(q).slice(7),
                   t.startupSeconds === undefined ? "\u2014" : secs(t.startupSeconds),
                   t.overheadSeconds === undefined ? "\u2014" : secs(t.overheadSeconds),
                   t.runningSeconds === undefined ? "\u2014" : secs(t.runningSeconds), outcome];
    for (const c of cells) tr.appendChild(el("td", {}, c));
    tr.setAttribute("data-queued-seconds", String(q.seconds));
    tr.addEventListener("click", () => { location.hash = encodeURIComponent(t.task); });
    body.appendChild(tr);
  }
}

async function refresh() {
  const error = document.getElementById("error");
  if (view === "history") return; // loaded on arrival and on Show; nothing live to redraw
  try {
    if (view === "job") {
      if (!listHasMore || draws % 5 === 0) await loadTasks();
      drawJob(await getJson("/api/v1/jobs/" + encodeURIComponent(currentJob)));
      document.body.setAttribute("data-loaded", "true");
      document.body.setAttribute("data-draws", String(++draws));
      error.textContent = "";
      return;
    }
    if (view === "stored") {
      // A recorded task: drawn from the history, also after the task is gone.
      const doc = await getTask("/api/v1/history/" + encodeURIComponent(current), current, true);
      if (doc) drawTask(doc);
      document.body.setAttribute("data-loaded", "true");
      error.textContent = "";
      return;
    }
    // A long history's list costs the host a pass over every task: asked every fifth redraw.
    if (!listHasMore || draws % 5 === 0) await loadTasks();
    if (current) {
      const doc = await getTask("/api/v1/timelines/" + encodeURIComponent(current), current, false);
      if (doc) drawTask(doc);
    } else {
      document.getElementById("title").textContent = "No tasks yet";
    }
    error.textContent = "";
    document.body.setAttribute("data-loaded", "true");
    // Redrawn in place (no reload): the count and the states seen show the live updates.
    document.body.setAttribute("data-draws", String(++draws));
    const state = document.getElementById("summary").classList.contains("incomplete")
        ? "starting" : "complete";
    if (states[states.length - 1] !== state) states.push(state);
    document.body.setAttribute("data-states", states.join(","));
  } catch (e) {
    error.textContent = String(e.message || e);
  }
}

window.addEventListener("hashchange", () => {
  route();
  if (view === "history") loadHistory(false);
  refresh();
});
document.getElementById("filters").addEventListener("submit", ev => {
  ev.preventDefault();
  loadHistory(false);
});
document.getElementById("older").addEventListener("click", () => loadHistory(true));
route();
if (view === "history") loadHistory(false);
refresh();
setInterval(refresh, REFRESH_MS);
