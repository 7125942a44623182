// cloud2mqtt status page: reads /api/session, then follows /api/events
// (a snapshot, then changes). Everything is built with textContent: no
// value from the bridge is ever parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  session: null,
  devices: new Map(),
  budget: null,
  problems: [],
  sortKey: "name",
  sortDir: 1,
  filter: "",
  openId: null,
  opening: null, // the device whose detail is being opened
  clockOffset: 0, // server time minus browser time, ms
  ageCells: [],
};

// setText changes a node's text only when it differs: a live page must
// not rewrite a thousand unchanged cells a second.
function setText(e, v) {
  v = String(v);
  if (e.textContent !== v) e.textContent = v;
}

function setClass(e, v) {
  if (e.className !== v) e.className = v;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

// Plain digits, whatever the locale: the figures read the same as in
// bridge/stats and /api/budget, and copy as numbers.
const fmtNum = (n) => (n === null || n === undefined ? "–" : String(Math.round(n)));

function fmtDuration(sec) {
  if (sec === null || sec === undefined) return "–";
  sec = Math.round(sec);
  if (sec < 60) return sec + " s";
  if (sec < 3600) return (sec % 60 ? Math.floor(sec / 60) + " min " + (sec % 60) + " s" : sec / 60 + " min");
  const h = Math.floor(sec / 3600), m = Math.round((sec % 3600) / 60);
  return m ? h + " h " + m + " min" : h + " h";
}

// fmtInterval is a device's Interval cell: a light the LAN reaches is
// read there, at the LAN poll, not by the cloud.
function fmtInterval(d) {
  if (d.path === "local") return "local · " + fmtDuration(d.poll_interval);
  return fmtDuration(d.poll_interval) + (d.poll_why ? " (" + d.poll_why + ")" : d.own_interval ? " (own)" : "");
}

function fmtAge(iso) {
  if (!iso) return "never";
  const sec = Math.max(0, (Date.now() + state.clockOffset - Date.parse(iso)) / 1000);
  if (sec < 5) return "just now";
  if (sec < 90) return Math.round(sec) + " s ago";
  if (sec < 5400) return Math.round(sec / 60) + " min ago";
  if (sec < 172800) return Math.round(sec / 3600) + " h ago";
  return Math.round(sec / 86400) + " days ago";
}

// Formatters made once: toLocale*String builds one per call, which a
// thousand rows a second cannot afford.
const timeFmt = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const dateTimeFmt = new Intl.DateTimeFormat(undefined, { dateStyle: "short", timeStyle: "medium" });
const hourFmt = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  const now = new Date();
  const sameDay = d.getFullYear() === now.getFullYear() && d.getMonth() === now.getMonth() && d.getDate() === now.getDate();
  return sameDay ? timeFmt.format(d) : dateTimeFmt.format(d);
}

const shortType = (t) => (t || "").replace(/^devices\.types\./, "");
const shortCap = (t) => (t || "").replace(/^devices\.capabilities\./, "");

// ---- toast --------------------------------------------------------------

let toastTimer = 0;
function toast(msg, bad) {
  const t = $("toast");
  t.textContent = msg;
  t.classList.toggle("bad", !!bad);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, bad ? 7000 : 3000);
}

// ---- session and actions ------------------------------------------------

async function loadSession() {
  const r = await fetch("api/session", { credentials: "same-origin" });
  state.session = await r.json();
  renderAccess();
}

function actionsAllowed() {
  const s = state.session;
  if (!s || !s.actions_offered) return false;
  return s.actions === "open" || (s.actions === "token" && s.authenticated);
}

function renderAccess() {
  const s = state.session;
  const box = $("access");
  const allowed = actionsAllowed();
  box.hidden = !s || s.actions === "open" || !s.actions_offered;
  box.classList.toggle("ok", allowed);
  if (s && s.actions === "off") {
    $("access-text").textContent = "Actions are off: " + s.reason + ".";
  } else if (s && s.actions === "token") {
    $("access-text").textContent = allowed ? "Logged in: actions are allowed." : "Actions need the bridge's HTTP_TOKEN. Log in to use them; the figures below need no login.";
  }
  $("login").hidden = !(s && s.actions === "token" && !s.authenticated);
  $("logout").hidden = !(s && s.actions === "token" && s.authenticated);
  for (const b of document.querySelectorAll("button.action")) b.disabled = !allowed;
  $("a-interval-value").disabled = !allowed;
  for (const b of document.querySelectorAll("button.action")) {
    b.title = allowed ? "" : (s && s.actions === "off" ? "Actions are off (see the top of the page)" : "Log in first");
  }
}

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": state.session ? state.session.csrf_token : "" },
    body: JSON.stringify(body || {}),
  });
  let data = {};
  try { data = await r.json(); } catch (e) { data = { error: r.statusText }; }
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

async function act(path, body, done) {
  try {
    await post("api/actions/" + path, body);
    toast(done);
  } catch (e) {
    toast(e.message, true);
  }
}

// ---- devices ------------------------------------------------------------

const statusRank = { online: 0, offline: 1, unreachable: 2, unknown: 3 };

function sortValue(d, key) {
  switch (key) {
    case "status": return (d.disabled ? 10 : 0) + statusRank[d.status];
    case "last_read": return d.last_read ? Date.parse(d.last_read) : 0;
    case "poll_interval": return d.poll_interval;
    case "type": return shortType(d.type).toLowerCase();
    default: return String(d[key] || "").toLowerCase();
  }
}

function visibleDevices() {
  const f = state.filter.trim().toLowerCase();
  const list = [...state.devices.values()].filter((d) => !f || (d.name || "").toLowerCase().includes(f));
  const k = state.sortKey, dir = state.sortDir;
  const keyed = list.map((d) => ({ d, v: sortValue(d, k) }));
  keyed.sort((a, b) => {
    const c = typeof a.v === "string" ? collator.compare(a.v, b.v) : a.v - b.v;
    return c * dir || collator.compare(a.d.name || "", b.d.name || "") || (a.d.id < b.d.id ? -1 : 1);
  });
  return keyed.map((x) => x.d);
}

function statusBadge(d) {
  if (d.disabled) return el("span", "badge st-disabled", "disabled");
  return el("span", "badge st-" + d.status, d.status);
}

function cell(cls, label, content) {
  const td = el("td", cls);
  if (label) td.dataset.label = label;
  if (content instanceof Node) td.append(content); else if (content !== undefined) td.textContent = content;
  return td;
}

// rows keeps each device's row and the JSON it was built from: a change
// rebuilds that row only, and rows move only when the order changed.
const rows = new Map();

function buildRow(d) {
  const tr = el("tr");
  tr.dataset.id = d.id;
  tr.tabIndex = 0;
  const when = el("span", "", d.last_read ? fmtTime(d.last_read) + " " : "");
  const age = el("span", "age", fmtAge(d.last_read));
  const w = el("span");
  w.append(when, age);
  tr.append(
    cell("name", "", d.name),
    cell("model", "", d.model),
    cell("type", "", shortType(d.type)),
    cell("status", "", statusBadge(d)),
    cell("path", "", d.path),
    cell("when", "Read", w),
    cell("num", "", fmtInterval(d)),
    cell("err", "", d.last_error || ""),
  );
  return { tr, age, json: JSON.stringify(d), iso: d.last_read };
}

function renderDevices() {
  const body = $("device-rows");
  const list = visibleDevices();
  const shown = new Set();
  state.ageCells = [];
  let at = body.firstElementChild;
  for (const d of list) {
    let r = rows.get(d.id);
    const json = JSON.stringify(d);
    if (!r || r.json !== json) {
      const fresh = buildRow(d);
      if (r) r.tr.replaceWith(fresh.tr);
      if (at === (r && r.tr)) at = fresh.tr;
      r = fresh;
      rows.set(d.id, r);
    }
    shown.add(d.id);
    state.ageCells.push([r.age, r.iso]);
    if (at === r.tr) at = at.nextElementSibling;
    else body.insertBefore(r.tr, at);
  }
  for (const [id, r] of rows) {
    if (!shown.has(id)) { r.tr.remove(); if (!state.devices.has(id)) rows.delete(id); }
  }
  $("d-empty").hidden = list.length > 0 || state.devices.size === 0;
  const online = [...state.devices.values()].filter((d) => d.status === "online" && !d.disabled).length;
  setText($("d-count"), state.devices.size ? online + " of " + state.devices.size + " online" : "");
  for (const th of document.querySelectorAll("#device-table th")) {
    const v = th.dataset.key === state.sortKey ? (state.sortDir > 0 ? "ascending" : "descending") : "none";
    if (th.getAttribute("aria-sort") !== v) th.setAttribute("aria-sort", v);
  }
}

function updateAges() {
  for (const [span, iso] of state.ageCells) setText(span, fmtAge(iso));
}

// ---- device detail ------------------------------------------------------

function fmtValue(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

function capSummary(c) {
  const p = c.parameters || {};
  const parts = [];
  if (p.dataType) parts.push(p.dataType);
  if (p.range) parts.push(p.range.min + "–" + p.range.max + (p.unit ? " " + p.unit.replace(/^unit\./, "") : ""));
  else if (p.unit) parts.push(p.unit.replace(/^unit\./, ""));
  if (p.options && p.options.length) {
    const names = p.options.map((o) => o.name);
    parts.push(names.length > 6 ? names.slice(0, 6).join(", ") + " … (" + names.length + ")" : names.join(", "));
  }
  if (p.fields && p.fields.length) parts.push("fields: " + p.fields.map((f) => f.fieldName).join(", "));
  if (c.eventState && c.eventState.options) parts.push("events: " + c.eventState.options.map((o) => o.name).join(", "));
  return parts.join(" · ");
}

// openDetail shows a device. The dialog's "close" event comes a moment
// after it closed: one that comes while another device opens (a quick
// click) must not forget that device.
async function openDetail(id) {
  state.openId = id;
  state.opening = id;
  const dlg = $("detail");
  try {
    await refreshDetail();
    if (state.openId === id && !dlg.open) dlg.showModal();
  } finally {
    if (state.opening === id) state.opening = null;
  }
}

async function refreshDetail() {
  const id = state.openId;
  if (!id) return;
  const r = await fetch("api/devices/" + encodeURIComponent(id), { credentials: "same-origin" });
  if (!r.ok) { toast("The device " + id + " is gone.", true); $("detail").close(); return; }
  const d = await r.json();
  if (state.openId !== id) return;
  $("detail-name").textContent = d.name;
  $("detail-sub").textContent = d.model + " · " + shortType(d.type) + " · " + d.id;
  const facts = $("detail-facts");
  facts.replaceChildren();
  const fact = (k, v) => { facts.append(el("dt", "", k)); const dd = el("dd"); if (v instanceof Node) dd.append(v); else dd.textContent = v; facts.append(dd); };
  fact("Status", statusBadge(d));
  fact("Via", d.path);
  fact("Last read", d.last_read ? fmtTime(d.last_read) + " (" + fmtAge(d.last_read) + ")" : "never");
  fact("Poll interval", d.path === "local" ? fmtDuration(d.poll_interval) + " over the LAN (local control)"
    : fmtDuration(d.poll_interval) + (d.poll_why ? " (" + d.poll_why + ")" : d.own_interval ? " (the device's own)" : " (the bridge's)"));
  if (d.last_error) fact("Last error", d.last_error);
  $("a-enable").textContent = d.disabled ? "Enable" : "Disable";
  $("a-enable").dataset.enable = d.disabled ? "1" : "";
  const vals = $("detail-values");
  vals.replaceChildren();
  const readings = d.readings || [];
  if (!readings.length) vals.append(rowKV("–", "no values read yet"));
  for (const r of readings) vals.append(rowKV(r.instance, r.text, r.color));
  const caps = $("detail-caps");
  caps.replaceChildren();
  for (const c of d.capabilities || []) caps.append(rowKV(c.instance, shortCap(c.type) + (capSummary(c) ? " · " + capSummary(c) : "")));
}

// rowKV is a row of the detail's tables: a name, its value and, for a
// colour, a swatch of it (an SVG fill: no inline style under the policy).
function rowKV(k, v, color) {
  const tr = el("tr");
  tr.append(el("td", "", k));
  const td = el("td");
  if (color) {
    const sw = svg("svg", { class: "swatch", viewBox: "0 0 16 16", width: 16, height: 16, "aria-hidden": "true" });
    sw.append(svg("rect", { x: 0.5, y: 0.5, width: 15, height: 15, rx: 3, fill: color }));
    td.append(sw);
  }
  td.append(el("code", "", v));
  tr.append(td);
  return tr;
}

// ---- problems -----------------------------------------------------------

// A problem reads as the bridge wrote it for a person (text: the device's
// name, what happened, why), with what to do when the log line says; the
// log line's fields stay one click away for whoever reports a bug.
function renderProblems() {
  const list = $("problem-list");
  list.replaceChildren();
  for (const p of state.problems) {
    const li = el("li");
    const t = el("time", "", fmtTime(p.time));
    t.dateTime = p.time;
    li.append(t, el("span", "lvl-" + p.level, p.level), el("span", "msg", p.text || p.message));
    if (p.hint) {
      const h = el("div", "hint", "What to do: ");
      h.append(el("code", "", p.hint));
      li.append(h);
    }
    if (p.fields) {
      const det = el("details", "fields");
      det.append(el("summary", "", "details"),
        el("div", "", Object.entries(p.fields).map(([k, v]) => k + ": " + fmtValue(v)).join("\n")));
      li.append(det);
    }
    list.append(li);
  }
  $("p-empty").hidden = state.problems.length > 0;
  list.hidden = state.problems.length === 0;
}

// ---- live updates -------------------------------------------------------

// The page follows the event stream; while it has none (refused: too many
// streams, or lost and not coming back by itself), it reads the API every
// session.fallback_every seconds and tries the stream again each time.
const live = { es: null, timer: 0 };

function setLive(text, cls) {
  const p = $("live");
  setText(p, text);
  setClass(p, "pill " + cls);
}

function applySnapshot(s) {
  state.devices = new Map(s.devices.map((d) => [d.id, d]));
  state.budget = s.budget;
  state.problems = s.problems;
  renderBudget();
  renderDevices();
  renderProblems();
  document.body.dataset.ready = "1";
}

function connect() {
  clearTimeout(live.timer);
  if (live.es) live.es.close();
  const es = new EventSource("api/events");
  live.es = es;
  let opened = false;
  es.onopen = () => {
    setLive("live", "pill-live");
    // A bridge restarted has a new CSRF token: read the session again.
    if (opened) loadSession().catch(() => {});
    opened = true;
  };
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      // Refused (503) or gone for good: the browser does not retry.
      if (live.es === es) fallback();
      return;
    }
    setLive("reconnecting…", "pill-wait");
  };
  es.addEventListener("snapshot", (e) => applySnapshot(JSON.parse(e.data)));
  es.addEventListener("devices", (e) => {
    const d = JSON.parse(e.data);
    for (const x of d.upsert) state.devices.set(x.id, x);
    for (const id of d.remove) state.devices.delete(id);
    renderDevices();
    if (state.openId && (d.upsert.some((x) => x.id === state.openId) || d.remove.includes(state.openId))) refreshDetail();
  });
  es.addEventListener("budget", (e) => {
    state.budget = JSON.parse(e.data);
    renderBudget();
    updateAges();
  });
  es.addEventListener("problems", (e) => {
    state.problems = JSON.parse(e.data).problems;
    renderProblems();
  });
}

async function getJSON(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

// fallback reads what the stream would have sent, then tries the stream
// again after a while.
async function fallback() {
  live.es = null;
  setLive("polling", "pill-wait");
  try {
    const [d, b, p] = await Promise.all([getJSON("api/devices"), getJSON("api/budget"), getJSON("api/problems")]);
    applySnapshot({ devices: d.devices, budget: b, problems: p.problems });
  } catch (e) {
    setLive("offline", "pill-wait");
  }
  const every = state.session && state.session.fallback_every > 0 ? state.session.fallback_every : 5;
  live.timer = setTimeout(connect, every * 1000);
}

// ---- wiring -------------------------------------------------------------

function init() {
  window.addEventListener("resize", () => { if (state.budget) renderChart(state.budget.hourly || []); });
  $("filter").addEventListener("input", (e) => { state.filter = e.target.value; renderDevices(); });
  for (const th of document.querySelectorAll("#device-table th")) {
    th.querySelector("button").addEventListener("click", () => {
      const k = th.dataset.key;
      state.sortDir = state.sortKey === k ? -state.sortDir : 1;
      state.sortKey = k;
      renderDevices();
    });
  }
  const tbody = $("device-rows");
  tbody.addEventListener("click", (e) => { const tr = e.target.closest("tr"); if (tr) openDetail(tr.dataset.id); });
  tbody.addEventListener("keydown", (e) => {
    if (e.key !== "Enter" && e.key !== " ") return;
    const tr = e.target.closest("tr");
    if (tr) { e.preventDefault(); openDetail(tr.dataset.id); }
  });
  $("detail-close").addEventListener("click", () => $("detail").close());
  $("detail").addEventListener("close", () => { if (!state.opening) state.openId = null; });
  $("refresh").addEventListener("click", () => act("refresh", {}, "Reading the device list again."));
  $("republish").addEventListener("click", () => act("republish", {}, "Discovery published again."));
  $("a-read").addEventListener("click", () => act("read", { device: state.openId }, "Read queued."));
  $("a-enable").addEventListener("click", () => {
    const enable = !!$("a-enable").dataset.enable;
    act("enabled", { device: state.openId, enabled: enable }, enable ? "Device enabled." : "Device disabled.");
  });
  $("a-interval").addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("a-interval-value").value.trim();
    if (!v) { toast("Type an interval such as 2m, or press “Bridge's”.", true); return; }
    act("poll-interval", { device: state.openId, poll_interval: v }, "Poll interval set to " + v + ".");
  });
  $("a-interval-reset").addEventListener("click", () => act("poll-interval", { device: state.openId, poll_interval: null }, "The bridge's interval applies again."));
  $("login").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await post("api/login", { token: $("login-token").value });
      $("login-token").value = "";
      await loadSession();
      toast("Logged in.");
    } catch (err) {
      toast(err.message, true);
    }
  });
  $("logout").addEventListener("click", async () => {
    try { await post("api/logout", {}); await loadSession(); } catch (err) { toast(err.message, true); }
  });
  loadSession().catch((e) => toast("Cannot reach the bridge: " + e.message, true));
  connect();
}

init();
