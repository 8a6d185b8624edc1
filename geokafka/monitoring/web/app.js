// geokafka dashboard: polls /api/status and draws flows, figures and SVG charts. No dependencies.
"use strict";

const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
const num = (v, digits = 0) => v === null || v === undefined ? "–" : Number(v).toLocaleString("en-US", {maximumFractionDigits: digits});

function dur(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return s === 0 ? "0 s" : `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60), sec = Math.floor(s % 60);
  if (m < 60) return `${m}m${String(sec).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

function niceStep(v) {
  if (!(v > 0)) return 0.25;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function bytesRate(v) {
  if (v === null || v === undefined) return "–";
  if (v >= 1e6) return `${num(v / 1e6, 2)} MB/s`;
  if (v >= 1e3) return `${num(v / 1e3, 1)} kB/s`;
  return `${num(v, 0)} B/s`;
}

// A line chart as an SVG string; points: [{t: ms, v: number|null}], gaps where v is null.
function lineChart(points, series, color, unit) {
  const W = 600, H = 150, L = 48, R = 8, T = 8, B = 20;
  const known = points.filter((p) => p.v !== null && p.v !== undefined);
  if (known.length === 0) {
    return `<svg class="chart" data-series="${series}" viewBox="0 0 ${W} ${H}"><text class="empty" x="${W / 2}" y="${H / 2}" text-anchor="middle">no data yet</text></svg>`;
  }
  const t1 = points[points.length - 1].t, t0 = Math.min(points[0].t, t1 - 60000);
  const step = niceStep(Math.max(...known.map((p) => p.v)) / 4);
  const ticks = Math.max(1, Math.ceil(Math.max(...known.map((p) => p.v)) / step));
  const ymax = step * ticks;
  const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / ymax) * (H - T - B);
  let grid = "";
  for (let i = 0; i <= ticks; i++) {
    const v = step * i, yy = y(v).toFixed(1);
    grid += `<line class="grid" x1="${L}" x2="${W - R}" y1="${yy}" y2="${yy}"/><text x="${L - 4}" y="${yy}" dy="3" text-anchor="end">${num(v, step < 1 ? 2 : 0)}</text>`;
  }
  const span = (t1 - t0) / 1000;
  grid += `<text x="${L}" y="${H - 4}">-${dur(span)}</text><text x="${W - R}" y="${H - 4}" text-anchor="end">now</text>`;
  grid += `<text x="${L + 4}" y="${T + 10}">${esc(unit)}</text>`;
  const segments = [];
  let seg = [];
  for (const p of points) {
    if (p.v === null || p.v === undefined) { if (seg.length) segments.push(seg); seg = []; continue; }
    seg.push(`${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`);
  }
  if (seg.length) segments.push(seg);
  const lines = segments.map((s) => s.length === 1
    ? `<circle cx="${s[0].split(",")[0]}" cy="${s[0].split(",")[1]}" r="2.5" fill="${color}"/>`
    : `<polyline fill="none" stroke="${color}" stroke-width="2" points="${s.join(" ")}"/>`).join("");
  return `<svg class="chart" data-series="${series}" data-points="${known.length}" viewBox="0 0 ${W} ${H}">${grid}${lines}</svg>`;
}

function figure(label, value, cls = "", hint = "") {
  return `<div class="figure"><div class="label">${esc(label)}</div><div class="value ${cls}">${value}</div>${hint ? `<div class="hint">${esc(hint)}</div>` : ""}</div>`;
}

// "53", "120 – 410", "? – 275" (none seen: unknown, not 0), "unknown"
function rpoRecords(rpo) {
  if (rpo.records_lower === null || rpo.records_lower === undefined) return "unknown";
  if (rpo.exact) return num(rpo.records_lower);
  const upper = rpo.records_upper === null ? "unbounded" : num(rpo.records_upper);
  return `${rpo.records_lower === 0 ? "?" : num(rpo.records_lower)} – ${upper}`;
}

function flowCard(f, history) {
  const rpo = f.rpo || {};
  const tp = f.throughput;
  const problems = [f.reason, f.source_error, f.state_error].filter(Boolean)
    .map((p) => `<div class="problem">${esc(p)}</div>`).join("");
  const live = ["running", "retrying", "starting"].includes(f.mirror_state);
  const heartbeat = f.heartbeat_age_s === null ? "no heartbeat"
    : `${live ? "heartbeat" : `${f.mirror_state} recorded`} ${dur(f.heartbeat_age_s)} ago`;
  const figures = [
    figure(f.failover ? `RPO of the failover (${f.failover.exact ? "exact" : "bounded"})` : "RPO if the source died now",
      esc(rpo.headline || "unknown"), `${rpo.exact && rpo.records === 0 ? "ok" : "warn"} text`, rpo.basis === "live" ? "" : rpo.basis),
    figure("records lost", rpoRecords(rpo), rpo.exact && rpo.records === 0 ? "ok" : "warn",
      rpo.observation_age_s === null || rpo.observation_age_s === undefined ? "" : `observation ${dur(rpo.observation_age_s)} old`),
    figure("span of lost writes, up to", dur(rpo.seconds_upper), rpo.seconds_upper === 0 ? "ok" : "warn"),
    figure("replicated", tp ? `${num(tp.records_per_s, 1)} rec/s` : "–", "", tp ? `over ${tp.window_s.toFixed(0)} s` : "needs two samples"),
    figure("bytes", tp ? bytesRate(tp.bytes_per_s) : "–", "", tp && tp.bytes_per_s !== null ? "mean record size × rec/s" : ""),
    figure("source receives", tp && tp.produced_per_s !== null ? `${num(tp.produced_per_s, 1)} rec/s` : "–"),
    figure("written by mirror", num(f.written), "", f.pid ? `pid ${f.pid} on ${f.host}` : ""),
  ].join("");
  const lagPts = history.map((p) => ({t: p.t, v: p.lag_records}));
  const ratePts = history.map((p) => ({t: p.t, v: p.records_per_s}));
  const rows = (f.partitions || []).map((p) => `<tr><td>${esc(p.topic)}</td><td>${p.partition}</td><td>${num(p.source_end)}</td>
    <td>${num(p.replicated)}</td><td class="${p.lag_records ? "lag" : "zero"}">${num(p.lag_records)}</td><td>${dur(p.lag_seconds)}</td>
    <td>${num(p.records_per_s, 1)}</td></tr>`).join("");
  const report = f.last_failover ? `<details class="failover"><summary>last failover report</summary><pre>${esc(JSON.stringify(f.last_failover, null, 2))}</pre></details>` : "";
  return `<section class="flow" data-flow="${esc(f.name)}" data-state="${esc(f.state)}">
    <h2>${esc(f.name)} <span class="route">${esc(f.source)} → ${esc(f.target)}</span>
      <span class="badge ${esc(f.state)}">${esc(f.state)}</span><span class="route">${esc(heartbeat)}</span></h2>
    ${problems}
    <div class="figures">${figures}</div>
    <div class="charts">
      <div class="chart-box"><h3>lag over time (records not yet on ${esc(f.target)})</h3>${lineChart(lagPts, "lag", "#d9480f", "records")}</div>
      <div class="chart-box"><h3>throughput over time</h3>${lineChart(ratePts, "throughput", "#1c6dd0", "rec/s")}</div>
    </div>
    <table><thead><tr><th>topic</th><th>partition</th><th>${f.source_reachable ? "source end" : "last seen end"}</th><th>replicated</th>
      <th>lag (records)</th><th>lag (time)</th><th>rec/s</th></tr></thead><tbody>${rows || '<tr><td colspan="7">no topics</td></tr>'}</tbody></table>
    ${report}
  </section>`;
}

function render(data) {
  const err = document.getElementById("error");
  err.hidden = !data.error;
  err.textContent = data.error || "";
  const report = data.report;
  const meta = document.getElementById("meta");
  if (!report) { meta.textContent = "waiting for the first status sample…"; return; }
  const at = new Date(report.at_ms).toLocaleTimeString();
  meta.textContent = `sampled ${at} · every ${data.interval_s} s · ${data.samples} samples · throughput over ${data.window_s} s`;
  const flows = report.flows || [];
  document.getElementById("flows").innerHTML = (flows.length
    ? flows.map((f) => flowCard(f, (data.history || {})[f.name] || [])).join("")
    : '<section class="flow">no flows in the topology</section>') + guardCard(report.guard);
}

function guardCard(g) {
  if (!g) return "";
  const lowered = (g.lowered || []).map((l) =>
    `<li class="warn">${esc(l.topic)}: min.insync.replicas ${l.original} → ${l.lowered} (${esc(l.dc)} lost)</li>`).join("");
  const recent = (g.recent || []).map((r) =>
    `<li>${new Date(r.at_ms).toLocaleTimeString()} ${esc(r.status)}: ${esc(r.text)}</li>`).join("");
  return `<section class="flow guard" id="guard">
    <h2>guard on ${esc(g.cluster)}</h2>
    ${g.error ? `<div class="error">${esc(g.error)}</div>` : ""}
    <ul>${lowered || '<li class="ok">nothing changed: no DC lost, or every change undone</li>'}</ul>
    <h3>journal</h3><ul class="journal">${recent || "<li>empty</li>"}</ul>
  </section>`;
}

let intervalMs = 2000;
async function poll() {
  try {
    const res = await fetch("/api/status", {cache: "no-store"});
    const data = await res.json();
    intervalMs = Math.max(500, (data.interval_s || 2) * 1000);
    render(data);
  } catch (e) {
    const err = document.getElementById("error");
    err.hidden = false;
    err.textContent = `dashboard server not answering: ${e}`;
  }
  setTimeout(poll, intervalMs);
}
poll();
