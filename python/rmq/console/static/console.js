/* rmq console: the pages, one per #/route, filled from the JSON API (/api/...).
 * Every string that comes from the cluster (topic names, keys, bodies) is inserted as text
 * (textContent / text nodes), never as markup. */
"use strict";

const POLL_MS = Number(new URLSearchParams(location.search).get("poll")) || 3000;
const CHART_POINTS = 60;
const COLORS = ["#3b6fe0", "#e0793b", "#2aa876", "#b43be0", "#d4b106", "#e03b5a"];
let timer = null;          // the current page's refresh timer
const tpsHistory = {};     // broker addr -> [[time, inTps, outTps], ...], kept across pages

// ---- DOM and API helpers -------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(id, headers, rows) {
  return el("table", { id },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) =>
      c instanceof Node ? el("td", {}, c) : el("td", { class: isNumber(c) ? "num" : null }, c ?? ""))))));
}

function isNumber(c) { return typeof c === "number" || (typeof c === "string" && /^-?\d+(\.\d+)?$/.test(c)); }

function link(href, text) { return el("a", { href }, text); }

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, params, body) {
  const qs = params ? "?" + new URLSearchParams(Object.entries(params).filter(([, v]) => v !== "" && v != null)) : "";
  let resp;
  try {
    resp = await fetch(path + qs, body === undefined ? {} : {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
  } catch (e) {
    throw new Error(`the console did not answer (${e.message}): is python -m rmq.console still running?`);
  }
  let data;
  try { data = await resp.json(); } catch (e) { throw new Error(`${path}: HTTP ${resp.status}, not JSON`); }
  if (!resp.ok) throw new Error(data.error || `${path}: HTTP ${resp.status}`);
  return data;
}

function time(ms) { return ms > 0 ? new Date(ms).toLocaleString() : ""; }
function fixed(x) { return Number(x || 0).toFixed(2); }
function inputMs(id) {
  const v = document.getElementById(id).value;
  return v ? String(new Date(v).getTime()) : "";
}

function render(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes);
}

// Runs load() now and every `ms` while the page is shown; errors go to the error box. The
// lists of every topic or group ask each broker about each one: they refresh 5 times slower.
const LIST_POLL_MS = 5 * POLL_MS;
function every(load, ms = POLL_MS) {
  let busy = false;  // a slow cluster: skip a tick rather than pile requests up
  const run = async () => {
    if (busy) return;
    busy = true;
    try { await load(); showError(""); } catch (e) { showError(e.message); } finally { busy = false; }
  };
  run();
  timer = setInterval(run, ms);
}

// ---- cluster: brokers and live TPS ---------------------------------------------------------

function recordTps(brokers, now) {
  for (const b of brokers) {
    const h = (tpsHistory[b.addr] = tpsHistory[b.addr] || []);
    h.push([now, Number(b.inTps) || 0, Number(b.outTps) || 0]);
    if (h.length > CHART_POINTS) h.shift();
  }
}

function clusterPage() {
  const chart = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  chart.setAttribute("id", "tps-chart");
  chart.setAttribute("class", "chart");
  chart.setAttribute("width", "720");
  chart.setAttribute("height", "220");
  const holder = el("div", { id: "brokers-holder" }, el("p", { class: "muted" }, "loading…"));
  const legend = el("div", { class: "legend", id: "tps-legend" });
  render(el("h2", {}, "Cluster"), holder,
    el("h3", {}, `Live TPS (every ${POLL_MS / 1000} s, from each broker's runtime info)`), chart, legend);
  every(async () => {
    const data = await api("/api/cluster");
    document.getElementById("namesrv").textContent = "nameserver " + data.namesrv.join(";");
    recordTps(data.brokers, data.time);
    holder.replaceChildren(table("brokers",
      ["Cluster", "Broker", "BID", "Role", "Address", "Version", "In TPS", "Out TPS", "Disk ratio", "Hours"],
      data.brokers.map((b) => [b.cluster, b.brokerName, b.brokerId, b.brokerId === 0 ? "MASTER" : "SLAVE",
        link("#/broker/" + encodeURIComponent(b.addr), b.addr), b.reachable ? b.version : "UNREACHABLE", fixed(b.inTps), fixed(b.outTps),
        Number(b.commitLogDiskRatio || 0).toFixed(4), fixed(b.hours)])));
    if (data.warnings) holder.appendChild(el("div", { class: "note" }, data.warnings.join("\n")));
    const series = [];
    legend.replaceChildren();
    data.brokers.forEach((b, i) => {
      const h = tpsHistory[b.addr] || [];
      const cin = COLORS[(2 * i) % COLORS.length], cout = COLORS[(2 * i + 1) % COLORS.length];
      series.push({ name: `${b.addr} in`, color: cin, points: h.map((p) => [p[0], p[1]]) });
      series.push({ name: `${b.addr} out`, color: cout, points: h.map((p) => [p[0], p[2]]) });
      legend.append(el("span", {}, el("span", { class: "swatch", "data-color": cin }), `${b.brokerName} ${b.addr} in`),
        el("span", {}, el("span", { class: "swatch", "data-color": cout }), `${b.brokerName} ${b.addr} out`));
    });
    for (const s of legend.querySelectorAll(".swatch")) s.style.background = s.dataset.color;
    drawChart(chart, series);
  });
}

function brokerPage(addr) {
  const holder = el("div", {}, el("p", { class: "muted" }, "loading…"));
  render(el("h2", {}, "Broker ", el("span", { id: "broker-addr" }, addr), " runtime (brokerStatus)"), holder);
  every(async () => {
    const kv = await api("/api/broker", { addr });
    holder.replaceChildren(table("runtime", ["Key", "Value"],
      Object.keys(kv).sort().map((k) => [k, String(kv[k])])));
  });
}

// ---- topics --------------------------------------------------------------------------------

function topicsPage() {
  const holder = el("div", {}, el("p", { class: "muted" }, "loading…"));
  render(el("h2", {}, "Topics"), holder);
  every(async () => {
    const data = await api("/api/topics");
    holder.replaceChildren(table("topics", ["Topic", "Cluster", "Consumer groups"],
      data.topics.map((t) => [link("#/topic/" + encodeURIComponent(t.topic), t.topic), t.cluster,
        el("span", {}, t.consumerGroups.map((g, i) => [i ? ", " : "", link("#/group/" + encodeURIComponent(g), g)]))])));
  }, LIST_POLL_MS);
}

function topicPage(name) {
  const holder = el("div", {}, el("p", { class: "muted" }, "loading…"));
  render(el("h2", {}, "Topic ", el("span", { id: "topic-name" }, name)), holder);
  every(async () => {
    const d = await api("/api/topic", { topic: name });
    const route = d.route;
    holder.replaceChildren(
      el("h3", {}, "Queues"),
      table("queues", ["Broker", "Queue", "Min offset", "Max offset", "Messages", "Last updated"],
        d.status.queues.map((q) => [q.brokerName, q.queueId, q.minOffset, q.maxOffset,
          q.maxOffset - q.minOffset, time(q.lastUpdateTimestamp)])),
      el("h3", {}, "TPS (statsAll)"),
      d.statsError ? el("div", { class: "note" }, d.statsError) :
        table("topic-stats", ["Consumer group", "In TPS", "Out TPS", "Accumulation", "In 24 h", "Out 24 h"],
          d.stats.map((s) => [s.consumerGroup ? link("#/group/" + encodeURIComponent(s.consumerGroup), s.consumerGroup) : "(none)",
            fixed(s.inTps), fixed(s.outTps), s.accumulation, s.inMsg24Hour, s.outMsg24Hour ?? "NO_CONSUMER"])),
      el("h3", {}, "Route"),
      table("route", ["Cluster", "Broker", "Addresses", "Read queues", "Write queues", "Perm"],
        (route.brokerDatas || []).map((b) => {
          const q = (route.queueDatas || []).find((x) => x.brokerName === b.brokerName) || {};
          const addrs = Object.entries(b.brokerAddrs || {}).map(([id, a]) => `${id}=${a}`).join(", ");
          return [b.cluster, b.brokerName, addrs, q.readQueueNums ?? "", q.writeQueueNums ?? "", q.perm ?? ""];
        })));
  });
}

// ---- consumer groups -----------------------------------------------------------------------

function groupsPage() {
  const holder = el("div", {}, el("p", { class: "muted" }, "loading…"));
  render(el("h2", {}, "Consumer groups"), holder);
  every(async () => {
    const data = await api("/api/groups");
    holder.replaceChildren(table("groups", ["Group", "Clients", "Version", "Type", "Model", "TPS", "Lag"],
      data.groups.map((g) => [link("#/group/" + encodeURIComponent(g.group), g.group), g.count, g.version,
        g.type, g.model, g.consumeTps, g.diffTotal])));
  }, LIST_POLL_MS);
}

function groupPage(name) {
  const holder = el("div", {}, el("p", { class: "muted" }, "loading…"));
  const result = el("div", { id: "reset-result" });
  const resetForm = el("form", { id: "reset-form", on: { submit: async (ev) => {
    ev.preventDefault();
    const when = document.getElementById("reset-time").value;
    const timestamp = when ? String(new Date(when).getTime()) : "now";
    try {
      const r = await api("/api/group/reset-offset", null, {
        group: name, topic: document.getElementById("reset-topic").value, timestamp,
        force: document.getElementById("reset-force").checked,
      });
      const how = r.mode === "offline" ? "stored offsets set directly (no consumer online)"
        : "reset by the brokers, online consumers told";
      result.replaceChildren(el("p", { id: "reset-done" }, `offsets reset: ${how}`),
        table("reset-table", ["Broker", "Queue", "Offset"], (r.queues || []).map((q) => [q.brokerName, q.queueId, q.offset])));
      showError("");
    } catch (e) { showError(e.message); }
  } } },
    el("label", {}, "Topic", el("input", { id: "reset-topic", required: true })),
    el("label", {}, "Time (empty: now)", el("input", { id: "reset-time", type: "datetime-local", step: "1" })),
    el("label", {}, "Also forward", el("input", { id: "reset-force", type: "checkbox", checked: true })),
    el("button", { id: "reset-button", type: "submit" }, "Reset offset"));
  render(el("h2", {}, "Consumer group ", el("span", { id: "group-name" }, name)), holder,
    el("h3", {}, "Reset offset by time"), resetForm, result);
  every(async () => {
    const d = await api("/api/group", { group: name });
    const parts = [];
    if (d.progress) {
      const p = d.progress;
      parts.push(el("p", {}, "Lag: ", el("strong", { id: "lag-total" }, p.diffTotal),
        ` messages, consume TPS ${fixed(p.consumeTps)}`));
      parts.push(table("lag", ["Topic", "Broker", "Queue", "Broker offset", "Consumer offset", "Lag", "Last consumed"],
        p.queues.map((q) => [link("#/topic/" + encodeURIComponent(q.topic), q.topic), q.brokerName, q.queueId,
          q.brokerOffset, q.consumerOffset, q.diff, time(q.lastTimestamp)])));
      const topicBox = document.getElementById("reset-topic");
      const own = p.queues.find((q) => !q.topic.startsWith("%RETRY%")) || p.queues[0];
      if (topicBox && !topicBox.value && own) topicBox.value = own.topic;
    } else {
      parts.push(el("div", { class: "note", id: "progress-error" }, d.progressError));
    }
    parts.push(el("h3", {}, "Connected clients"));
    if (d.connection) {
      const c = d.connection;
      parts.push(table("clients", ["Client id", "Address", "Language", "Version"],
        (c.connectionSet || []).map((x) => [x.clientId, x.clientAddr, x.language, x.versionDesc])));
      parts.push(table("subscriptions", ["Topic", "Expression"],
        Object.entries(c.subscriptionTable || {}).map(([t, s]) => [s.topic || t, s.subString || ""])));
      parts.push(el("p", { class: "muted" }, `${c.consumeType || ""} ${c.messageModel || ""} ${c.consumeFromWhere || ""}`));
    } else {
      parts.push(el("div", { class: "note", id: "clients-none" }, d.connectionError));
    }
    holder.replaceChildren(...parts);
  });
}

// ---- producers -----------------------------------------------------------------------------

function producersPage() {
  const holder = el("div", { id: "producers-result" });
  const form = el("form", { on: { submit: async (ev) => {
    ev.preventDefault();
    try {
      const d = await api("/api/producers", { group: document.getElementById("producer-group").value,
        topic: document.getElementById("producer-topic").value });
      holder.replaceChildren(table("producers", ["Client id", "Address", "Language", "Version"],
        d.connectionSet.map((c) => [c.clientId, c.clientAddr, c.language, c.versionDesc])));
      showError("");
    } catch (e) { holder.replaceChildren(); showError(e.message); }
  } } },
    el("label", {}, "Producer group", el("input", { id: "producer-group", required: true })),
    el("label", {}, "Topic it sends to", el("input", { id: "producer-topic", required: true })),
    el("button", { type: "submit", id: "producer-search" }, "Show connections"));
  const all = el("div", { id: "all-producers-holder" }, el("p", { class: "muted" }, "loading…"));
  render(el("h2", {}, "Producers"), all,
    el("h3", {}, "A group's connections to the brokers of a topic"), form, holder);
  every(async () => {
    const d = await api("/api/producers/all");
    all.replaceChildren(table("all-producers", ["Producer group", "Broker", "Client id", "Address", "Language", "Version", "Last heartbeat"],
      d.producers.map((p) => [p.group, p.brokerName, p.clientId, p.remoteIP, p.language, p.versionDesc, time(p.lastUpdateTimestamp)])));
    if (d.warnings) all.appendChild(el("div", { class: "note" }, d.warnings.join("\n")));
  }, LIST_POLL_MS);
}

// ---- messages ------------------------------------------------------------------------------

function hex(base64) {
  const bin = atob(base64);
  const out = [];
  for (let i = 0; i < bin.length; i += 16) {
    const row = [];
    for (let j = i; j < Math.min(i + 16, bin.length); j++) row.push(bin.charCodeAt(j).toString(16).padStart(2, "0"));
    out.push(i.toString(16).padStart(8, "0") + "  " + row.join(" "));
  }
  return out.join("\n");
}

const PREVIEW_CHARS = 64 * 1024;

// One row per traced step (Pub, SubBefore, SubAfter, EndTransaction) and message.
function traceTable(records) {
  const rows = [];
  for (const r of records) {
    const beans = r.trace_beans && r.trace_beans.length ? r.trace_beans : [{}];
    for (const b of beans) {
      rows.push([r.trace_type ?? "", time(r.time_stamp), r.group_name ?? "", r.cost_time ?? "",
        String(r.success ?? ""), b.client_host ?? "", b.store_host ?? "", b.retry_times ?? "",
        b.transaction_state ?? "", b.msg_id ?? ""]);
    }
  }
  return table("trace-table", ["Step", "Time", "Group", "Cost (ms)", "Success", "Client", "Store host",
    "Retries", "Transaction", "Message ID"], rows);
}

function messageDetail(m) {
  const body = el("pre", { class: "body", id: "message-body" });
  const show = (mode) => {
    const text = mode === "hex" ? hex(m.bodyBase64) : m.body;
    body.textContent = text.length > PREVIEW_CHARS ? text.slice(0, PREVIEW_CHARS) + "\n… (truncated)" : text;
  };
  show("text");
  const traceBox = el("div", { id: "trace" }, el("button", { id: "trace-button", on: { click: async () => {
    try {
      const t = await api("/api/trace", { id: m.msgId });
      if (!t.available) { traceBox.replaceChildren(el("p", { class: "muted", id: "trace-unavailable" }, t.message)); return; }
      traceBox.replaceChildren(t.records.length ? traceTable(t.records)
        : el("p", { class: "muted", id: "trace-none" }, t.message || "no trace records of this message"));
    } catch (e) { traceBox.replaceChildren(el("div", { class: "note" }, e.message)); }
  } } }, "Show trace"));
  const props = Object.entries(m.properties || {}).map(([k, v]) => `${k}=${v}`).join(", ");
  return el("div", { id: "message-detail" },
    el("h3", {}, "Message ", m.msgId),
    table("message-fields", ["Field", "Value"], [
      ["Message ID", m.msgId], ["Offset ID", m.offsetMsgId], ["Topic", m.topic], ["Tags", m.tags || ""],
      ["Keys", m.keys || ""], ["Queue", `${m.queueId} @ ${m.queueOffset}`], ["Born", `${time(m.bornTimestamp)} from ${m.bornHost}`],
      ["Stored", `${time(m.storeTimestamp)} on ${m.storeHost}`], ["Reconsume times", m.reconsumeTimes], ["Properties", props]]),
    el("div", { class: "tabs" }, "Body: ",
      el("button", { id: "body-text", on: { click: () => show("text") } }, "text"),
      el("button", { id: "body-hex", on: { click: () => show("hex") } }, "hex")),
    body, el("h3", {}, "Trace"), traceBox);
}

function messagesPage() {
  const results = el("div", { id: "message-results" });
  const detail = el("div", {});
  const show = (data) => {
    const msgs = data.messages || [];
    results.replaceChildren(
      data.truncated ? el("div", { class: "note" }, `showing the first ${msgs.length} messages`) : "",
      table("results", ["Message ID", "Tags", "Keys", "Queue", "Offset", "Stored", "Body"],
        msgs.map((m, i) => [el("a", { href: "#", "data-index": i, on: { click: (ev) => { ev.preventDefault(); detail.replaceChildren(messageDetail(m)); } } }, m.msgId),
          m.tags || "", m.keys || "", m.queueId, m.queueOffset, time(m.storeTimestamp), m.body.slice(0, 80)])));
    detail.replaceChildren(msgs.length === 1 ? messageDetail(msgs[0]) : "");
  };
  const search = (path, params) => async (ev) => {
    ev.preventDefault();
    results.replaceChildren(el("p", { class: "muted" }, "searching…"));
    detail.replaceChildren();
    try { show(await api(path, params())); showError(""); } catch (e) { results.replaceChildren(); showError(e.message); }
  };
  const v = (id) => document.getElementById(id).value;
  render(el("h2", {}, "Messages"),
    el("h3", {}, "By key"),
    el("form", { id: "by-key", on: { submit: search("/api/messages/by-key", () => ({ topic: v("key-topic"), key: v("key-key") })) } },
      el("label", {}, "Topic", el("input", { id: "key-topic", required: true })),
      el("label", {}, "Key", el("input", { id: "key-key", required: true })),
      el("button", { type: "submit", id: "key-search" }, "Search")),
    el("h3", {}, "By message id (Message ID with its topic, or offset id)"),
    el("form", { id: "by-id", on: { submit: search("/api/messages/by-id", () => ({ id: v("id-id"), topic: v("id-topic") })) } },
      el("label", {}, "Message id", el("input", { id: "id-id", required: true, size: 34 })),
      el("label", {}, "Topic (for a Message ID)", el("input", { id: "id-topic" })),
      el("button", { type: "submit", id: "id-search" }, "Search")),
    el("h3", {}, "By topic and store time"),
    el("form", { id: "by-time", on: { submit: search("/api/messages/by-time", () => ({ topic: v("time-topic"), begin: inputMs("time-begin"), end: inputMs("time-end") })) } },
      el("label", {}, "Topic", el("input", { id: "time-topic", required: true })),
      el("label", {}, "From", el("input", { id: "time-begin", type: "datetime-local", step: "1", required: true })),
      el("label", {}, "To (empty: now)", el("input", { id: "time-end", type: "datetime-local", step: "1" })),
      el("button", { type: "submit", id: "time-search" }, "Search")),
    results, detail);
}

// ---- routing -------------------------------------------------------------------------------

function route() {
  if (timer) clearInterval(timer);
  timer = null;
  showError("");
  const parts = location.hash.replace(/^#\/?/, "").split("/");
  const page = parts[0] || "cluster";
  const arg = parts.length > 1 ? decodeURIComponent(parts.slice(1).join("/")) : "";
  for (const a of document.querySelectorAll("header nav a")) {
    a.classList.toggle("active", a.id === "nav-" + ({ topic: "topics", group: "groups", broker: "cluster" }[page] || page));
  }
  if (page === "topics") topicsPage();
  else if (page === "topic" && arg) topicPage(arg);
  else if (page === "groups") groupsPage();
  else if (page === "group" && arg) groupPage(arg);
  else if (page === "producers") producersPage();
  else if (page === "broker" && arg) brokerPage(arg);
  else if (page === "messages") messagesPage();
  else clusterPage();
}

window.addEventListener("hashchange", route);
route();
