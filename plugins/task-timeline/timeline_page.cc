#include "timeline_page.h"

namespace kuscia_host::plugins::timeline {

const char* timelinePageHtml() {
  return R"kh_html(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>kuscia-host: task timelines</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { background: #1d2330; color: #fff; padding: 10px 18px; }
  header h1 { font-size: 16px; margin: 0; font-weight: 600; }
  main { display: flex; gap: 16px; padding: 16px; }
  nav { width: 240px; flex: none; }
  nav ul { list-style: none; padding: 0; margin: 0; }
  nav li { padding: 6px 8px; border-radius: 4px; cursor: pointer; }
  nav li:hover, nav li.selected { background: #e3e8f1; }
  nav small { color: #667; display: block; }
  section { flex: 1; min-width: 0; background: #fff; border-radius: 6px; padding: 14px; }
  h2 { margin: 0 0 6px; font-size: 17px; }
  .summary { background: #f1f4f9; border-left: 4px solid #3d7bd9; padding: 8px 12px; margin: 8px 0; }
  .summary.incomplete { border-left-color: #e0a526; }
  .summary .big { font-size: 16px; font-weight: 600; }
  .summary .blame { margin-top: 2px; } .summary .why { color: #555; }
  .row { display: flex; align-items: center; height: 22px; }
  .row.party { height: 26px; margin-top: 6px; font-weight: 600; }
  .label { width: 300px; flex: none; font-family: monospace; font-size: 12px; overflow: hidden;
           text-overflow: ellipsis; white-space: nowrap; }
  .row.party .label { font-family: inherit; font-size: 13px; }
  .lane { position: relative; flex: 1; height: 14px; background: #eef0f4; border-radius: 3px; }
  .row.party .lane { background: none; border-bottom: 1px dashed #c9cfda; height: 10px; }
  .seg { position: absolute; top: 0; height: 14px; border-radius: 2px; min-width: 2px; }
  .ph-scheduling { background: #c3cde0; } .ph-accepting { background: #9db6de; }
  .ph-pulling { background: #b58be0; } .ph-starting { background: #6f9ee6; }
  .ph-readiness { background: #3d7bd9; } .ph-programming { background: #9bd08c; }
  .ph-creating { background: #e5e7ec; }
  .seg.ongoing { background-image: repeating-linear-gradient(45deg, transparent, transparent 4px,
    rgba(255,255,255,.6) 4px, rgba(255,255,255,.6) 8px); }
  .crit { position: absolute; top: -3px; height: 18px; border: 2px solid #d6336c;
          border-radius: 3px; box-sizing: border-box; pointer-events: none; }
  .readymark { position: absolute; top: -4px; width: 3px; height: 18px; background: #2b8a3e; }
  .axis { position: relative; height: 20px; margin-left: 300px; border-bottom: 1px solid #c9cfda;
          font-size: 11px; color: #556; }
  .tick { position: absolute; bottom: 0; border-left: 1px solid #c9cfda; height: 6px; }
  .tick span { position: absolute; bottom: 7px; left: -10px; white-space: nowrap; }
  .legend { font-size: 12px; margin: 6px 0; }
  .legend span { display: inline-block; width: 12px; height: 10px; margin: 0 4px 0 10px; }
  .legend .critkey { border: 2px solid #d6336c; background: none; }
  table { border-collapse: collapse; margin-top: 14px; font-size: 12px; width: 100%; }
  th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eef0f4; vertical-align: top; }
  td.time { font-family: monospace; white-space: nowrap; } td.key { white-space: nowrap; }
  .pending { color: #a06a00; } .negative { color: #c0392b; } .critical { color: #d6336c; }
  #error { color: #c0392b; }
</style>
</head>
<body>
<header><h1>kuscia-host &middot; task startup timelines</h1></header>
<main>
  <nav><ul id="tasks"></ul></nav>
  <section>
    <h2 id="title">Loading&hellip;</h2>
    <div id="summary" class="summary"><div id="startup" class="big"></div>
      <div id="blame" class="blame"></div><div id="parties" class="why"></div></div>
    <p id="error"></p>
    <div class="legend">
      <span class="ph-scheduling"></span>scheduling <span class="ph-accepting"></span>accepting
      <span class="ph-pulling"></span>pulling <span class="ph-starting"></span>starting
      <span class="ph-readiness"></span>readiness <span class="ph-programming"></span>programming
      <span class="critkey"></span>critical path <span class="readymark"></span>party ready
    </div>
    <div id="axis" class="axis"></div>
    <div id="chart"></div>
    <table id="table"><thead></thead><tbody></tbody></table>
  </section>
</main>
<script>
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
let current = decodeURIComponent(location.hash.slice(1));
let draws = 0;
let listHasMore = false; // the list was cut at LIST_LIMIT: a month of history is there
const states = []; // "starting" / "complete" of the task shown, as each redraw changed it

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = String(text);
  return e;
}

async function getJson(path) {
  const r = await fetch(path, {cache: "no-store"});
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
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
function why(p) {
  return p.reason ? p.reason + (p.message ? ": " + p.message : "") : "";
}
function phaseText(p) {
  return p.entry + " " + p.phase + " " + (p.seconds === undefined ? "" : secs(p.seconds)) +
      (p.ongoing ? " so far" : "");
}

function drawSummary(doc) {
  const s = doc.summary || {};
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
  document.getElementById("parties").textContent = parties.map(([name, p]) =>
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
  drawSummary(doc);
  const s = doc.summary || {};
  const entries = Object.entries(doc.entries || {});
  const now = Date.now();
  let first = ms(doc.createTime), last = -Infinity;
  for (const [, e] of entries)
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
  for (const [key, e] of entries) {
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
      row.appendChild(el("div", {class: "label", title: key}, key));
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

async function refresh() {
  const error = document.getElementById("error");
  try {
    // A long history's list costs the host a pass over every task: asked every fifth redraw.
    if (!listHasMore || draws % 5 === 0) await loadTasks();
    if (current) drawTask(await getJson("/api/v1/timelines/" + encodeURIComponent(current)));
    else document.getElementById("title").textContent = "No tasks yet";
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
  current = decodeURIComponent(location.hash.slice(1));
  refresh();
});
refresh();
setInterval(refresh, REFRESH_MS);
</script>
</body>
</html>
)kh_html";
}

} // namespace kuscia_host::plugins::timeline
