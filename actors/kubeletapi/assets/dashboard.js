// actorlet's live actor dashboard: snapshots arrive by Server-Sent Events and
// redraw the graph (graph.js), the actor table and the bootstrap steps; the
// selected actor's timeline is fetched every second. No dependencies,
// nothing from anywhere but this origin.
"use strict";

const TIMELINE_EVERY = 1000; // ms between two fetches of the selected timeline

const state = {
  snap: null,
  prevTime: 0,
  prevProcessed: new Map(), // path -> processed count
  prevEdges: new Map(),     // from|to|type -> count
  actorRate: new Map(),     // path -> msg/s
  edgeRate: new Map(),      // from|to|type -> msg/s
  selected: "",
  expanded: false,
  filter: "",
  lastTimeline: 0,
};

function matches(a) {
  return !state.filter || a.path.toLowerCase().includes(state.filter);
}

// rates turns successive counts into messages per second, smoothed a little.
function rates(snap) {
  const t = Date.parse(snap.time) / 1000;
  const dt = state.prevTime ? t - state.prevTime : 0;
  const smooth = (old, now) => (old === undefined ? now : 0.5 * old + 0.5 * now);
  const update = (rateOf, prev, key, count) => {
    if (dt > 0 && prev.has(key)) {
      rateOf.set(key, smooth(rateOf.get(key), Math.max(0, (count - prev.get(key)) / dt)));
    } else if (!rateOf.has(key)) {
      rateOf.set(key, 0);
    }
  };
  const procs = new Map(), edges = new Map();
  for (const a of snap.actors) {
    procs.set(a.path, a.processed);
    update(state.actorRate, state.prevProcessed, a.path, a.processed);
  }
  for (const p of state.actorRate.keys()) if (!procs.has(p)) state.actorRate.delete(p);
  for (const e of snap.edges) {
    const k = e.from + "|" + e.to + "|" + e.type;
    edges.set(k, e.count);
    update(state.edgeRate, state.prevEdges, k, e.count);
  }
  state.prevTime = t;
  state.prevProcessed = procs;
  state.prevEdges = edges;
}

function drawTable(snap) {
  const rows = [];
  for (const a of snap.actors) {
    if (!matches(a)) continue;
    const tr = h("tr", { "data-path": a.path, class: a.path === state.selected ? "sel" : "" });
    tr.appendChild(h("td", {}, a.path));
    tr.appendChild(h("td", { class: "word" }, a.kind));
    tr.appendChild(h("td", { class: "word" }, a.state || ""));
    tr.appendChild(h("td", { class: "num" }, String(a.mailboxDepth)));
    tr.appendChild(h("td", { class: "num" }, fmtRate(state.actorRate.get(a.path))));
    tr.appendChild(h("td", { class: "num" }, fmtDur(a.meanHandlingNanos)));
    tr.appendChild(h("td", { class: "num restarts" + (a.restarts ? " fail" : "") }, String(a.restarts)));
    const when = a.lastFailureAt ? ` (at ${new Date(a.lastFailureAt).toTimeString().slice(0, 8)})` : "";
    tr.appendChild(h("td", { class: "fail" }, a.lastFailure ? a.lastFailure + when : ""));
    tr.addEventListener("click", () => select(a.path));
    rows.push(tr);
  }
  $("actors").tBodies[0].replaceChildren(...rows);
  $("count").textContent = `(${rows.length}${state.filter ? " of " + snap.actors.length : ""})`;
}

function drawSteps(snap) {
  const rows = snap.steps.map((st) => {
    const tr = h("tr");
    tr.appendChild(h("td", {}, st.name));
    tr.appendChild(h("td", { class: "num" }, fmtDur(st.durationNanos)));
    tr.appendChild(h("td", { class: "fail" }, st.error || ""));
    return tr;
  });
  $("steps").tBodies[0].replaceChildren(...rows);
}

function select(path) {
  state.selected = path;
  state.lastTimeline = 0;
  render();
}

async function refreshTimeline() {
  const path = state.selected;
  $("tl-path").textContent = path;
  if (!path) return;
  const box = $("timeline");
  let records;
  try {
    const res = await fetch("actors/timeline?path=" + encodeURIComponent(path));
    if (res.status === 404) {
      box.replaceChildren(h("p", { class: "hint" }, "The actor is gone."));
      return;
    }
    if (!res.ok) throw new Error(res.status + " " + (await res.text()));
    records = await res.json();
  } catch (err) {
    box.replaceChildren(h("p", { class: "fail" }, "timeline: " + err.message));
    return;
  }
  if (path !== state.selected) return;
  const table = h("table");
  const head = h("tr");
  for (const c of ["at", "type", "sender", "summary"]) head.appendChild(h("th", {}, c));
  table.appendChild(h("thead")).appendChild(head);
  const tbody = h("tbody");
  for (const r of records.slice().reverse()) {
    const tr = h("tr");
    const at = new Date(r.at);
    tr.appendChild(h("td", { class: "at" }, at.toTimeString().slice(0, 8) + "." + String(at.getMilliseconds()).padStart(3, "0")));
    tr.appendChild(h("td", {}, r.type.replace(/^(messages|supervision)\./, "")));
    tr.appendChild(h("td", {}, r.sender));
    tr.appendChild(h("td", {}, r.summary));
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);
  $("tl-count").textContent = `(${records.length} messages, newest first)`;
  box.replaceChildren(records.length ? table : h("p", { class: "hint" }, "No messages yet."));
}

function render() {
  const snap = state.snap;
  if (!snap) return;
  drawGraph($("graph"), snap, {
    actorRate: state.actorRate,
    edgeRate: state.edgeRate,
    selected: state.selected,
    expanded: state.expanded,
    filter: state.filter,
    matches,
    onSelect: select,
    onToggle: () => {
      state.expanded = !state.expanded;
      $("expand").checked = state.expanded;
      render();
    },
  });
  drawTable(snap);
  drawSteps(snap);
  const now = Date.now();
  if (state.selected && now - state.lastTimeline >= TIMELINE_EVERY) {
    state.lastTimeline = now;
    refreshTimeline();
  }
}

function connect() {
  const status = $("status");
  const es = new EventSource("actors/events");
  es.onopen = () => { status.textContent = "live"; status.className = ""; };
  es.onerror = () => { status.textContent = "disconnected, retrying…"; status.className = "down"; };
  es.onmessage = (ev) => {
    const snap = JSON.parse(ev.data);
    rates(snap);
    state.snap = snap;
    status.textContent = "live · " + new Date(snap.time).toLocaleTimeString();
    render();
  };
}

document.addEventListener("DOMContentLoaded", () => {
  $("filter").addEventListener("input", (e) => { state.filter = e.target.value.trim().toLowerCase(); render(); });
  $("expand").addEventListener("change", (e) => { state.expanded = e.target.checked; render(); });
  connect();
});
