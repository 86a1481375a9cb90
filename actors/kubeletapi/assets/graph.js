// The actor graph: the supervision tree laid out in columns, left to right,
// and the message flows between actor kinds drawn over it as labelled arrows.
//
// Readable labels are the point of the layout. Every flow's label sits in the
// gap beside the node it goes to, in a box that never overlaps a node or
// another label (labels that would collide are moved apart vertically), and
// the arrow runs under its label before it reaches the node, so that which
// label belongs to which arrow is never in doubt. The gaps between columns
// are as wide as their widest label.
"use strict";

const WORKER = "pod-worker";
const EXTERNAL = "external";
const NODE_W = 200, NODE_H = 50, ROW_GAP = 12, MARGIN = 16;
const MIN_GAP = 48;   // between two columns without labels: room for the tree links
const ARROW = 14;     // between a label and the node its arrow enters
const CURVE = 22;     // beyond a label's far end, where its arrow turns in
const LINE_H = 12, LABEL_PAD = 3;
const LABEL_LINES = 3; // message types named on one label; the rest are counted
const TITLE_FONT = "bold 11px system-ui, sans-serif";
const TEXT_FONT = "11px system-ui, sans-serif";
const LABEL_FONT = "10px system-ui, sans-serif";

// Runtime actors top to bottom in the order messages mostly flow: the pod
// sources and the PLEG feed the pod-manager, which feeds the status-reporter.
const KIND_ORDER = ["config-source", "pleg", "pod-manager", "volume-manager", "plugin-manager", "status-reporter", "gc", "eviction", "node-shutdown", "kubelet-api"];

// Gap widths only grow while the page is open, so that the graph does not
// jump sideways whenever a label's rate gains or loses a digit.
const gapWidths = [];

function kindRank(n) {
  const k = n.actor ? n.actor.kind : n.group ? WORKER : EXTERNAL;
  const i = KIND_ORDER.indexOf(k);
  return i < 0 ? KIND_ORDER.length : i;
}

function clipTo(text, font, width) {
  if (textWidth(text, font) <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (textWidth(text.slice(0, mid) + "…", font) <= width) lo = mid; else hi = mid - 1;
  }
  return text.slice(0, lo) + "…";
}

// buildTree returns the visible nodes: actors, with the pod-workers of each
// parent grouped under one node (each worker shown too when expanded or
// matching the filter), and "external" when something outside the tree sends.
function buildTree(snap, view) {
  const nodes = new Map(); // id -> {id, actor | group | external, children}
  const kindNode = new Map(); // actor kind -> id of the node its flows attach to
  for (const a of snap.actors) {
    if (a.kind === WORKER) continue;
    nodes.set(a.path, { id: a.path, actor: a, children: [] });
    if (!kindNode.has(a.kind)) kindNode.set(a.kind, a.path);
  }
  const roots = [];
  for (const a of snap.actors) {
    if (a.kind !== WORKER) {
      const parent = a.parent && nodes.get(a.parent);
      (parent ? parent.children : roots).push(nodes.get(a.path));
      continue;
    }
    const gid = "group:" + (a.parent || "");
    let g = nodes.get(gid);
    if (!g) {
      g = { id: gid, group: { parent: a.parent, total: 0, shown: 0, depth: 0, maxDepth: 0, restarts: 0, rate: 0, states: {} }, children: [] };
      nodes.set(gid, g);
      const parent = a.parent && nodes.get(a.parent);
      (parent ? parent.children : roots).push(g);
      if (!kindNode.has(WORKER)) kindNode.set(WORKER, gid);
    }
    const gs = g.group;
    gs.total++;
    gs.depth += a.mailboxDepth;
    gs.maxDepth = Math.max(gs.maxDepth, a.mailboxDepth);
    gs.restarts += a.restarts;
    gs.rate += view.actorRate.get(a.path) || 0;
    const st = a.state || "?";
    gs.states[st] = (gs.states[st] || 0) + 1;
    if (view.matches(a)) {
      gs.shown++;
      if (view.expanded || view.filter) {
        const n = { id: a.path, actor: a, children: [] };
        nodes.set(a.path, n);
        g.children.push(n);
      }
    }
  }
  for (const n of nodes.values()) {
    if (!n.group) n.children.sort((x, y) => kindRank(x) - kindRank(y) || (x.id < y.id ? -1 : 1));
  }
  if (snap.edges.some((e) => e.from === EXTERNAL)) {
    const ext = { id: EXTERNAL, external: true, children: [] };
    nodes.set(EXTERNAL, ext);
    roots.push(ext);
    kindNode.set(EXTERNAL, EXTERNAL);
  }
  return { nodes, roots, kindNode };
}

// placeRows gives every node its column (depth) and top: a node is never
// above its parent, and each column stacks its nodes in tree order, so that
// a long list of workers grows down its own column without pushing the
// runtime actors apart.
function placeRows(roots) {
  const nextY = [];
  let cols = 0;
  const place = (n, col, minY) => {
    n.col = col;
    n.y = Math.max(nextY[col] || MARGIN, minY);
    nextY[col] = n.y + NODE_H + ROW_GAP;
    cols = Math.max(cols, col + 1);
    for (const c of n.children) place(c, col + 1, n.y);
  };
  for (const r of roots) place(r, 0, MARGIN);
  return cols;
}

// collectFlows aggregates the edges of the snapshot into one flow per
// (from node, to node), with the label's lines, busiest type first.
function collectFlows(snap, nodes, kindNode, view) {
  const flows = new Map();
  for (const e of snap.edges) {
    const from = nodes.get(kindNode.get(e.from)), to = nodes.get(kindNode.get(e.to));
    if (!from || !to) continue;
    const k = from.id + "\u0000" + to.id;
    if (!flows.has(k)) flows.set(k, { from, to, kinds: `${e.from} → ${e.to}`, rate: 0, count: 0, types: [] });
    const f = flows.get(k);
    const r = view.edgeRate.get(e.from + "|" + e.to + "|" + e.type) || 0;
    f.rate += r;
    f.count += e.count;
    f.types.push({ type: e.type.replace(/^(messages|supervision)\./, ""), rate: r, count: e.count });
  }
  for (const f of flows.values()) {
    f.types.sort((x, y) => y.rate - x.rate || y.count - x.count || (x.type < y.type ? -1 : 1));
    const shown = f.types.length > LABEL_LINES + 1 ? LABEL_LINES : f.types.length;
    f.lines = f.types.slice(0, shown).map((t) => `${t.type} ${fmtRate(t.rate)}/s`);
    if (f.types.length > shown) f.lines.push(`+${f.types.length - shown} more`);
    f.w = Math.max(...f.lines.map((l) => textWidth(l, LABEL_FONT))) + 2 * LABEL_PAD;
    f.h = f.lines.length * LINE_H + 2 * LABEL_PAD;
    // A label goes in the gap beside its target: left of it when the flow
    // comes from a column further left, right of it otherwise (a sibling,
    // a child, or the actor itself).
    if (f.from.col < f.to.col) {
      f.gap = f.to.col;
      f.side = "left";
    } else {
      f.gap = f.to.col + 1;
      f.side = "right";
    }
  }
  return [...flows.values()];
}

function columnXs(cols, flows) {
  const need = [];
  for (const f of flows) need[f.gap] = Math.max(need[f.gap] || 0, f.w + ARROW + CURVE);
  const xs = [MARGIN];
  for (let c = 1; c <= cols; c++) {
    const want = Math.max(MIN_GAP, Math.ceil((need[c] || 0) / 10) * 10);
    gapWidths[c] = Math.max(gapWidths[c] || 0, want);
    xs[c] = xs[c - 1] + NODE_W + gapWidths[c];
  }
  return xs;
}

function overlaps(a, b, margin) {
  return a.x1 < b.x2 + margin && b.x1 < a.x2 + margin && a.y1 < b.y2 + margin && b.y1 < a.y2 + margin;
}

// placeLabels puts every flow's label box next to its target's middle, or
// as near to it as the labels already placed and the nodes allow. Busier
// flows are placed first, so they keep the best places.
function placeLabels(flows, nodes) {
  const obstacles = [];
  for (const n of nodes.values()) obstacles.push({ x1: n.x, x2: n.x + NODE_W, y1: n.y, y2: n.y + NODE_H });
  const order = flows.slice().sort((a, b) => b.rate - a.rate || b.count - a.count);
  for (const f of order) {
    const t = f.to;
    const x1 = f.side === "left" ? t.x - ARROW - f.w : t.x + NODE_W + ARROW;
    const want = t.y + NODE_H / 2 - f.h / 2;
    for (let i = 0; ; i++) {
      // 0, +3, -3, +6, -6, ...: the nearest free place, either way.
      const dy = (i % 2 ? 1 : -1) * Math.ceil(i / 2) * 3;
      const box = { x1, x2: x1 + f.w, y1: want + dy, y2: want + dy + f.h };
      if (box.y1 < 2) continue;
      // Some place is always free below everything; the bound only guards
      // against a bug turning into a frozen page.
      if (i > 4000 || !obstacles.some((o) => overlaps(box, o, 2))) {
        f.box = box;
        obstacles.push(box);
        break;
      }
    }
  }
}

// routeFlows draws each flow from its source, around to the far end of its
// label, along the label's underline and into its target.
function routeFlows(flows) {
  const ports = new Map(); // node id + side -> flows leaving there
  for (const f of flows) {
    const b = f.box;
    f.uy = b.y2;
    f.nearX = f.side === "left" ? b.x2 : b.x1;
    f.farX = f.side === "left" ? b.x1 : b.x2;
    const from = f.from;
    // Out towards the label: left only when the label lies left of the
    // source; an actor's messages to itself loop out of its right side.
    f.outSide = from !== f.to && f.farX <= from.x ? "left" : "right";
    const k = from.id + "|" + f.outSide;
    if (!ports.has(k)) ports.set(k, []);
    ports.get(k).push(f);
  }
  for (const list of ports.values()) {
    list.sort((a, b) => a.uy - b.uy);
    list.forEach((f, i) => {
      const n = f.from;
      f.sx = f.outSide === "right" ? n.x + NODE_W : n.x;
      f.sy = n.y + (NODE_H * (i + 1)) / (list.length + 1);
    });
  }
  for (const f of flows) {
    const t = f.to;
    const tx = f.side === "left" ? t.x : t.x + NODE_W;
    const ty = Math.min(Math.max(f.uy, t.y + 8), t.y + NODE_H - 8);
    const { sx, sy, farX, nearX, uy } = f;
    const bend = Math.max(CURVE, Math.abs(farX - sx) / 2) * (farX >= sx ? 1 : -1);
    const mid = (nearX + tx) / 2;
    f.d = `M${sx},${sy} C${sx + bend},${sy} ${farX - bend},${uy} ${farX},${uy} L${nearX},${uy} C${mid},${uy} ${mid},${ty} ${tx},${ty}`;
  }
}

function nodeText(n, view) {
  if (n.external) return { title: "external", lines: ["signals, HTTP, watchers"], depth: 0, restarts: 0 };
  if (n.group) {
    const g = n.group, open = view.expanded || view.filter;
    const states = Object.entries(g.states).sort().map(([k, v]) => `${k} ${v}`).join(" · ");
    return {
      title: `${open ? "▾" : "▸"} pod-workers (${view.filter ? g.shown + "/" : ""}${g.total})`,
      lines: [states, `mbox ${g.depth} · ${fmtRate(g.rate)}/s`],
      depth: g.maxDepth, restarts: g.restarts,
    };
  }
  const a = n.actor;
  const stats = `mbox ${a.mailboxDepth} · ${fmtRate(view.actorRate.get(a.path))}/s · ${fmtDur(a.meanHandlingNanos)}`;
  let title = a.path.split("/").pop(), about = "";
  if (a.kind === WORKER) {
    // namespace/name@uid: the name on top, where clipping it hides least.
    const id = a.path.slice((a.parent || "").length + 1), at = id.lastIndexOf("@");
    title = at > 0 ? id.slice(0, at) : id;
    about = [at > 0 ? id.slice(at) : "", a.state].filter(Boolean).join(" · ");
  } else {
    about = [a.kind === title ? "" : a.kind, a.state].filter(Boolean).join(" · ");
  }
  return {
    title,
    lines: [about, stats],
    depth: a.mailboxDepth, restarts: a.restarts, failure: a.lastFailure,
  };
}

function depthColour(d) {
  if (d >= 100) return "#ef9a9a";
  if (d >= 10) return "#ffcc80";
  if (d > 0) return "#fff59d";
  return "#c8e6c9";
}

function drawNode(n, view) {
  const t = nodeText(n, view);
  const cls = "node" + (t.restarts > 0 ? " restarted" : "") + (n.id === view.selected ? " sel" : "");
  const attrs = { class: cls, transform: `translate(${n.x},${n.y})`, "data-path": n.id, "data-restarts": t.restarts };
  if (n.actor) {
    attrs["data-kind"] = n.actor.kind;
    if (n.actor.state) attrs["data-state"] = n.actor.state;
  } else {
    attrs["data-kind"] = n.group ? "pod-workers" : EXTERNAL;
  }
  const g = s("g", attrs);
  g.appendChild(s("rect", { width: NODE_W, height: NODE_H, rx: 6, fill: n.external ? "#eceff1" : depthColour(t.depth) }));
  let titleW = NODE_W - 12;
  if (t.restarts > 0) {
    const badge = `↻${t.restarts}`;
    const bw = textWidth(badge, TITLE_FONT);
    g.appendChild(s("text", { class: "restarts", x: NODE_W - 6 - bw, y: 15 }, badge));
    titleW -= bw + 6;
  }
  g.appendChild(s("text", { class: "title", x: 6, y: 15 }, clipTo(t.title, TITLE_FONT, titleW)));
  t.lines.filter(Boolean).forEach((l, i) => g.appendChild(s("text", { x: 6, y: 29 + 13 * i }, clipTo(l, TEXT_FONT, NODE_W - 12))));
  const tip = [n.actor ? n.actor.path : t.title, ...t.lines.filter(Boolean)];
  if (t.restarts) tip.push(`restarts: ${t.restarts}`);
  if (t.failure) tip.push(`last failure: ${t.failure}`);
  g.appendChild(s("title", {}, tip.join("\n")));
  g.addEventListener("click", () => {
    if (n.group) view.onToggle();
    else if (n.actor) view.onSelect(n.actor.path);
  });
  return g;
}

// drawGraph replaces the content of svg with the graph of snap.
function drawGraph(svg, snap, view) {
  const { nodes, roots, kindNode } = buildTree(snap, view);
  const cols = placeRows(roots);
  const flows = collectFlows(snap, nodes, kindNode, view);
  const xs = columnXs(cols, flows);
  for (const n of nodes.values()) n.x = xs[n.col];
  placeLabels(flows, nodes);
  routeFlows(flows);

  let width = cols ? xs[cols - 1] + NODE_W : 0, height = 0;
  for (const n of nodes.values()) height = Math.max(height, n.y + NODE_H);
  for (const f of flows) {
    width = Math.max(width, f.box.x2 + CURVE);
    height = Math.max(height, f.box.y2);
  }
  width += MARGIN;
  height += MARGIN;
  svg.replaceChildren();
  svg.setAttribute("width", width);
  svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);

  const defs = s("defs");
  for (const [id, colour] of [["arrow", "#1e88e5"], ["arrow-idle", "#90a4ae"]]) {
    const m = s("marker", { id, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto" });
    m.appendChild(s("path", { d: "M0,0 L10,5 L0,10 z", fill: colour }));
    defs.appendChild(m);
  }
  svg.appendChild(defs);

  // Tree links are elbows that share one vertical bus per parent, just left
  // of the children's column: a hundred workers make one line, not a fan.
  const tree = s("g", { class: "tree-links" });
  for (const n of nodes.values()) {
    if (!n.children.length) continue;
    const x1 = n.x + NODE_W, y1 = n.y + NODE_H / 2, bus = n.children[0].x - ARROW / 2;
    const d = [`M${x1},${y1} H${bus}`];
    for (const c of n.children) d.push(`M${bus},${y1} V${c.y + NODE_H / 2} H${c.x}`);
    tree.appendChild(s("path", { class: "tree", d: d.join(" ") }));
  }
  svg.appendChild(tree);

  const edges = s("g", { class: "flows" }), labels = s("g", { class: "flow-labels" });
  for (const f of flows) {
    const active = f.rate > 0;
    const tip = `${f.kinds}\n` + f.types.map((t) => `${t.type}: ${fmtRate(t.rate)}/s (${t.count} in all)`).join("\n");
    const stroke = 1 + Math.min(3.5, 0.8 * Math.log2(1 + f.rate));
    const p = s("path", {
      class: "flow" + (active ? "" : " idle"), d: f.d, "stroke-width": stroke.toFixed(1),
      "marker-end": `url(#${active ? "arrow" : "arrow-idle"})`, "data-from": f.from.id, "data-to": f.to.id,
    });
    p.appendChild(s("title", {}, tip));
    edges.appendChild(p);
    const b = f.box;
    const lg = s("g", { class: "flow-label" + (active ? "" : " idle"), "data-from": f.from.id, "data-to": f.to.id });
    lg.appendChild(s("rect", { x: b.x1, y: b.y1, width: f.w, height: f.h, rx: 2 }));
    f.lines.forEach((l, i) => lg.appendChild(s("text", { x: b.x1 + LABEL_PAD, y: b.y1 + LABEL_PAD + LINE_H * (i + 1) - 3 }, l)));
    lg.appendChild(s("title", {}, tip));
    labels.appendChild(lg);
  }
  svg.appendChild(edges);
  svg.appendChild(labels);

  const nodeLayer = s("g", { class: "nodes" });
  for (const n of nodes.values()) nodeLayer.appendChild(drawNode(n, view));
  svg.appendChild(nodeLayer);
}
