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
  .row { display: flex; align-items: center; height: 24px; }
  .label { width: 320px; flex: none; font-family: monospace; font-size: 12px; overflow: hidden;
           text-overflow: ellipsis; white-space: nowrap; }
  .lane { position: relative; flex: 1; height: 14px; background: #eef0f4; border-radius: 3px; }
  .seg { position: absolute; top: 0; height: 14px; border-radius: 2px; }
  .schedule { background: #b8c4d9; } .start { background: #7ea6e0; } .ready { background: #3d7bd9; }
  .service { background: #9bd08c; } .waiting { background: repeating-linear-gradient(45deg,
    #f3c96b, #f3c96b 4px, #f7dc9d 4px, #f7dc9d 8px); }
  .legend span { display: inline-block; width: 12px; height: 10px; margin: 0 4px 0 12px; }
  table { border-collapse: collapse; margin-top: 14px; font-size: 12px; width: 100%; }
  th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid #eef0f4; }
  td.time { font-family: monospace; white-space: nowrap; } td.key { white-space: nowrap; } .pending { color: #a06a00; } .negative { color: #c0392b; }
  #error { color: #c0392b; }
</style>
</head>
<body>
<header><h1>kuscia-host &middot; task startup timelines</h1></header>
<main>
  <nav><ul id="tasks"></ul></nav>
  <section>
    <h2 id="title">Loading&hellip;</h2>
    <p id="error"></p>
    <div class="legend">
      <span class="schedule"></span>created&rarr;scheduled <span class="start"></span>scheduled&rarr;started
      <span class="ready"></span>started&rarr;ready <span class="service"></span>service created&rarr;ready
      <span class="waiting"></span>still waiting
    </div>
    <div id="chart"></div>
    <table id="table"><thead></thead><tbody></tbody></table>
  </section>
</main>
<script>
"use strict";
const TIMES = ["createTime", "scheduleTime", "startTime", "readyTime"];
// readyTime is the latest Ready; the startup bars end at the first one when it is known.
const TABLE_TIMES = [...TIMES, "firstReadyTime"];
function barTimes(e) {
  return e.times.firstReadyTime ? {...e.times, readyTime: e.times.firstReadyTime} : e.times;
}
let current = decodeURIComponent(location.hash.slice(1));

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
  const list = await getJson("/api/v1/timelines");
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
  if (!current && names.length) current = names[0];
}

function ms(text) { return text ? Date.parse(text) : NaN; }

function drawTask(doc) {
  document.getElementById("title").textContent =
      doc.task + (doc.phase ? " (" + doc.phase + ")" : "") +
      (doc.createTime ? ", created " + doc.createTime : "");
  const entries = Object.entries(doc.entries || {});
  let first = Infinity, last = -Infinity;
  const now = Date.now();
  for (const [, e] of entries)
    for (const f of TIMES) {
      const t = ms(barTimes(e)[f]);
      if (!isNaN(t)) { first = Math.min(first, t); last = Math.max(last, t); }
    }
  if (entries.some(([, e]) => e.missing.length)) last = Math.max(last, now);
  const span = Math.max(1, last - first);
  const pct = t => ((t - first) / span * 100).toFixed(2) + "%";
  const chart = document.getElementById("chart");
  chart.replaceChildren();
  for (const [key, e] of entries) {
    const row = el("div", {class: "row", "data-entry": key});
    row.appendChild(el("div", {class: "label", title: key}, key));
    const lane = el("div", {class: "lane"});
    const marks = e.kind === "pod"
        ? [["createTime", "schedule"], ["scheduleTime", "start"], ["startTime", "ready"]]
        : [["createTime", "service"]];
    const times = barTimes(e);
    const known = TIMES.filter(f => times[f]).map(f => [f, ms(times[f])]);
    for (const [from, cls] of marks) {
      const start = ms(times[from]);
      if (isNaN(start)) continue;
      const next = known.find(([f, t]) => TIMES.indexOf(f) > TIMES.indexOf(from) && t >= start);
      const end = next ? next[1] : now;
      const seg = el("div", {class: "seg " + (next ? cls : "waiting")});
      seg.style.left = pct(start);
      seg.style.width = "calc(" + pct(end) + " - " + pct(start) + " + 2px)";
      seg.title = key + "\n" + TIMES.filter(f => e.times[f]).map(f => f + ": " + e.times[f])
          .join("\n") + (e.waiting ? "\nwaiting: " + e.waiting.reason : "");
      lane.appendChild(seg);
    }
    row.appendChild(lane);
    chart.appendChild(row);
  }
  const table = document.getElementById("table");
  const head = el("tr");
  for (const h of ["entry", "kind", ...TABLE_TIMES, "create\u2192start", "start\u2192ready",
                   "create\u2192ready", "waiting"])
    head.appendChild(el("th", {}, h));
  table.tHead.replaceChildren(head);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const [key, e] of entries) {
    const tr = el("tr", {"data-entry": key});
    tr.appendChild(el("td", {class: "key"}, key));
    tr.appendChild(el("td", {}, e.kind));
    for (const f of TABLE_TIMES) {
      const has = Boolean(e.times[f]);
      // The time of day; the whole timestamp in the tooltip.
      const text = has ? e.times[f].slice(11, 19) : (e.missing.includes(f) ? "pending" : "");
      const attrs = {class: "time" + (has ? "" : " pending"), "data-field": f};
      if (has) attrs.title = e.times[f];
      tr.appendChild(el("td", attrs, text));
    }
    for (const d of ["createToStart", "startToReady", "createToReady"]) {
      const v = e.durations[d];
      const neg = e.negative.includes(d);
      tr.appendChild(el("td", {class: neg ? "negative" : ""},
                        v === undefined ? "" : v.toFixed(1) + "s" + (neg ? " (clock skew)" : "")));
    }
    tr.appendChild(el("td", {}, e.waiting ? e.waiting.reason + ": " + e.waiting.message : ""));
    body.appendChild(tr);
  }
}

async function refresh() {
  const error = document.getElementById("error");
  try {
    await loadTasks();
    if (current) drawTask(await getJson("/api/v1/timelines/" + encodeURIComponent(current)));
    else document.getElementById("title").textContent = "No tasks yet";
    error.textContent = "";
    document.body.setAttribute("data-loaded", "true");
  } catch (e) {
    error.textContent = String(e.message || e);
  }
}

window.addEventListener("hashchange", () => {
  current = decodeURIComponent(location.hash.slice(1));
  refresh();
});
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
)kh_html";
}

} // namespace kuscia_host::plugins::timeline
