// An endpoint's delivery log: each event with its attempts (time, status,
// latency, the answer's first bytes, the error) and its next attempt,
// newest first, filtered by state and type, a page at a time; and a replay
// of any one event.
"use strict";

function attemptsTable(d) {
  if (!d.log || !d.log.length) return h("span", { class: "muted small" }, "not attempted yet");
  return h("table", { class: "attempts" }, h("thead", {}, h("tr", {}, ["#", "Time", "Status", "Latency", "Error", "Answer (first bytes)"].map((c) => h("th", {}, c)))),
    h("tbody", {}, d.log.map((a, i) => h("tr", { class: a.error ? "failed" : "ok" },
      h("td", {}, String(i + 1)), h("td", {}, when(a.at)),
      h("td", { class: "status" }, a.status ? String(a.status) : "—"), h("td", {}, a.latencyMs.toFixed(1) + " ms"),
      h("td", { class: "attempt-error" }, a.error || ""), h("td", { class: "mono response" }, a.response || "")))));
}

// deliveryLog is the log's panel; its Refresh also calls refreshed (the
// endpoint's health), so that one click shows where things stand.
function deliveryLog(id, say, refreshed) {
  const state = h("select", { id: "filter-state" }, h("option", { value: "" }, "any"), ["pending", "delivered", "failed", "expired"].map((s) => h("option", {}, s)));
  const type = h("select", { id: "filter-type" }, h("option", { value: "" }, "any"), [...EVENT_TYPES, "webhook.test"].map((t) => h("option", {}, t)));
  const table = h("table", { id: "deliveries-table" }, h("thead", {}, h("tr", {}, ["Event", "State", "Queued", "Attempts", "Next attempt", ""].map((c) => h("th", {}, c)))));
  const pageNo = h("span", { class: "muted", id: "deliveries-page" });
  const older = h("button", { type: "button", id: "deliveries-older" }, "Older →");
  const newest = h("button", { type: "button", id: "deliveries-newest" }, "← Newest");
  const err = h("p", { class: "error" });
  let cursors = [""]; // the cursor of each page read, the shown one last
  let next = null;

  // Each delivery is a group of two rows: the event, then its attempts.
  const group = (d) => h("tbody", { "data-event": d.eventId, "data-state": d.state },
    h("tr", { class: "delivery" },
      h("td", {}, h("div", { class: "mono" }, d.eventId), h("div", {}, d.type), d.resourceId ? h("div", { class: "mono muted small" }, d.resourceId) : null),
      h("td", {}, tag(d.state), d.doneAt ? h("div", { class: "small muted" }, when(d.doneAt)) : null),
      h("td", {}, whenCell(d.queuedAt)),
      // A replay or a recovery counts attempts afresh; the log keeps the earlier ones.
      h("td", {}, h("span", { class: "attempt-count" }, String(d.attempts)),
        d.log && d.log.length > d.attempts ? h("div", { class: "small muted" }, "since sent again; " + d.log.length + " logged") : null),
      h("td", { class: "next-attempt" }, d.nextAttemptAt ? [whenCell(d.nextAttemptAt), h("div", { class: "small muted" }, duration(d.nextAttemptAt))] : "—"),
      h("td", {}, h("button", { type: "button", class: "replay", onclick: async () => {
        try {
          await api("POST", "/admin/v1/webhooks/" + enc(id) + "/deliveries/" + enc(d.eventId) + "/replay");
          say("Event " + d.eventId + " queued again, now, with its id.");
          await read(cursors[cursors.length - 1]);
        } catch (x) { say(problemText(x), true); }
      } }, "Replay"))),
    h("tr", { class: "attempts-row" }, h("td", { colspan: 6 }, attemptsTable(d))));

  const read = async (cursor) => {
    err.textContent = "";
    try {
      const page = await api("GET", "/admin/v1/webhooks/" + enc(id) + "/deliveries" + q({ limit: 20, cursor, state: state.value, type: type.value }));
      table.querySelectorAll(":scope > tbody").forEach((b) => b.remove());
      table.append(...(page.data.length ? page.data.map(group)
        : [h("tbody", {}, h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No deliveries" + (state.value || type.value ? " match." : " yet."))))]));
      next = page.next;
      older.disabled = !next;
      newest.disabled = cursors.length === 1;
      pageNo.textContent = "page " + cursors.length;
    } catch (x) { err.textContent = problemText(x); }
  };
  const load = () => { cursors = [""]; return read(""); };
  older.addEventListener("click", () => { if (next) { cursors.push(next); read(next); } });
  newest.addEventListener("click", load);
  state.addEventListener("change", load);
  type.addEventListener("change", load);
  const el = h("div", { class: "panel", id: "deliveries" }, h("h2", {}, "Delivery log"),
    h("div", { class: "inline" }, h("label", {}, "State", state), h("label", {}, "Type", type),
      h("button", { type: "button", id: "deliveries-refresh", onclick: () => Promise.all([read(cursors[cursors.length - 1]), refreshed()]) }, "Refresh")),
    table,
    h("div", { class: "buttons" }, newest, older, pageNo), err);
  return { el, load };
}
