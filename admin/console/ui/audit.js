// A company's audit log over a chosen period, newest first; each event
// shows what changed, field by field, rather than its before and after
// views.
"use strict";

// flatten turns a view into dotted paths and their values ("live.rate");
// lists stay whole.
function flatten(v, prefix, out) {
  out = out || new Map();
  if (v !== null && typeof v === "object" && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flatten(x, prefix ? prefix + "." + k : k, out);
  } else if (prefix) {
    out.set(prefix, v);
  }
  return out;
}

// EMPTY says what an empty list of a field means: an endpoint with no types
// gets every type, a key with no networks is accepted from any.
const EMPTY = { types: "every type", allowedCidrs: "any network" };

// shown is a field's value as a person reads it.
function shown(v, field) {
  if (v === null || v === undefined || v === "") return "—";
  if (Array.isArray(v)) return v.length ? v.join(", ") : EMPTY[field] || "none";
  if (typeof v === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v)) return when(v);
  return String(v);
}

const same = (a, b) => JSON.stringify(a === undefined ? null : a) === JSON.stringify(b === undefined ? null : b);

// Fields a creation says nothing by: the event's own time, the new state.
const AT_CREATION = new Set(["createdAt", "updatedAt", "secretRotatedAt", "state"]);

// changes are the fields an event changed: [{field, before, after}], each
// side undefined when the view had none (a creation, a deletion).
function changes(before, after) {
  const b = before ? flatten(before) : new Map(), a = after ? flatten(after) : new Map();
  const out = [];
  for (const f of new Set([...b.keys(), ...a.keys()])) {
    if (f === "companyId" || f === "id" || f === "endpointId") continue; // the page's company; the event's subject
    const bv = b.get(f), av = a.get(f);
    if (before && after && same(bv, av)) continue;
    if (!before && (av === null || av === "" || (Array.isArray(av) && !av.length && f !== "types") || AT_CREATION.has(f))) continue; // unset or implied at creation
    out.push({ field: f, before: before ? bv : undefined, after: after ? av : undefined });
  }
  return out;
}

function diffView(e) {
  const rows = changes(e.before, e.after);
  const list = h("dl", { class: "diff" }, rows.map((c) => h("div", {}, h("dt", {}, c.field),
    h("dd", {}, c.before !== undefined ? h("del", { class: c.before === null ? "none" : null }, shown(c.before, c.field)) : null, c.before !== undefined && c.after !== undefined ? " → " : null,
      c.after !== undefined ? h("ins", {}, shown(c.after, c.field)) : null))));
  if (!rows.length) list.append(h("div", {}, h("dd", { class: "muted" }, "no field changed")));
  const raw = h("details", {}, h("summary", {}, "JSON"),
    h("pre", { class: "mono" }, "before: " + JSON.stringify(e.before || null, null, 1) + "\nafter: " + JSON.stringify(e.after || null, null, 1)));
  return [list, raw];
}

function auditRow(e) {
  return h("tr", { "data-action": e.action }, h("td", {}, whenCell(e.time)), h("td", {}, e.actor), h("td", {}, tag(e.action, "action")),
    h("td", { class: "mono" }, e.keyId || e.webhookId || ""), h("td", { class: "changes" }, diffView(e)));
}

// auditPanel reads the chosen period through the API's pages (oldest
// first; a company's log keeps at most 10,000 events, so at most eleven
// pages of 1,000) and shows it newest first, 50 events at a time: the
// latest change is always on top.
function auditPanel(id) {
  const days = h("select", { id: "audit-since", "aria-label": "Period" },
    [[1, "the last 24 hours"], [7, "the last 7 days"], [30, "the last 30 days"], [400, "everything kept (400 days)"]].map(([d, label]) =>
      h("option", { value: d, selected: d === 30 }, label)));
  const body = h("tbody");
  const older = h("button", { type: "button", class: "more", id: "audit-older", hidden: true }, "Show older");
  const count = h("span", { class: "muted", id: "audit-count" });
  const msg = h("p", { class: "error" });
  let events = [], shown = 0;
  const more = () => {
    const next = events.slice(shown, shown + 50);
    body.append(...next.map(auditRow));
    shown += next.length;
    older.hidden = shown >= events.length;
    // "11 events." when all are shown; "The newest 50 of 120 events." while
    // older ones wait behind "Show older".
    count.textContent = !events.length ? "" : shown >= events.length ? plural(events.length, "event") + "."
      : "The newest " + fmt(shown) + " of " + plural(events.length, "event") + ".";
  };
  const turn = turns();
  const load = async () => {
    const current = turn();
    msg.textContent = "";
    const all = [];
    let since = new Date(Date.now() - Number(days.value) * 86400e3).toISOString();
    try {
      for (let i = 0; i < 12 && since; i++) {
        const page = await api("GET", "/admin/v1/companies/" + enc(id) + "/audit" + q({ since, limit: 1000 }));
        all.push(...(page.data || []));
        since = page.next;
      }
    } catch (x) {
      if (current()) msg.textContent = "Not available: " + problemText(x);
      return;
    }
    if (!current()) return; // another period was chosen meanwhile
    events = all.reverse();
    shown = 0;
    body.replaceChildren(...(events.length ? [] : [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "Nothing changed in that time."))]));
    more();
  };
  older.addEventListener("click", more);
  days.addEventListener("change", load);
  const el = h("div", { class: "panel", id: "audit" }, h("h2", {}, "Audit log"),
    h("p", { class: "muted" }, "Over ", days, ", newest first: ", count),
    h("table", { id: "audit-list" }, h("thead", {}, h("tr", {}, ["Time", "Actor", "Action", "Key or endpoint", "What changed"].map((c) => h("th", {}, c)))), body),
    older, msg);
  return { el, load };
}
