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
figure.fabric { margin: 8px 0; flex: 1 1 100%; max-width: 1200px; }
figure.half { flex: 1 1 560px; }
figcaption { font-weight: 600; }
svg.fabric { width: 100%; height: auto; border: 1px solid #ccc; background: #fafafa; }
.legend span { display: inline-block; width: 60px; height: 10px; }
td.diff { background: #fff3c4; font-weight: 600; } .bad { color: #b00; }
h3 { font-size: 14px; margin: 10px 0 4px; }
#errors { color: #b00; white-space: pre; }
#tip { position: fixed; pointer-events: none; background: #222; color: #fff; padding: 3px 6px; font-size: 12px; border-radius: 3px; display: none; }
</style></head>
<body>
<h1 id="heading">{{.Title}}</h1>
<div id="summary"></div>
<div id="errors"></div>
<h2>Fabric <small id="layoutnote"></small></h2>
<div>Colour links by <select id="metric"><option value="load">all-to-all load</option><option value="worst">worst-shift load</option></select>
<span class="legend">low <span id="ramp"></span> high</span> <span id="scale"></span></div>
<div class="row" id="fabrics"></div>
<div class="row">
<div><h2>Hop histogram (CA→CA pairs by switches crossed)</h2><svg id="hops" width="480" height="240"></svg></div>
<div><h2>VL and SL usage</h2><table id="vls"></table></div>
<div><h2>Hottest links</h2><table id="hot"></table></div>
</div>
<h2>Unreachable pairs</h2><div id="unreach"></div>
<div id="tip"></div>
<script>
"use strict";
var M = {{.Data}};
var NS = "http://www.w3.org/2000/svg";
var W = 1200, H = 640;
// Plan colours of the hop histogram's bars.
var PLAN_FILL = ["#457b9d", "#e76f51"];
function el(tag, attrs, parent) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function esc(s) { var d = document.createElement("div"); d.textContent = String(s); return d.innerHTML; }
function pct(p) { return p.total ? (100 * p.reachable / p.total).toFixed(3) + "% (" + p.reachable + " of " + p.total + ")" : "n/a"; }
function planName(p) { return p.name + " (" + p.metrics.engine + ")"; }

// One row per figure, one column per plan; a candidate cell that differs
// from the active plan's is marked.
function summary() {
  var rows = [
    ["engine", function (m) { return esc(m.engine); }],
    ["plan key", function (m) { return esc(m.key); }],
    ["CA→CA reachable", function (m) { return pct(m.ca_pairs); }],
    ["switch→switch reachable", function (m) { return pct(m.switch_pairs); }],
    ["max all-to-all load", function (m) { return m.max_load + " routes (" + m.max_load_normalized.toFixed(3) + " normalised by N−1)"; }],
    ["max worst-shift load", function (m) { return m.worst_shift + " routes over " + m.shifts + " shifts"; }],
    ["hops max / avg", function (m) { return m.max_hops + " / " + m.avg_hops.toFixed(2); }],
    ["deadlock-free", function (m) { return m.deadlock_free ? "yes" : "NO"; }],
    ["forwarding loops", function (m) { return m.loop_lids ? m.loop_lids + " LIDs" : "none"; }],
    ["LIDs used", function (m) { return m.lids_used; }],
    ["VLs used", function (m) { return esc((m.vls_used || []).join(", ")); }],
    ["SLs used", function (m) { return esc((m.sls_used || []).join(", ")); }]
  ];
  var s = "<table><tr><th>fabric</th><td colspan=" + M.plans.length + ">" + M.switches + " switches, " + M.cas + " CAs" +
    (M.aggregated ? " (aggregated: one box per group of like switches)" : "") + "</td></tr><tr><th></th>";
  M.plans.forEach(function (p) { s += "<th>" + esc(p.name) + " plan</th>"; });
  s += "</tr>";
  rows.forEach(function (r) {
    s += "<tr><th>" + r[0] + "</th>";
    M.plans.forEach(function (p, i) {
      var v = r[1](p.metrics), same = i === 0 || v === r[1](M.plans[0].metrics);
      s += "<td" + (same ? "" : " class=\"diff\"") + ">" + v + "</td>";
    });
    s += "</tr>";
  });
  s += "</table>";
  if (M.candidate_error) s += "<p class=\"bad\">candidate plan: " + esc(M.candidate_error) + "</p>";
  document.getElementById("summary").innerHTML = s;
}

function layout() {
  var pos = [], n = M.nodes.length;
  if (M.layout === "tiers") {
    var byTier = {}, maxTier = 0, minTier = 99;
    M.nodes.forEach(function (b) { (byTier[b.tier] = byTier[b.tier] || []).push(b); maxTier = Math.max(maxTier, b.tier); minTier = Math.min(minTier, b.tier); });
    for (var t in byTier) {
      var row = byTier[t], y = H - 30 - (H - 60) * (+t - minTier) / Math.max(1, maxTier - minTier);
      row.forEach(function (b, i) { pos[b.id] = [30 + (W - 60) * (i + 0.5) / row.length, y]; });
    }
    document.getElementById("layoutnote").textContent = "(fat tree by tier, leaves at tier 1" + (M.nodes.some(function (b) { return b.kind === "ca"; }) ? ", CAs below" : "") + ")";
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

// The layout is computed once: every plan is drawn on it, so a link sits
// at the same place in each drawing.
var POS = null;
function draw() {
  var metric = document.getElementById("metric").value, box = document.getElementById("fabrics");
  if (!POS) POS = layout();
  while (box.firstChild) box.removeChild(box.firstChild);
  var ideal = metric === "load" ? M.ideal_load : 1;
  document.getElementById("ramp").style.background = "linear-gradient(90deg," + M.scale.join(",") + ")";
  document.getElementById("scale").textContent = "(yellow: " + ideal + " routes per channel, the least a full-bisection fabric needs; red: twice that or more; busiest drawn link: " +
    M.plans.map(function (p) { return p.name + " " + (metric === "load" ? p.max_load : p.max_worst); }).join(", ") + ")";
  var wide = M.links.length > 3000 ? 0.6 : 1.6;
  M.plans.forEach(function (p) {
    var fig = document.createElement("figure");
    fig.className = "fabric" + (M.plans.length > 1 ? " half" : "");
    box.appendChild(fig);
    var cap = document.createElement("figcaption");
    cap.textContent = planName(p);
    fig.appendChild(cap);
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, "class": "fabric" }, fig);
    var values = p[metric], colours = p[metric + "_colour"];
    M.links.forEach(function (l, i) {
      var line = el("line", { x1: POS[l.a][0], y1: POS[l.a][1], x2: POS[l.b][0], y2: POS[l.b][1],
        stroke: colours[i], "stroke-width": wide * (l.links > 1 ? 1 + Math.log2(l.links) : 1), "stroke-opacity": 0.85 }, svg);
      hover(line, p.name + ": " + M.nodes[l.a].label + " — " + M.nodes[l.b].label + ": " + metric + " " + values[i] + (l.links > 1 ? " (max over " + l.links + " links)" : ""));
    });
    M.nodes.forEach(function (b) {
      var q = POS[b.id], r = b.kind === "ca" ? 3 : b.kind === "group" ? 6 + Math.min(10, Math.sqrt(b.members)) : 5;
      var shape = b.kind === "ca" ? el("circle", { cx: q[0], cy: q[1], r: r, fill: "#457b9d" }, svg)
        : el("rect", { x: q[0] - r, y: q[1] - r, width: 2 * r, height: 2 * r, fill: b.kind === "group" ? "#6d597a" : "#1d3557" }, svg);
      hover(shape, b.label + (b.cas ? " (" + b.cas + " CAs)" : ""));
    });
  });
}

// Grouped bars: one per plan at every hop count.
function hops() {
  var svg = document.getElementById("hops"), HW = 480, HH = 240, n = 0, max = 1;
  M.plans.forEach(function (p) { var h = p.hops || []; n = Math.max(n, h.length); h.forEach(function (v) { max = Math.max(max, v); }); });
  var bw = (HW - 40) / Math.max(1, n), pw = bw / M.plans.length;
  M.plans.forEach(function (p, k) {
    (p.hops || []).forEach(function (v, i) {
      var bh = (HH - 60) * v / max;
      var r = el("rect", { x: 30 + i * bw + k * pw, y: HH - 20 - bh, width: Math.max(1, pw - 3), height: bh, fill: PLAN_FILL[k % 2] }, svg);
      hover(r, p.name + ": " + i + " switches: " + v + " pairs");
    });
    if (M.plans.length > 1) {
      el("rect", { x: 40 + k * 160, y: 4, width: 10, height: 10, fill: PLAN_FILL[k % 2] }, svg);
      el("text", { x: 54 + k * 160, y: 13, "font-size": 11 }, svg).textContent = planName(p);
    }
  });
  for (var i = 0; i < n; i++) el("text", { x: 30 + i * bw + bw / 2 - 4, y: HH - 5, "font-size": 11 }, svg).textContent = i;
}

function vls() {
  var s = "<tr><th></th>" + M.plans.map(function (p) { return "<th>" + esc(p.name) + "</th>"; }).join("") + "</tr>", all = {};
  M.plans.forEach(function (p) { (p.metrics.vls_used || []).forEach(function (v) { all[v] = true; }); });
  Object.keys(all).map(Number).sort(function (a, b) { return a - b; }).forEach(function (v) {
    s += "<tr><td>VL" + v + "</td>" + M.plans.map(function (p) {
      var i = (p.metrics.vls_used || []).indexOf(v);
      return "<td>" + (i < 0 ? "unused" : (p.vl_channels[i] || 0) + " channels") + "</td>";
    }).join("") + "</tr>";
  });
  s += "<tr><th>SLs used</th>" + M.plans.map(function (p) { return "<td>" + esc((p.metrics.sls_used || []).join(", ")) + "</td>"; }).join("") + "</tr>";
  document.getElementById("vls").innerHTML = s;
  // The ten links with the highest all-to-all load in any plan.
  var idx = M.links.map(function (l, i) { return i; }), top = function (i) { return Math.max.apply(null, M.plans.map(function (p) { return p.load[i]; })); };
  idx.sort(function (a, b) { return top(b) - top(a); });
  var t = "<tr><th>link</th>" + M.plans.map(function (p) { return "<th>" + esc(p.name) + " load</th><th>worst shift</th>"; }).join("") + "</tr>";
  idx.slice(0, 10).forEach(function (i) {
    var l = M.links[i];
    t += "<tr><td>" + esc(M.nodes[l.a].label) + " — " + esc(M.nodes[l.b].label) + "</td>" +
      M.plans.map(function (p) { return "<td>" + p.load[i] + "</td><td>" + p.worst[i] + "</td>"; }).join("") + "</tr>";
  });
  document.getElementById("hot").innerHTML = t;
  var u = "";
  M.plans.forEach(function (p) {
    var x = p.unreachable || [], m = p.metrics;
    u += "<h3>" + esc(planName(p)) + "</h3>" + (x.length === 0 ? "none" :
      "<p>" + (m.ca_pairs.total - m.ca_pairs.reachable) + " CA pairs and " + (m.switch_pairs.total - m.switch_pairs.reachable) + " switch pairs; the first " + x.length + ":</p>" +
      "<table><tr><th>source</th><th>destination</th><th>DLID</th><th>why</th></tr>" + x.map(function (y) {
        return "<tr><td>" + esc(y.src) + "</td><td>" + esc(y.dst) + "</td><td>" + y.dlid + "</td><td>" + esc(y.message) + "</td></tr>"; }).join("") + "</table>");
  });
  document.getElementById("unreach").innerHTML = u;
}

summary(); draw(); hops(); vls();
document.getElementById("metric").addEventListener("change", draw);
document.body.setAttribute("data-render-ms", performance.now().toFixed(0));
if (document.title.indexOf("ERROR") < 0) document.title = "ibsm report: rendered";
</script>
</body></html>
`))
