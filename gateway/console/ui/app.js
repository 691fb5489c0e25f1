// The admin console: a small single-page app over the admin API. The admin
// token lives in this tab's session storage only and goes out as a bearer
// header; every value from the API is put in the page as text, never as HTML.
"use strict";

const store = window.sessionStorage;
const main = document.getElementById("main");
let signingIn = false; // a refused token then stays on the sign-in form
const COLORS = { "2xx": "#12b76a", "3xx": "#2e90fa", "4xx": "#f79009", "5xx": "#d92d20", limited: "#7a5af8" };

// h builds an element: h("td", {class: "mono"}, "text", child...).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

// api calls the admin API; it throws {status, problem} on an error answer.
async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + store.getItem("adminToken"), "X-Actor": store.getItem("actor") || "console" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  const data = text ? JSON.parse(text) : null;
  if (!res.ok) {
    if (res.status === 401 && !signingIn) signOut("The admin token was refused; sign in again.");
    throw { status: res.status, problem: data };
  }
  return data;
}

function problemText(e) {
  const p = e && e.problem;
  if (!p) return String(e && e.message ? e.message : e);
  const fields = (p.errors || []).map((f) => "\n  " + f.field + ": " + f.message).join("");
  return p.title + " (" + p.code + "): " + p.detail + fields;
}

function signOut(message) {
  store.removeItem("adminToken");
  render(message);
}

function fmt(n) { return Number(n || 0).toLocaleString("en-US"); }
function when(t) { return t ? new Date(t).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "—"; }
function sum(m) { return Object.values(m || {}).reduce((a, b) => a + b, 0); }
function companyLink(id) { return h("a", { href: "#/company/" + encodeURIComponent(id), class: "mono" }, id); }

// chart draws stacked bars of status classes per period, 429s as a line
// of dots; rows are [{label, live: {2xx..}, test: {...}, rateLimited}].
function chart(rows, title) {
  const W = 1000, H = 170, pad = 24;
  const classes = ["2xx", "3xx", "4xx", "5xx"];
  const totals = rows.map((r) => classes.reduce((a, c) => a + ((r.live || {})[c] || 0) + ((r.test || {})[c] || 0), 0));
  const top = Math.max(1, ...totals);
  const bw = (W - pad) / Math.max(1, rows.length);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H + 18}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", title);
  const add = (tag, attrs, text) => {
    const el = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    if (text !== undefined) el.textContent = text;
    svg.append(el);
    return el;
  };
  add("text", { x: 0, y: 10, "font-size": 11, fill: "#667085" }, fmt(top));
  add("line", { x1: pad, y1: H, x2: W, y2: H, stroke: "#e4e7ec" });
  rows.forEach((r, i) => {
    let y = H;
    for (const c of classes) {
      const n = ((r.live || {})[c] || 0) + ((r.test || {})[c] || 0);
      if (!n) continue;
      const hgt = (n / top) * (H - 14);
      y -= hgt;
      const rect = add("rect", { x: pad + i * bw + 1, y, width: Math.max(1, bw - 2), height: hgt, fill: COLORS[c], "data-class": c });
      const tip = document.createElementNS(ns, "title");
      tip.textContent = `${r.label}: ${n} ${c}`;
      rect.append(tip);
    }
    const lim = (r.rateLimited || {}).live + (r.rateLimited || {}).test || 0;
    if (lim) add("circle", { cx: pad + i * bw + bw / 2, cy: H - (lim / top) * (H - 14), r: 3, fill: COLORS.limited });
    if (i % Math.ceil(rows.length / 8) === 0) add("text", { x: pad + i * bw, y: H + 14, "font-size": 10, fill: "#667085" }, r.label);
  });
  const legend = h("div", { class: "legend" }, [...classes, "limited"].map((c) => h("span", {}, h("i", { style: null }), c === "limited" ? "429" : c)));
  legend.querySelectorAll("i").forEach((el, i) => { el.style.background = COLORS[[...classes, "limited"][i]]; });
  return h("div", { class: "panel" }, h("b", {}, title), legend, svg);
}

function table(head, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: head.length, class: "muted" }, "None."))));
}

function signInView(message) {
  const token = h("input", { type: "password", id: "token", autocomplete: "off", required: true });
  const actor = h("input", { id: "actor", value: store.getItem("actor") || "", placeholder: "e.g. ana.silva", required: true });
  const err = h("p", { class: "error", id: "signin-error" }, message || "");
  const form = h("form", { id: "signin", onsubmit: async (e) => {
    e.preventDefault();
    store.setItem("adminToken", token.value.trim());
    store.setItem("actor", actor.value.trim());
    signingIn = true;
    try {
      await api("GET", "/admin/v1/overview?top=1");
      location.hash = "#/";
      render();
    } catch (x) {
      store.removeItem("adminToken");
      err.textContent = x.status === 401 ? "That admin token is not the gateway's." : problemText(x);
    } finally {
      signingIn = false;
    }
  } },
  h("label", {}, "Admin token", token), h("label", {}, "Your name (recorded in the audit log)", actor),
  h("button", { class: "primary", type: "submit" }, "Sign in"), err);
  return h("div", { class: "signin panel" }, h("h1", {}, "Sign in"),
    h("p", { class: "muted" }, "The token stays in this tab only and is sent with each request; closing the tab forgets it."), form);
}

async function overviewView() {
  const o = await api("GET", "/admin/v1/overview?top=10");
  const rows = (list, limited) => list.map((c) => h("tr", {}, h("td", {}, companyLink(c.companyId)), h("td", {}, fmt(c.requests)),
    limited ? h("td", {}, fmt(c.rateLimited)) : null));
  const totals = (o.minutes || []).reduce((a, m) => {
    for (const [k, v] of Object.entries(m.live || {})) a[k] = (a[k] || 0) + v;
    for (const [k, v] of Object.entries(m.test || {})) a[k] = (a[k] || 0) + v;
    a.limited += (m.rateLimited || {}).live + (m.rateLimited || {}).test || 0;
    return a;
  }, { limited: 0 });
  return h("div", { id: "overview" }, h("h1", {}, "Overview ", h("span", { class: "muted" }, o.date)),
    h("div", { class: "cards" },
      h("div", { class: "card" }, "Companies with traffic today", h("b", { id: "active-today" }, fmt(o.activeToday))),
      h("div", { class: "card" }, "… in the last hour", h("b", { id: "active-hour" }, fmt(o.activeLastHour))),
      ["2xx", "4xx", "5xx"].map((c) => h("div", { class: "card" }, c + " in the last hour", h("b", {}, fmt(totals[c])))),
      h("div", { class: "card" }, "429s in the last hour", h("b", { id: "limited-hour" }, fmt(totals.limited)))),
    chart((o.minutes || []).map((m) => ({ ...m, label: m.time.slice(11) })), "All companies, per minute, last hour (Luanda time)"),
    h("div", { class: "grid2" },
      h("div", {}, h("h2", {}, "Busiest today"), table(["Company", "Requests", "429s"], rows(o.topToday || [], true))),
      h("div", {}, h("h2", {}, "Busiest in the last hour"), table(["Company", "Requests"], rows(o.topLastHour || [], false)))),
    h("h2", {}, "Near their limit"),
    table(["Company", "LIVE rate / limit", "TEST rate / limit", "429s today"], (o.nearLimit || []).map((n) => h("tr", {},
      h("td", {}, companyLink(n.companyId)),
      h("td", {}, n.rate.live.toFixed(2) + " / " + n.limits.live.rate + " rps"),
      h("td", {}, n.rate.test.toFixed(2) + " / " + n.limits.test.rate + " rps"),
      h("td", {}, fmt(n.rateLimitedToday))))));
}

async function companyView(id) {
  const enc = encodeURIComponent(id);
  const [keys, minutes, days] = await Promise.all([
    api("GET", "/admin/v1/keys?companyId=" + enc),
    api("GET", "/admin/v1/companies/" + enc + "/usage/minutes?minutes=60"),
    api("GET", "/admin/v1/companies/" + enc + "/usage?days=30"),
  ]);
  let audit = null;
  try { audit = await api("GET", "/admin/v1/companies/" + enc + "/audit"); } catch (x) { audit = { error: x }; }
  const view = h("div", { id: "company" }, h("h1", {}, "Company ", h("span", { class: "mono" }, minutes.companyId)));
  view.append(h("div", { id: "secret-slot" }), limitsPanel(id, minutes), keysPanel(id, keys.data || []),
    chart(minutes.minutes.map((m) => ({ ...m, label: m.time.slice(11) })), "Requests per minute, last hour (Luanda time)"),
    chart(days.days.map((d) => ({ ...d, label: d.date.slice(5) })), "Requests per day, last 30 days (Luanda dates)"),
    auditPanel(audit));
  return view;
}

function limitsPanel(id, minutes) {
  const l = minutes.limits, r = minutes.rate;
  const msg = h("p", { class: "error" });
  const mode = h("select", { id: "limit-mode" }, h("option", { value: "" }, "both"), h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const rate = h("input", { id: "limit-rate", type: "number", step: "any", min: "0.001", value: l.live.rate, required: true });
  const burst = h("input", { id: "limit-burst", type: "number", min: "1", value: l.live.burst, required: true });
  const row = (name, lim, now) => h("tr", {}, h("td", {}, name), h("td", { class: "limit-rate" }, lim.rate + " rps"), h("td", {}, String(lim.burst)),
    h("td", {}, lim.custom ? h("span", { class: "tag" }, "custom") : h("span", { class: "muted" }, "default")), h("td", {}, now.toFixed(2) + " rps"));
  return h("div", { class: "panel", id: "limits" }, h("b", {}, "Rate limits"),
    table(["Mode", "Rate", "Burst", "", "Now (last complete minute)"], [row("LIVE", l.live, r.live), row("TEST", l.test, r.test)]),
    h("form", { class: "inline", id: "limit-form", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("PUT", "/admin/v1/companies/" + encodeURIComponent(id) + "/limits", { mode: mode.value, rate: Number(rate.value), burst: Number(burst.value) });
        render();
      } catch (x) { msg.textContent = problemText(x); }
    } }, h("label", {}, "Mode", mode), h("label", {}, "Rate (requests/s)", rate), h("label", {}, "Burst", burst),
    h("button", { class: "primary", type: "submit" }, "Set limit"),
    h("button", { type: "button", onclick: async () => {
      try { await api("DELETE", "/admin/v1/companies/" + encodeURIComponent(id) + "/limits"); render(); } catch (x) { msg.textContent = problemText(x); }
    } }, "Reset to defaults")), msg);
}

function keyRow(k) {
  const actions = h("td", {});
  const msg = h("div", { class: "error" });
  if (k.state === "active") {
    actions.append(h("button", { class: "roll", onclick: async () => {
      try {
        const v = await api("POST", "/admin/v1/keys/" + encodeURIComponent(k.id) + "/roll", { overlapSeconds: 86400 });
        showSecret(v, "Rolled: the old key works 24 more hours.");
      } catch (x) { msg.textContent = problemText(x); }
    } }, "Roll"), " ", h("button", { class: "danger revoke", onclick: async () => {
      if (!window.confirm("Revoke " + k.id + "? Every gateway refuses it within a second.")) return;
      try { await api("DELETE", "/admin/v1/keys/" + encodeURIComponent(k.id)); render(); } catch (x) { msg.textContent = problemText(x); }
    } }, "Revoke"), msg);
  }
  return h("tr", { "data-key": k.id }, h("td", { class: "mono" }, k.id), h("td", {}, k.name || h("span", { class: "muted" }, "—")),
    h("td", {}, k.mode), h("td", {}, (k.scopes || []).join(", ")), h("td", { class: "mono" }, k.hint),
    h("td", {}, h("span", { class: "tag " + k.state }, k.state)), h("td", {}, when(k.createdAt)), h("td", {}, when(k.lastUsedAt)),
    h("td", {}, when(k.expiresAt)), h("td", { class: "mono" }, (k.allowedCidrs || []).join(" ") || "any"), actions);
}

function showSecret(v, note) {
  const slot = document.getElementById("secret-slot");
  slot.replaceChildren(h("div", { class: "secret", id: "secret" }, h("b", {}, "Copy the key now: it is shown this once. "), note || "",
    h("code", { id: "secret-value" }, v.key), h("span", { class: "muted" }, "Key id " + v.id),
    h("button", { type: "button", onclick: () => render() }, "I have copied it")));
}

function keysPanel(id, keys) {
  const msg = h("p", { class: "error" });
  const mode = h("select", { id: "key-mode" }, h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const name = h("input", { id: "key-name", maxlength: 100 });
  const scopeNames = ["invoices:read", "clients:read", "clients:write"];
  const scopes = scopeNames.map((s) => h("input", { type: "checkbox", value: s, checked: s !== "clients:write", class: "key-scope" }));
  const expiry = h("input", { id: "key-expiry", type: "datetime-local" });
  const nets = h("input", { id: "key-cidrs", placeholder: "e.g. 203.0.113.0/24, 2001:db8::/32", size: 30 });
  const form = h("form", { class: "inline", id: "key-form", onsubmit: async (e) => {
    e.preventDefault();
    const body = { companyId: id, mode: mode.value, name: name.value, scopes: scopes.filter((c) => c.checked).map((c) => c.value) };
    if (expiry.value) body.expiresAt = new Date(expiry.value).toISOString();
    const cidrs = nets.value.split(",").map((s) => s.trim()).filter(Boolean);
    if (cidrs.length) body.allowedCidrs = cidrs;
    try {
      const v = await api("POST", "/admin/v1/keys", body);
      const list = await api("GET", "/admin/v1/keys?companyId=" + encodeURIComponent(id));
      document.getElementById("keys-table").replaceWith(keysTable(list.data || []));
      showSecret(v);
    } catch (x) { msg.textContent = problemText(x); }
  } }, h("label", {}, "Mode", mode), h("label", {}, "Name", name),
  h("label", {}, "Scopes", h("span", {}, scopes.map((c, i) => h("span", {}, c, " " + scopeNames[i] + " ")))),
  h("label", {}, "Expires (optional)", expiry), h("label", {}, "Source networks (optional)", nets),
  h("button", { class: "primary", type: "submit" }, "Create key"));
  return h("div", { class: "panel", id: "keys" }, h("b", {}, "API keys"), keysTable(keys), h("h2", {}, "New key"), form, msg);
}

function keysTable(keys) {
  const t = table(["Id", "Name", "Mode", "Scopes", "Hint", "State", "Created", "Last used", "Expires", "Networks", ""], keys.map(keyRow));
  t.id = "keys-table";
  return t;
}

function auditPanel(audit) {
  if (audit && audit.error) {
    return h("div", { class: "panel", id: "audit" }, h("b", {}, "Audit log"), h("p", { class: "muted" }, "Not available: " + problemText(audit.error)));
  }
  const entries = (audit && (audit.data || audit.entries)) || [];
  return h("div", { class: "panel", id: "audit" }, h("b", {}, "Audit log"),
    table(["Time", "Actor", "Action", "Key", "Before → after"], entries.map((e) => h("tr", {}, h("td", {}, when(e.time)),
      h("td", {}, e.actor), h("td", {}, e.action), h("td", { class: "mono" }, e.keyId || ""),
      h("td", { class: "mono" }, JSON.stringify(e.before || null) + " → " + JSON.stringify(e.after || null))))));
}

async function render(message) {
  const signedIn = !!store.getItem("adminToken");
  document.getElementById("goto").hidden = !signedIn;
  document.getElementById("signout").hidden = !signedIn;
  document.getElementById("who").textContent = signedIn ? store.getItem("actor") || "" : "";
  if (!signedIn) {
    main.replaceChildren(signInView(message));
    return;
  }
  const m = location.hash.match(/^#\/company\/(.+)$/);
  try {
    main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    main.replaceChildren(m ? await companyView(decodeURIComponent(m[1])) : await overviewView());
  } catch (x) {
    main.replaceChildren(h("p", { class: "error", id: "page-error" }, problemText(x)));
  }
}

document.getElementById("signout").addEventListener("click", () => signOut("Signed out."));
document.getElementById("goto").addEventListener("submit", (e) => {
  e.preventDefault();
  location.hash = "#/company/" + encodeURIComponent(document.getElementById("goto-id").value.trim());
});
window.addEventListener("hashchange", () => render());
render();
