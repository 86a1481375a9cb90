// actorlet live actor dashboard: no dependencies, everything from this origin.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg"; // a namespace name, never fetched
const WORKER = "pod-worker";
const EXTERNAL = "external";
const COL_W = 240, ROW_H = 46, NODE_W = 200, NODE_H = 36, MARGIN = 20;

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

const $ = (id) => document.getElementById(id);

function h(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function s(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function fmtDur(nanos) {
  if (!nanos) return "0";
  if (nanos < 1e3) return nanos + " ns";
  if (nanos < 1e6) return (nanos / 1e3).toFixed(1) + " µs";
  if (nanos < 1e9) return (nanos / 1e6).toFixed(1) + " ms";
  return (nanos / 1e9).toFixed(2) + " s";
}

function fmtRate(r) {
  if (!r) return "0";
  return r < 10 ? r.toFixed(1) : Math.round(r).toString();
}

function depthColour(d) {
  if (d >= 100) return "#ef9a9a";
  if (d >= 10) return "#ffcc80";
  if (d > 0) return "#fff59d";
  return "#c8e6c9";
}

function shortName(a) {
  const p = a.parent ? a.path.slice(a.parent.length + 1) : a.path;
  return p || a.path;
}

function matches(a) {
  return !state.filter || a.path.toLowerCase().includes(state.filter);
}

// rates turns successive counts into messages per second, smoothed a little.
function rates(snap) {
  const t = Date.parse(snap.time) / 1000;
  const dt = state.prevTime ? t - state.prevTime : 0;
  const smooth = (old, now) => (old === undefined ? now : 0.5 * old + 0.5 * now);
  const procs = new Map(), edges = new Map();
  for (const a of snap.actors) {
    procs.set(a.path, a.processed);
    if (dt > 0 && state.prevProcessed.has(a.path)) {
      const r = Math.max(0, (a.processed - state.prevProcessed.get(a.path)) / dt);
      state.actorRate.set(a.path, smooth(state.actorRate.get(a.path), r));
    } else if (!state.actorRate.has(a.path)) {
      state.actorRate.set(a.path, 0);
    }
  }
  for (const p of state.actorRate.keys()) if (!procs.has(p)) state.actorRate.delete(p);
  for (const e of snap.edges) {
    const k = e.from + "|" + e.to + "|" + e.type;
    edges.set(k, e.count);
    if (dt > 0 && state.prevEdges.has(k)) {
      const r = Math.max(0, (e.count - state.prevEdges.get(k)) / dt);
      state.edgeRate.set(k, smooth(state.edgeRate.get(k), r));
    } else if (!state.edgeRate.has(k)) {
      state.edgeRate.set(k, 0);
    }
  }
  state.prevTime = t;
  state.prevProcessed = procs;
  state.prevEdges = edges;
}

// buildTree returns the visible nodes: actors, with pod-workers grouped under
// one node per parent (expanded on demand), and "external" when it sends.
function buildTree(snap) {
  const byPath = new Map(snap.actors.map((a) => [a.path, a]));
  const nodes = new Map(); // id -> {id, label, sub, actor?, group?, children: []}
  const roots = [];
  const kindNode = new Map();
  for (const a of snap.actors) {
    if (a.kind === WORKER) continue;
    nodes.set(a.path, { id: a.path, actor: a, children: [] });
    if (!kindNode.has(a.kind)) kindNode.set(a.kind, a.path);
  }
  for (const a of snap.actors) {
    if (a.kind === WORKER) {
      const gid = "group:" + (a.parent || "");
      let g = nodes.get(gid);
      if (!g) {
        g = { id: gid, group: { total: 0, shown: 0, depth: 0, maxDepth: 0, restarts: 0, rate: 0, states: {} }, workers: [], children: [] };
        nodes.set(gid, g);
        const parent = nodes.get(a.parent);
        if (parent) parent.children.push(g); else roots.push(g);
        if (!kindNode.has(WORKER)) kindNode.set(WORKER, gid);
      }
      const gs = g.group;
      gs.total++;
      gs.depth += a.mailboxDepth;
      gs.maxDepth = Math.max(gs.maxDepth, a.mailboxDepth);
      gs.restarts += a.restarts;
      gs.rate += state.actorRate.get(a.path) || 0;
      const st = a.state || "?";
      gs.states[st] = (gs.states[st] || 0) + 1;
      if (matches(a)) {
        gs.shown++;
        if (state.expanded || state.filter) {
          const n = { id: a.path, actor: a, children: [] };
          nodes.set(a.path, n);
          g.children.push(n);
        }
      }
      continue;
    }
    const n = nodes.get(a.path);
    const parent = a.parent && byPath.has(a.parent) ? nodes.get(a.parent) : null;
    if (parent) parent.children.push(n); else roots.push(n);
  }
  if (snap.edges.some((e) => e.from === EXTERNAL)) {
    const ext = { id: EXTERNAL, external: true, children: [] };
    nodes.set(EXTERNAL, ext);
    roots.push(ext);
    kindNode.set(EXTERNAL, EXTERNAL);
  }
  return { nodes, roots, kindNode };
}

function layout(roots) {
  let nextRow = 0;
  const place = (n, depth) => {
    n.x = MARGIN + depth * COL_W;
    if (n.children.length === 0) {
      n.y = MARGIN + nextRow++ * ROW_H;
    } else {
      for (const c of n.children) place(c, depth + 1);
      n.y = (n.children[0].y + n.children[n.children.length - 1].y) / 2;
    }
  };
  for (const r of roots) place(r, 0);
  return nextRow;
}

function drawGraph(snap) {
  const svg = $("graph");
  const { nodes, roots, kindNode } = buildTree(snap);
  const rows = layout(roots);
  let maxX = 0;
  for (const n of nodes.values()) if (n.x !== undefined) maxX = Math.max(maxX, n.x);
  const width = maxX + NODE_W + 2 * MARGIN + 160, height = rows * ROW_H + 2 * MARGIN + 40;
  svg.replaceChildren();
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const defs = s("defs");
  const marker = s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 5, markerHeight: 5, orient: "auto-start-reverse" });
  marker.appendChild(s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#1e88e5" }));
  defs.appendChild(marker);
  svg.appendChild(defs);

  // Tree links.
  const treeLayer = s("g");
  for (const n of nodes.values()) {
    for (const c of n.children) {
      const x1 = n.x + NODE_W, y1 = n.y + NODE_H / 2, x2 = c.x, y2 = c.y + NODE_H / 2;
      treeLayer.appendChild(s("path", { class: "tree", d: `M${x1},${y1} C${x1 + 20},${y1} ${x2 - 20},${y2} ${x2},${y2}` }));
    }
  }
  svg.appendChild(treeLayer);

  // Message flows between kinds, one path per (from node, to node).
  const flows = new Map();
  for (const e of snap.edges) {
    const from = kindNode.get(e.from), to = kindNode.get(e.to);
    if (!from || !to || !nodes.get(from) || !nodes.get(to)) continue;
    const k = from + "\u0000" + to;
    if (!flows.has(k)) flows.set(k, { from: nodes.get(from), to: nodes.get(to), rate: 0, types: [] });
    const f = flows.get(k);
    const r = state.edgeRate.get(e.from + "|" + e.to + "|" + e.type) || 0;
    f.rate += r;
    f.types.push({ type: e.type.replace(/^messages\./, ""), rate: r, count: e.count });
  }
  const flowLayer = s("g");
  for (const f of flows.values()) {
    const a = f.from, b = f.to;
    let d, lx, ly;
    if (a === b) {
      const x = a.x + NODE_W, y = a.y;
      d = `M${x - 30},${y} C${x - 10},${y - 40} ${x + 40},${y - 10} ${x},${y + 10}`;
      lx = x + 10; ly = y - 24;
    } else {
      const forward = b.x > a.x;
      const x1 = forward ? a.x + NODE_W : a.x + NODE_W / 2, y1 = forward ? a.y + NODE_H / 2 : a.y + NODE_H;
      const x2 = forward ? b.x : b.x + NODE_W / 2, y2 = forward ? b.y + NODE_H / 2 : b.y + NODE_H;
      const bend = forward ? 0 : 60 + Math.abs(x1 - x2) / 6;
      const cx = (x1 + x2) / 2, cy = Math.max(y1, y2) + bend;
      d = forward ? `M${x1},${y1} C${cx},${y1} ${cx},${y2} ${x2},${y2}` : `M${x1},${y1} Q${cx},${cy} ${x2},${y2}`;
      lx = (x1 + x2) / 2; ly = forward ? (y1 + y2) / 2 - 4 : (y1 + y2) / 2 + bend / 2;
    }
    const w = 1 + Math.min(8, Math.log2(1 + f.rate) * 1.5);
    const p = s("path", { class: "flow" + (f.rate > 0 ? "" : " idle"), d, "stroke-width": w.toFixed(1), "marker-end": "url(#arrow)" });
    p.appendChild(s("title", {}, f.types.map((t) => `${t.type}: ${fmtRate(t.rate)}/s (${t.count} total)`).join("\n")));
    flowLayer.appendChild(p);
    f.types.sort((x, y) => y.rate - x.rate || y.count - x.count);
    const label = s("text", { class: "flow-label", x: lx, y: ly });
    const shown = f.types.slice(0, 3);
    shown.forEach((t, i) => label.appendChild(s("tspan", { x: lx, dy: i ? 11 : 0 }, `${t.type} ${fmtRate(t.rate)}/s`)));
    if (f.types.length > shown.length) label.appendChild(s("tspan", { x: lx, dy: 11 }, `+${f.types.length - shown.length} more`));
    flowLayer.appendChild(label);
  }
  svg.appendChild(flowLayer);

  // Nodes on top.
  const nodeLayer = s("g");
  for (const n of nodes.values()) {
    if (n.x === undefined) continue;
    let title, sub, depth, restarted, failure = "";
    if (n.actor) {
      const a = n.actor;
      title = a.kind === WORKER ? shortName(a) : a.path.split("/").pop();
      sub = [a.kind === WORKER ? "" : a.kind, a.state, `mbox ${a.mailboxDepth}`, `${fmtRate(state.actorRate.get(a.path))}/s`].filter(Boolean).join(" · ");
      depth = a.mailboxDepth;
      restarted = a.restarts > 0;
      failure = a.lastFailure ? `\nlast failure: ${a.lastFailure}` : "";
    } else if (n.group) {
      const g = n.group;
      const open = state.expanded || state.filter;
      title = `${open ? "▾" : "▸"} pod-workers (${state.filter ? g.shown + "/" : ""}${g.total})`;
      sub = [`mbox ${g.depth}`, `${fmtRate(g.rate)}/s`, ...Object.entries(g.states).map(([k, v]) => `${k} ${v}`)].join(" · ");
      depth = g.maxDepth;
      restarted = g.restarts > 0;
    } else {
      title = "external";
      sub = "signals, HTTP, watchers";
      depth = 0;
      restarted = false;
    }
    const cls = "node" + (restarted ? " restarted" : "") + (n.id === state.selected ? " sel" : "");
    const g = s("g", { class: cls, transform: `translate(${n.x},${n.y})` });
    g.appendChild(s("rect", { width: NODE_W, height: NODE_H, rx: 6, fill: n.external ? "#eceff1" : depthColour(depth) }));
    g.appendChild(s("text", { x: 6, y: 14, "font-weight": "bold" }, clip(title, 30)));
    g.appendChild(s("text", { x: 6, y: 29 }, clip(sub, 36)));
    g.appendChild(s("title", {}, (n.actor ? n.actor.path : title) + "\n" + sub + failure));
    g.addEventListener("click", () => {
      if (n.group) {
        state.expanded = !state.expanded;
        $("expand").checked = state.expanded;
        render();
      } else if (n.actor) {
        select(n.actor.path);
      }
    });
    nodeLayer.appendChild(g);
  }
  svg.appendChild(nodeLayer);
}

function clip(t, n) {
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

function drawTable(snap) {
  const body = $("actors").tBodies[0];
  const rows = [];
  let shown = 0;
  for (const a of snap.actors) {
    if (!matches(a)) continue;
    shown++;
    const tr = h("tr", a.path === state.selected ? { class: "sel" } : {});
    tr.appendChild(h("td", {}, a.path));
    tr.appendChild(h("td", {}, a.kind));
    tr.appendChild(h("td", {}, a.state || ""));
    tr.appendChild(h("td", { class: "num" }, String(a.mailboxDepth)));
    tr.appendChild(h("td", { class: "num" }, fmtRate(state.actorRate.get(a.path))));
    tr.appendChild(h("td", { class: "num" }, fmtDur(a.meanHandlingNanos)));
    tr.appendChild(h("td", { class: "num" + (a.restarts ? " fail" : "") }, String(a.restarts)));
    const when = a.lastFailureAt ? ` (${new Date(a.lastFailureAt).toLocaleTimeString()})` : "";
    tr.appendChild(h("td", { class: "fail" }, a.lastFailure ? a.lastFailure + when : ""));
    tr.addEventListener("click", () => select(a.path));
    rows.push(tr);
  }
  body.replaceChildren(...rows);
  $("count").textContent = `(${shown}${state.filter ? " of " + snap.actors.length : ""})`;
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
    tr.appendChild(h("td", {}, at.toLocaleTimeString() + "." + String(at.getMilliseconds()).padStart(3, "0")));
    tr.appendChild(h("td", {}, r.type.replace(/^messages\./, "")));
    tr.appendChild(h("td", {}, r.sender));
    tr.appendChild(h("td", {}, r.summary));
    tbody.appendChild(tr);
  }
  table.appendChild(tbody);
  box.replaceChildren(records.length ? table : h("p", { class: "hint" }, "No messages yet."));
}

function render() {
  const snap = state.snap;
  if (!snap) return;
  drawGraph(snap);
  drawTable(snap);
  drawSteps(snap);
  const now = Date.now();
  if (state.selected && now - state.lastTimeline >= 1000) {
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
