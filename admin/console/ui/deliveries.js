// An endpoint's delivery log: each event, whose it is (its mode and
// company, as its body says), with its attempts (time, status,
// latency, the answer's first bytes, the error) and its next attempt,
// newest first, filtered by state and type, a page at a time; and a replay
// of any one event.
"use strict";

// answerOf is what the receiver answered: its first bytes, that it sent
// none, or that no answer came (and why): never an empty cell.
function answerOf(a) {
  if (a.response) return h("span", { class: "mono" }, a.response);
  if (a.status) return h("span", { class: "muted" }, "(an empty body)");
  return h("span", { class: "bad" }, "no answer: " + (a.error || "the connection failed"));
}

function attemptsTable(d) {
  if (!d.log || !d.log.length) return h("span", { class: "muted small" }, "not attempted yet");
  return h("table", { class: "attempts" }, h("thead", {}, h("tr", {}, ["#", "Time", "Status", "Latency", "Outcome", "The receiver's answer (first bytes)"].map((c) => h("th", {}, c)))),
    h("tbody", {}, d.log.map((a, i) => h("tr", { class: a.error ? "failed" : "ok" },
      h("td", {}, String(i + 1)), h("td", {}, when(a.at)),
      h("td", { class: "status" }, a.status ? String(a.status) : "—"), h("td", {}, a.latencyMs.toFixed(1) + " ms"),
      h("td", { class: "attempt-error" }, a.error || "delivered"), h("td", { class: "response" }, answerOf(a))))));
}

// ownerOf says whose an event is, as its body does: its mode and company
// (by name when known), what a receiver serving several companies from one
// URL routes it by.
function ownerOf(d) {
  const c = companies.get(d.companyId);
  return h("div", { class: "owner small", "data-company": d.companyId, "data-mode": d.mode, title: d.companyId },
    d.mode + " · " + (c ? c.name : d.companyId));
}

// lastFailure says why a delivery's last attempt failed, under its state.
function lastFailure(d) {
  const a = d.log && d.log.length ? d.log[d.log.length - 1] : null;
  return a && a.error ? h("div", { class: "small bad last-failure" }, "last attempt: " + a.error) : null;
}

// nextAttempt is when a pending delivery is attempted next; one due already
// is "due now", not "0 s ago".
function nextAttempt(d) {
  if (!d.nextAttemptAt) return "—";
  const due = new Date(d.nextAttemptAt) <= Date.now();
  return [whenCell(d.nextAttemptAt), h("div", { class: "small muted" }, due ? "due now" : duration(d.nextAttemptAt))];
}

// outcomeText says how attempt a of event id went, after a replay.
function outcomeText(id, a, d) {
  if (!a.error) return "Event " + id + " sent again: delivered (the receiver answered " + a.status + ").";
  return "Event " + id + " sent again: " + a.error + (d.nextAttemptAt ? "; next attempt " + duration(d.nextAttemptAt) + "." : ".");
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
      h("td", {}, h("div", { class: "mono" }, d.eventId), h("div", {}, d.type), ownerOf(d), d.resourceId ? h("div", { class: "mono muted small" }, d.resourceId) : null),
      h("td", {}, tag(d.state), d.doneAt ? h("div", { class: "small muted" }, when(d.doneAt)) : null, d.state !== "delivered" ? lastFailure(d) : null),
      h("td", {}, whenCell(d.queuedAt)),
      // A replay or a recovery counts attempts afresh; the log keeps the earlier ones.
      h("td", {}, h("span", { class: "attempt-count" }, String(d.attempts)),
        d.log && d.log.length > d.attempts ? h("div", { class: "small muted attempts-since" }, "since it was sent again (" + fmt(d.log.length) + " in all)") : null),
      h("td", { class: "next-attempt" }, nextAttempt(d)),
      h("td", {}, h("button", { type: "button", class: "replay", onclick: () => replay(d) }, "Replay"))),
    h("tr", { class: "attempts-row" }, h("td", { colspan: 6 }, attemptsTable(d))));

  // replay sends an event again and follows its row until the attempt is
  // made (about a minute at most), to say how it went.
  const replay = async (d) => {
    const last = (d.log || []).length ? d.log[d.log.length - 1].at : null;
    try {
      await api("POST", "/admin/v1/webhooks/" + enc(id) + "/deliveries/" + enc(d.eventId) + "/replay");
    } catch (x) { say(problemText(x), true); return; }
    say("Event " + d.eventId + " queued again, now, with its id: sending…");
    for (let i = 0; i < 60; i++) {
      const page = await read(cursors[cursors.length - 1]);
      const now = page && page.data.find((x) => x.eventId === d.eventId);
      if (!el.isConnected || !now) return; // another page, or no longer on this one
      const a = (now.log || []).length ? now.log[now.log.length - 1] : null;
      if (a && a.at !== last) {
        say(outcomeText(d.eventId, a, now), !!a.error);
        return refreshed();
      }
      await new Promise((done) => setTimeout(done, 1000));
    }
    say("Event " + d.eventId + " queued again; not attempted yet.");
  };

  // read shows a page of the log, unless another read began meanwhile, and
  // returns it (undefined on an error).
  const turn = turns();
  const read = async (cursor) => {
    const current = turn();
    err.textContent = "";
    try {
      const page = await api("GET", "/admin/v1/webhooks/" + enc(id) + "/deliveries" + q({ limit: 20, cursor, state: state.value, type: type.value }));
      if (!current()) return page;
      table.querySelectorAll(":scope > tbody").forEach((b) => b.remove());
      table.append(...(page.data.length ? page.data.map(group)
        : [h("tbody", {}, h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No deliveries" + (state.value || type.value ? " match." : " yet."))))]));
      next = page.next;
      older.disabled = !next;
      newest.disabled = cursors.length === 1;
      pageNo.textContent = "page " + cursors.length;
      return page;
    } catch (x) { if (current()) err.textContent = problemText(x); }
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
