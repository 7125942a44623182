// cloud2mqtt status page: the budget (its figures, the chart of the
// requests by hour, the token buckets). Loaded before app.js, whose
// helpers ($, setText, fmtNum, …) it uses once the page runs.
"use strict";

// ---- budget -------------------------------------------------------------

function renderBudget() {
  const b = state.budget;
  if (!b) return;
  state.clockOffset = Date.parse(b.now) - Date.now();
  setText($("b-today"), fmtNum(b.requests_today));
  const prog = $("b-progress");
  // The quota that binds: the cloud's (learned from its answers) or
  // CLOUD_DAILY_LIMIT, the smaller; its bar shows what is spent of it.
  const q = b.quota || (b.daily_limit > 0
    ? { limit: b.daily_limit, remaining: Math.max(0, b.daily_limit - b.requests_today), source: "configured" } : null);
  if (q && q.limit > 0) {
    const frac = (q.limit - q.remaining) / q.limit;
    prog.hidden = false;
    prog.max = q.limit;
    prog.value = Math.min(q.limit - q.remaining, q.limit);
    setClass(prog, frac >= 1 ? "bad" : frac >= 0.8 ? "warn" : "");
  } else {
    prog.hidden = true;
  }
  setText($("b-limit"), !q ? "no daily limit set"
    : (q.limit > 0 ? "of " + fmtNum(q.limit) + " " : "") + (q.source === "learned" ? "(the cloud's quota)" : "a day")
      + " · " + fmtNum(q.remaining) + " left" + (q.reset ? " · renews " + fmtTime(q.reset) : ""));
  const short = (q && q.fits === false) || b.over_limit;
  const proj = $("b-proj");
  setText(proj, b.projected_today === null ? "–" : fmtNum(b.projected_today));
  setClass(proj, "big" + (short ? " bad" : ""));
  setText($("b-pace"), b.pace_per_hour === null ? "measuring the pace…"
    : fmtNum(b.pace_per_hour) + " an hour now" + (q && q.runs_out ? " · the quota runs out at " + fmtTime(q.runs_out)
      : b.over_limit ? " · over the limit" : q && q.fits ? " · the quota lasts" : ""));
  setText($("b-429"), fmtNum(b.rate_limited));
  setClass($("b-429"), "big" + (b.rate_limited > 0 ? " warn" : ""));
  setText($("b-last429"), b.last_429 ? "last " + fmtTime(b.last_429) + " (" + fmtAge(b.last_429) + ")" : "never since the start");
  setText($("b-queue"), fmtNum(b.queue_depth));
  setText($("b-inflight"), fmtNum(b.in_flight) + " on the wire · polling every " + fmtDuration(b.poll_interval));
  renderChart(b.hourly || []);
  renderBuckets(b.buckets || []);
}

const SVGNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

// niceMax is the chart's top: four steps of a whole, round number of
// requests (0, 15, 30, 45, 60), at least v.
function niceMax(v) {
  if (v <= 4) return 4;
  const raw = v / 4;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) {
    const step = m * p;
    if (step >= raw && Number.isInteger(step)) return 4 * step;
  }
  return 40 * p;
}

const groups = ["state", "control", "list", "scenes", "other"];
let lastChart = "";
function renderChart(hours) {
  // Drawn at the container's width, so that the text keeps its size on a
  // phone.
  const W = Math.max(280, Math.round($("chart").clientWidth || 720));
  const key = W + JSON.stringify(hours);
  if (key === lastChart) return;
  lastChart = key;
  const H = W < 500 ? 170 : 220, L = 40, R = 8, T = 10, B = 24;
  const every = W < 500 ? 6 : 3;
  const totals = hours.map((h) => groups.reduce((s, g) => s + (h[g] || 0), 0));
  const max = niceMax(Math.max(1, ...totals));
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "Requests per hour by endpoint, last 24 hours" });
  const ph = H - T - B, pw = W - L - R;
  for (let i = 0; i <= 4; i++) {
    const y = T + ph - (ph * i) / 4;
    root.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
    root.append(svg("text", { x: L - 6, y: y + 3, "text-anchor": "end" }, fmtNum((max * i) / 4)));
  }
  const bw = pw / Math.max(hours.length, 1);
  hours.forEach((h, i) => {
    let y = T + ph;
    const x = L + i * bw + bw * 0.12;
    const g = svg("g");
    const start = new Date(h.start);
    g.append(svg("title", {}, hourFmt.format(start) + ": " + fmtNum(totals[i]) + " requests (" +
      groups.filter((k) => h[k]).map((k) => k + " " + fmtNum(h[k])).join(", ") + ")"));
    for (const k of groups) {
      const v = h[k] || 0;
      if (!v) continue;
      const bh = (ph * v) / max;
      y -= bh;
      g.append(svg("rect", { x: x, y: y, width: bw * 0.76, height: Math.max(bh, 0.5), class: "s-" + k }));
    }
    root.append(g);
    const last = i === hours.length - 1;
    if ((hours.length - 1 - i) % every === 0) {
      root.append(svg("text", { x: last ? W - R : L + i * bw + bw / 2, y: H - 8, "text-anchor": last ? "end" : "middle" },
        hourFmt.format(start)));
    }
  });
  $("chart").replaceChildren(root);
}

let lastBuckets = "";
function renderBuckets(buckets) {
  const key = JSON.stringify(buckets);
  if (key === lastBuckets) return;
  lastBuckets = key;
  const box = $("buckets");
  box.replaceChildren();
  for (const b of buckets) {
    const d = el("div", "bucket");
    const row = el("div", "row");
    row.append(el("span", "", b.name), el("span", "", (Math.round(b.tokens * 10) / 10) + " / " + b.capacity));
    const m = el("meter");
    m.min = 0; m.max = b.capacity; m.value = b.tokens; m.low = b.capacity * 0.2; m.high = b.capacity * 0.5; m.optimum = b.capacity;
    d.append(row, m);
    box.append(d);
  }
  if (!buckets.length) box.append(el("p", "empty", "No buckets reported."));
}
