package report

import (
	"encoding/json"
	"html/template"
	"io"
)

// Write renders m as one self-contained HTML page: no network access,
// everything (data, style, script) inline. Script errors are written
// into the page's title and #errors, so a headless browser's dumped DOM
// shows them.
func Write(w io.Writer, m *Model) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return page.Execute(w, struct {
		Title string
		Data  template.JS
	}{m.Title, template.JS(data)})
}

var page = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>ibsm report (rendering)</title>
<script>
window.onerror = function (msg, src, line) {
  document.title = "ibsm report: SCRIPT ERROR: " + msg;
  var e = document.getElementById("errors");
  if (e) { e.textContent += "script error: " + msg + " (line " + line + ")\n"; }
};
</script>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 20px; margin: 0 0 4px; } h2 { font-size: 16px; margin: 18px 0 6px; }
.row { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
table { border-collapse: collapse; } td, th { padding: 2px 8px; text-align: left; border-bottom: 1px solid #eee; }
#fabric { border: 1px solid #ccc; background: #fafafa; }
.legend span { display: inline-block; width: 40px; height: 10px; }
#errors { color: #b00; white-space: pre; }
#tip { position: fixed; pointer-events: none; background: #222; color: #fff; padding: 3px 6px; font-size: 12px; border-radius: 3px; display: none; }
</style></head>
<body>
<h1 id="heading">{{.Title}}</h1>
<div id="summary"></div>
<div id="errors"></div>
<h2>Fabric <small id="layoutnote"></small></h2>
<div>Colour links by <select id="metric"><option value="load">all-to-all load</option><option value="worst">worst-shift load</option></select>
<span class="legend">low <span style="background:linear-gradient(90deg,#2a9d3a,#e9c400,#d62828)"></span> high</span> <span id="scale"></span></div>
<svg id="fabric" width="1200" height="640" xmlns="http://www.w3.org/2000/svg"></svg>
<div class="row">
<div><h2>Hop histogram (CA→CA pairs by switches crossed)</h2><svg id="hops" width="480" height="220"></svg></div>
<div><h2>VL and SL usage</h2><table id="vls"></table></div>
<div><h2>Hottest links</h2><table id="hot"></table></div>
</div>
<h2>Unreachable pairs</h2><div id="unreach"></div>
<div id="tip"></div>
<script>
"use strict";
var M = {{.Data}};
var NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function esc(s) { var d = document.createElement("div"); d.textContent = String(s); return d.innerHTML; }
// colour maps v/ideal: green up to half the ideal load, yellow at the
// ideal (N−1 routes all-to-all, 1 route per shift), red from twice it.
function colour(v, ideal) {
  var x = Math.min(1, ideal > 0 ? v / (2 * ideal) : 0), r, g;
  if (x < 0.5) { r = 42 + (233 - 42) * x * 2; g = 157 + (196 - 157) * x * 2; }
  else { r = 233 + (214 - 233) * (x - 0.5) * 2; g = 196 + (40 - 196) * (x - 0.5) * 2; }
  return "rgb(" + Math.round(r) + "," + Math.round(g) + ",40)";
}
function pct(p) { return p.total ? (100 * p.reachable / p.total).toFixed(3) + "% (" + p.reachable + " of " + p.total + ")" : "n/a"; }

function summary() {
  var s = "<table>" +
    "<tr><th>engine</th><td>" + esc(M.engine) + "</td></tr>" +
    "<tr><th>fabric</th><td>" + M.switches + " switches, " + M.cas + " CAs" + (M.aggregated ? " (aggregated: one box per group of like switches)" : "") + "</td></tr>" +
    "<tr><th>CA→CA reachable</th><td>" + pct(M.ca_pairs) + "</td></tr>" +
    "<tr><th>switch→switch reachable</th><td>" + pct(M.switch_pairs) + "</td></tr>" +
    "<tr><th>max all-to-all load</th><td>" + M.max_load + " routes (" + M.max_load_normalized.toFixed(3) + " normalised by N−1)</td></tr>" +
    "<tr><th>max worst-shift load</th><td>" + M.max_worst + " routes over " + M.shifts + " shifts</td></tr>" +
    "<tr><th>deadlock-free</th><td>" + (M.deadlock_free ? "yes" : "NO") + "</td></tr></table>";
  document.getElementById("summary").innerHTML = s;
}

function layout(W, H) {
  var pos = [], n = M.nodes.length;
  if (M.layout === "tiers") {
    var byTier = {}, maxTier = 0, minTier = 99;
    M.nodes.forEach(function (b) { (byTier[b.tier] = byTier[b.tier] || []).push(b); maxTier = Math.max(maxTier, b.tier); minTier = Math.min(minTier, b.tier); });
    for (var t in byTier) {
      var row = byTier[t], y = H - 30 - (H - 60) * (+t - minTier) / Math.max(1, maxTier - minTier);
      row.forEach(function (b, i) { pos[b.id] = [30 + (W - 60) * (i + 0.5) / row.length, y]; });
    }
    document.getElementById("layoutnote").textContent = "(fat tree by tier, leaves at tier 1" + (M.cas && M.nodes.some(function (b) { return b.kind === "ca"; }) ? ", CAs below" : "") + ")";
    return pos;
  }
  document.getElementById("layoutnote").textContent = "(force-directed)";
  // Deterministic start on a circle, then springs and repulsion.
  for (var i = 0; i < n; i++) { var a = 2 * Math.PI * i / n; pos[i] = [W / 2 + W / 3 * Math.cos(a), H / 2 + H / 3 * Math.sin(a)]; }
  var k = Math.sqrt(W * H / Math.max(1, n)) * 0.6, iters = n > 300 ? 120 : 300;
  for (var it = 0; it < iters; it++) {
    var d = pos.map(function () { return [0, 0]; }), temp = k * (1 - it / iters) + 1;
    for (var i = 0; i < n; i++) for (var j = i + 1; j < n; j++) {
      var dx = pos[i][0] - pos[j][0], dy = pos[i][1] - pos[j][1], dd = Math.max(0.01, Math.sqrt(dx * dx + dy * dy)), f = k * k / dd;
      d[i][0] += dx / dd * f; d[i][1] += dy / dd * f; d[j][0] -= dx / dd * f; d[j][1] -= dy / dd * f;
    }
    M.links.forEach(function (l) {
      var dx = pos[l.a][0] - pos[l.b][0], dy = pos[l.a][1] - pos[l.b][1], dd = Math.max(0.01, Math.sqrt(dx * dx + dy * dy)), f = dd * dd / k;
      d[l.a][0] -= dx / dd * f; d[l.a][1] -= dy / dd * f; d[l.b][0] += dx / dd * f; d[l.b][1] += dy / dd * f;
    });
    for (var i = 0; i < n; i++) {
      var m = Math.sqrt(d[i][0] * d[i][0] + d[i][1] * d[i][1]) || 1;
      pos[i][0] = Math.min(W - 20, Math.max(20, pos[i][0] + d[i][0] / m * Math.min(m, temp)));
      pos[i][1] = Math.min(H - 20, Math.max(20, pos[i][1] + d[i][1] / m * Math.min(m, temp)));
    }
  }
  return pos;
}

var tip = document.getElementById("tip");
function hover(e, text) {
  e.addEventListener("mousemove", function (ev) { tip.style.display = "block"; tip.style.left = (ev.clientX + 12) + "px"; tip.style.top = (ev.clientY + 12) + "px"; tip.textContent = text; });
  e.addEventListener("mouseleave", function () { tip.style.display = "none"; });
}

function draw() {
  var svg = document.getElementById("fabric"), W = +svg.getAttribute("width"), H = +svg.getAttribute("height");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  var metric = document.getElementById("metric").value, max = metric === "load" ? M.max_load : M.max_worst;
  var ideal = metric === "load" ? Math.max(1, M.cas - 1) : 1;
  document.getElementById("scale").textContent = "(yellow: " + ideal + " routes per channel, the least a full-bisection fabric needs; red: twice that or more; busiest: " + max + ")";
  var pos = layout(W, H);
  var wide = M.links.length > 3000 ? 0.6 : 1.6;
  M.links.forEach(function (l) {
    var v = l[metric], line = el("line", { x1: pos[l.a][0], y1: pos[l.a][1], x2: pos[l.b][0], y2: pos[l.b][1],
      stroke: colour(v, ideal), "stroke-width": wide * (l.links > 1 ? 1 + Math.log2(l.links) : 1), "stroke-opacity": 0.85 }, svg);
    hover(line, M.nodes[l.a].label + " — " + M.nodes[l.b].label + ": " + metric + " " + v + (l.links > 1 ? " (max over " + l.links + " links)" : ""));
  });
  M.nodes.forEach(function (b) {
    var p = pos[b.id], r = b.kind === "ca" ? 3 : b.kind === "group" ? 6 + Math.min(10, Math.sqrt(b.members)) : 5;
    var shape = b.kind === "ca" ? el("circle", { cx: p[0], cy: p[1], r: r, fill: "#457b9d" }, svg)
      : el("rect", { x: p[0] - r, y: p[1] - r, width: 2 * r, height: 2 * r, fill: b.kind === "group" ? "#6d597a" : "#1d3557" }, svg);
    hover(shape, b.label + (b.cas ? " (" + b.cas + " CAs)" : ""));
  });
}

function hops() {
  var svg = document.getElementById("hops"), W = 480, H = 220, h = M.hops || [], max = Math.max.apply(null, h.concat([1]));
  var bw = (W - 40) / Math.max(1, h.length);
  h.forEach(function (v, i) {
    var bh = (H - 40) * v / max;
    var r = el("rect", { x: 30 + i * bw, y: H - 20 - bh, width: Math.max(1, bw - 4), height: bh, fill: "#457b9d" }, svg);
    hover(r, i + " switches: " + v + " pairs");
    el("text", { x: 30 + i * bw + bw / 2 - 4, y: H - 5, "font-size": 11 }, svg).textContent = i;
  });
}

function vls() {
  var s = "<tr><th>VLs used</th><td>" + esc((M.vls_used || []).join(", ")) + "</td></tr>";
  (M.vls_used || []).forEach(function (v, i) { s += "<tr><td>VL" + v + "</td><td>" + (M.vl_channels[i] || 0) + " channels</td></tr>"; });
  s += "<tr><th>SLs used</th><td>" + esc((M.sls_used || []).join(", ")) + "</td></tr>";
  document.getElementById("vls").innerHTML = s;
  var hot = M.links.slice().sort(function (a, b) { return b.load - a.load; }).slice(0, 10), t = "<tr><th>link</th><th>load</th><th>worst shift</th></tr>";
  hot.forEach(function (l) { t += "<tr><td>" + esc(M.nodes[l.a].label) + " — " + esc(M.nodes[l.b].label) + "</td><td>" + l.load + "</td><td>" + l.worst + "</td></tr>"; });
  document.getElementById("hot").innerHTML = t;
  var u = M.unreachable || [];
  document.getElementById("unreach").innerHTML = u.length === 0 ? "none" :
    "<table><tr><th>source</th><th>destination</th><th>DLID</th><th>why</th></tr>" + u.map(function (x) {
      return "<tr><td>" + esc(x.src) + "</td><td>" + esc(x.dst) + "</td><td>" + x.dlid + "</td><td>" + esc(x.message) + "</td></tr>"; }).join("") + "</table>";
}

summary(); draw(); hops(); vls();
document.getElementById("metric").addEventListener("change", draw);
document.body.setAttribute("data-render-ms", performance.now().toFixed(0));
if (document.title.indexOf("ERROR") < 0) document.title = "ibsm report: rendered";
</script>
</body></html>
`))
