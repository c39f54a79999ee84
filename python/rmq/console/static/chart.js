/* rmq console: a line chart drawn as plain SVG (no chart library: the page works offline).
 * drawChart(svg, series) with series = [{name, color, points: [[timeMs, value], ...]}]. */
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function drawChart(svg, series) {
  const width = Number(svg.getAttribute("width")), height = Number(svg.getAttribute("height"));
  const pad = { left: 48, right: 10, top: 10, bottom: 22 };
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) {
    const t = svgEl("text", { x: width / 2, y: height / 2, "text-anchor": "middle", fill: "#8a93a6" });
    t.textContent = "waiting for data";
    svg.appendChild(t);
    return;
  }
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]));
  const top = Math.max(1, ...all.map((p) => p[1])) * 1.1;
  const x = (t) => pad.left + (t1 === t0 ? 0 : ((t - t0) / (t1 - t0)) * (width - pad.left - pad.right));
  const y = (v) => height - pad.bottom - (v / top) * (height - pad.top - pad.bottom);
  for (let i = 0; i <= 4; i++) {
    const v = (top / 4) * i;
    svg.appendChild(svgEl("line", { x1: pad.left, x2: width - pad.right, y1: y(v), y2: y(v), stroke: "#eef1f6" }));
    const label = svgEl("text", { x: pad.left - 4, y: y(v) + 4, "text-anchor": "end", "font-size": 10, fill: "#8a93a6" });
    label.textContent = v >= 100 ? v.toFixed(0) : v.toFixed(1);
    svg.appendChild(label);
  }
  const span = svgEl("text", { x: width - pad.right, y: height - 6, "text-anchor": "end", "font-size": 10, fill: "#8a93a6" });
  span.textContent = `last ${Math.round((t1 - t0) / 1000)} s`;
  svg.appendChild(span);
  for (const s of series) {
    if (s.points.length === 0) continue;
    const d = s.points.map((p) => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    const line = svgEl("polyline", { points: d, fill: "none", stroke: s.color, "stroke-width": 2 });
    line.setAttribute("data-series", s.name);
    svg.appendChild(line);
  }
}
