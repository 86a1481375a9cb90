// Helpers shared by the dashboard's scripts: DOM building and formatting.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg"; // a namespace name, never fetched

const $ = (id) => document.getElementById(id);

// h makes an HTML element; s an SVG one.
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

function clip(t, n) {
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

// textWidth measures text in the given CSS font without touching the
// document, so that the graph can be laid out before it is drawn.
const textWidth = (() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const cache = new Map();
  return (text, font) => {
    const k = font + "\u0000" + text;
    let w = cache.get(k);
    if (w === undefined) {
      ctx.font = font;
      w = Math.ceil(ctx.measureText(text).width);
      if (cache.size > 5000) cache.clear();
      cache.set(k, w);
    }
    return w;
  };
})();
