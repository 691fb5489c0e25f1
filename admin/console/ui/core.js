// The console's shared parts: building elements, calling the admin API,
// formatting, dialogs, secrets shown once, company names and pagers. The
// admin token lives in this tab's session storage only and goes out as a
// bearer header; every value from the API is put in the page as text, never
// as HTML.
"use strict";

const store = window.sessionStorage;
const main = document.getElementById("main");
let signingIn = false; // a refused token then stays on the sign-in form

// h builds an element: h("td", {class: "mono"}, "text", child...).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? "" : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
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

// problemText is what a person is told of a refusal. One that names
// fields is said by them alone, each field with why ("burst must be 1 to
// 100000."): beside the form, the API's title and its general detail
// ("Invalid query parameter: One or more query parameters are invalid.")
// say nothing the person can act on. Any other: its title and detail.
function problemText(e) {
  const p = e && e.problem;
  if (!p) return String(e && e.message ? e.message : e);
  // A change Redis's replicas did not confirm: said first in plain words,
  // then what became of this one (in effect, or taken back).
  if (p.code === "change_not_replicated") {
    return "Not confirmed by Redis: this change may or may not have applied. Repeat it once Redis is healthy; repeating it is safe. " + p.detail;
  }
  const fields = (p.errors || []).map((f) => (f.field === "body" ? f.message : f.field + " " + f.message).replace(/([^.])$/, "$1."));
  if (fields.length) return fields.join("\n");
  return p.title + ": " + p.detail;
}

// q builds a query string of the given parameters, leaving out empty ones.
function q(params) {
  const s = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") s.set(k, v);
  const out = s.toString();
  return out ? "?" + out : "";
}

function fmt(n) { return Number(n || 0).toLocaleString("en-US"); }
// plural is n and what it counts, in the singular for 1: "1 event", "2 events".
function plural(n, one, many) { return fmt(n) + " " + (Number(n) === 1 ? one : many || one + "s"); }
// Every time on the page is in UTC and says so; a time typed is read so.
function when(t) { return t ? new Date(t).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "—"; }
// whenCell is when() on two lines (date, then time), for narrow columns.
function whenCell(t) {
  if (!t) return "—";
  const s = when(t);
  return h("span", { class: "when" }, s.slice(0, 10), h("br"), s.slice(11));
}
// minuteUTC is a minute of the usage API (Luanda's, which keeps UTC+1 all
// year) as HH:MM in UTC.
function minuteUTC(luanda) { return new Date(luanda + ":00+01:00").toISOString().slice(11, 16); }

// utcInput is a field for a time, typed as the page shows times: YYYY-MM-DD
// HH:MM in UTC (a datetime-local field shows the browser's own format and
// zone); value is a Date or null.
function utcInput(id, value, required) {
  return h("input", { id, type: "text", required, size: 16, placeholder: "YYYY-MM-DD HH:MM", pattern: "\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}",
    title: "YYYY-MM-DD HH:MM, in UTC", value: value ? value.toISOString().slice(0, 16).replace("T", " ") : "" });
}

// utcValue reads a utcInput: a Date, null when empty; it throws on a time
// that does not exist (2026-02-30 10:00).
function utcValue(input) {
  const v = input.value.trim();
  if (!v) return null;
  const d = new Date(v.replace(" ", "T") + ":00Z");
  if (isNaN(d) || d.toISOString().slice(0, 16) !== v.replace(" ", "T")) throw new Error(v + " is not a time: give YYYY-MM-DD HH:MM, in UTC.");
  return d;
}
function sum(m) { return Object.values(m || {}).reduce((a, b) => a + b, 0); }
function enc(s) { return encodeURIComponent(s); }
function isUUID(s) { return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s); }

// duration says how long from now t is ("in 59 min", "3 h ago").
function duration(t) {
  const s = (new Date(t) - Date.now()) / 1000, a = Math.abs(s);
  const text = a < 90 ? Math.round(a) + " s" : a < 5400 ? Math.round(a / 60) + " min" : a < 172800 ? Math.round(a / 3600) + " h" : Math.round(a / 86400) + " days";
  return s >= 0 ? "in " + text : text + " ago";
}

function table(head, rows, attrs) {
  return h("table", attrs || {}, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: head.length, class: "muted" }, "None."))));
}

// tag is a small coloured label: state names are their own classes.
function tag(text, cls) { return h("span", { class: "tag " + (cls || text) }, text); }

// The overlaps offered when a key is rolled or a signing secret rotated
// (the CLI's --overlap; the API's overlapSeconds, at most 30 days).
const OVERLAPS = [[0, "No overlap: the old one stops now"], [3600, "1 hour"], [86400, "24 hours"], [7 * 86400, "7 days"], [30 * 86400, "30 days"]];

function overlapSelect(id) {
  return h("select", { id, name: "overlap" }, OVERLAPS.map(([s, label]) => h("option", { value: s, selected: s === 86400 }, label)));
}

// ask shows a modal dialog with body and two buttons; it resolves to the
// dialog's form when confirmed, null when cancelled (button or Escape).
function ask({ title, body, confirm, danger }) {
  return new Promise((resolve) => {
    const dlg = h("dialog", { id: "ask", "aria-labelledby": "ask-title" });
    const done = (v) => { dlg.close(); dlg.remove(); resolve(v); };
    const form = h("form", { onsubmit: (e) => { e.preventDefault(); done(form); } },
      h("h2", { id: "ask-title" }, title), body || [],
      h("div", { class: "buttons" },
        h("button", { type: "submit", class: danger ? "danger-fill" : "primary", id: "ask-confirm" }, confirm),
        h("button", { type: "button", id: "ask-cancel", onclick: () => done(null) }, "Cancel")));
    dlg.append(form);
    dlg.addEventListener("cancel", (e) => { e.preventDefault(); done(null); });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// showSecret shows a secret this once, until dismissed: nothing keeps it.
function showSecret(value, what, note, id) {
  const slot = document.getElementById("secret-slot");
  const box = h("div", { class: "secret", id: "secret", role: "status" },
    h("b", {}, "Copy the " + what + " now: it is shown this once. "), note || "",
    h("code", { id: "secret-value" }, value), id ? h("span", { class: "muted", id: "secret-id" }, id) : null,
    h("button", { type: "button", onclick: () => box.remove() }, "I have copied it"));
  slot.replaceChildren(box);
  box.scrollIntoView({ block: "nearest" });
}

// Company names by id, read once per page: ids are what the API answers,
// names are what people know.
const companies = new Map();

async function loadNames(ids) {
  const missing = [...new Set(ids)].filter((id) => id && !companies.has(id));
  for (let i = 0; i < missing.length; i += 100) {
    try {
      const page = await api("GET", "/admin/v1/companies" + q({ ids: missing.slice(i, i + 100).join(",") }));
      for (const c of page.data || []) companies.set(c.id, c);
    } catch (x) {
      return; // no names (no live database here): ids are shown
    }
  }
}

// companyLink shows a company by name, its id beside it.
function companyLink(id) {
  const c = companies.get(id);
  return h("a", { href: "#/company/" + enc(id), class: "company" }, c ? h("span", { class: "name" }, c.name) : null,
    h("span", { class: "mono" + (c ? " muted small" : "") }, id), c && c.status !== "active" ? [" ", tag(c.status)] : null);
}

// turns guards a panel's reads, as render guards pages: each read takes a
// turn, and draws only while no read began after it (current()), so that a
// late answer never draws over a newer one.
function turns() {
  let last = 0;
  return () => { const mine = ++last; return () => mine === last; };
}

// pager is a list read page by page through the API's {data, next}: load()
// reads the first page, "Show more" appends the next, and refresh() reads
// again as many pages as are shown (after a change, the row changed stays
// in view). row renders an item; path(cursor) is a page's URL.
function pager({ id, head, row, path, empty }) {
  const body = h("tbody");
  const more = h("button", { type: "button", class: "more", hidden: true }, "Show more");
  const msg = h("p", { class: "error" });
  let next = null, pages = 0;
  const turn = turns();
  const read = async (n) => { // n pages from the first; 0: the next one
    const current = turn();
    msg.textContent = "";
    try {
      const rows = [];
      let cursor = n ? "" : next;
      for (let i = 0; i < Math.max(n, 1); i++) {
        const page = await api("GET", path(cursor));
        rows.push(...(page.data || []).map(row));
        cursor = page.next;
        if (!cursor) break;
      }
      if (!current()) return;
      next = cursor;
      if (n) { body.replaceChildren(); pages = 0; }
      pages += Math.max(n, 1);
      body.append(...rows);
      if (!body.children.length) body.append(h("tr", {}, h("td", { colspan: head.length, class: "muted" }, empty || "None.")));
      more.hidden = !next;
    } catch (x) { if (current()) msg.textContent = problemText(x); }
  };
  more.addEventListener("click", () => read(0));
  const el = h("div", { class: "pager", id }, h("table", {}, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))), body), more, msg);
  return { el, load: () => read(1), refresh: () => read(Math.max(pages, 1)) };
}

function signOut(message) {
  store.removeItem("adminToken");
  render(message);
}
