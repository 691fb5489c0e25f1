// Webhook endpoints: a company's list with each one's health, a form to add
// one, and an endpoint's page (webhook.js) with its delivery log.
"use strict";

const EVENT_TYPES = ["invoice.issued", "invoice.paid", "invoice.cancelled", "invoice.overdue", "invoice.transmission.updated", "client.created", "client.updated"];

// typeBoxes are a checkbox per event type; none checked means every type,
// including types added later.
function typeBoxes(chosen, cls) {
  return EVENT_TYPES.map((t) => h("label", { class: "check" }, h("input", { type: "checkbox", value: t, class: cls, checked: (chosen || []).includes(t) }), t));
}
function checkedTypes(root, cls) { return [...root.querySelectorAll("input." + cls)].filter((c) => c.checked).map((c) => c.value); }
function typesText(types) { return types && types.length ? types.join(", ") : "every type"; }
// urlText is a URL that may break after its / . ? & = (a <wbr> each), never
// inside a word while those come first.
function urlText(u) { return String(u).split(/(?<=[/.?&=])/).flatMap((part, i) => (i ? [h("wbr"), part] : [part])); }

// rate says how an endpoint's deliveries went over the last day.
function rate(s) {
  if (!s) return h("span", { class: "muted" }, "—");
  if (s.successRate === null) return h("span", { class: "muted rate" }, "no attempts in 24 h");
  const pct = Math.round(s.successRate * 1000) / 10;
  return h("span", { class: "rate " + (pct >= 99 ? "ok" : pct >= 80 ? "warn" : "bad") }, pct + " %",
    h("span", { class: "muted small" }, " of " + plural(s.attempts, "attempt") + (s.complete ? "" : ", newest " + plural(s.deliveries, "event"))));
}

// stateOf is an endpoint's state: enabled, failing, or disabled (since
// when, and why).
function stateOf(e) {
  const hl = e.health || {};
  if (!e.enabled) {
    return [tag("disabled"), h("div", { class: "small" }, "since " + when(hl.disabledAt)), hl.disabledReason ? h("div", { class: "small muted" }, hl.disabledReason) : null];
  }
  return hl.failingSince ? [tag("failing"), h("div", { class: "small" }, "since " + when(hl.failingSince))] : tag("enabled");
}

function webhooksPanel(companyId) {
  const body = h("div");
  const msg = h("p", { class: "error" });
  const turn = turns();
  const load = async () => {
    const current = turn();
    let eps;
    try {
      eps = (await api("GET", "/admin/v1/companies/" + enc(companyId) + "/webhooks")).data || [];
    } catch (x) {
      if (current()) body.replaceChildren(h("p", { class: "muted" }, "Not available: " + problemText(x)));
      return;
    }
    const stats = await Promise.all(eps.map((e) => api("GET", "/admin/v1/webhooks/" + enc(e.id) + "/stats").catch(() => null)));
    if (!current()) return;
    body.replaceChildren(table(["Endpoint", "Mode", "Types", "State", "Success, last 24 h", "Last success", "Last error"], eps.map((e, i) =>
      h("tr", { "data-webhook": e.id }, h("td", {}, h("a", { href: "#/webhook/" + enc(e.id), class: "url" }, urlText(e.url)),
        e.description ? h("div", { class: "small" }, e.description) : null, h("div", { class: "mono muted small" }, e.id)),
      h("td", {}, e.mode), h("td", { class: "small" }, typesText(e.types)), h("td", {}, stateOf(e)), h("td", {}, rate(stats[i])),
      h("td", {}, when((e.health || {}).lastSuccessAt)), h("td", { class: "small last-error" }, (e.health || {}).lastError || "—"))), { id: "webhooks-table" }));
  };
  const mode = h("select", { id: "hook-mode" }, h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const url = h("input", { id: "hook-url", type: "url", required: true, placeholder: "https://erp.example.ao/webhooks", size: 36 });
  const desc = h("input", { id: "hook-description", maxlength: 500, size: 24 });
  const types = h("fieldset", { class: "types" }, h("legend", {}, "Event types (none: every type, including later ones)"), typeBoxes([], "hook-type"));
  const form = h("form", { class: "inline", id: "hook-form", onsubmit: async (e) => {
    e.preventDefault();
    msg.textContent = "";
    try {
      const v = await api("POST", "/admin/v1/companies/" + enc(companyId) + "/webhooks",
        { mode: mode.value, url: url.value.trim(), description: desc.value, types: checkedTypes(types, "hook-type") });
      showSecret(v.secret, "signing secret", "The receiver verifies each delivery's signature with it.", "Endpoint " + v.id);
      form.reset();
      await changed("hooks", "audit");
    } catch (x) { msg.textContent = problemText(x); }
  } }, h("label", {}, "Mode", mode), h("label", {}, "URL", url), h("label", {}, "Description", desc), types,
  h("button", { class: "primary", type: "submit" }, "Add endpoint"));
  const el = h("div", { class: "panel", id: "webhooks" }, h("h2", {}, "Webhook endpoints"), body, h("h3", {}, "New endpoint"), form, msg);
  return { el, load };
}

// webhookView is one endpoint's page: what it is, its health, what can be
// done to it, and its delivery log.
async function webhookView(id) {
  const e = await api("GET", "/admin/v1/webhooks/" + enc(id));
  await loadNames([e.companyId]);
  const msg = h("p", { class: "note", id: "endpoint-msg", role: "status" });
  const say = (text, bad) => { msg.textContent = text; msg.className = bad ? "error" : "note"; };
  const details = h("div", { class: "panel", id: "endpoint" });
  const health = h("div", { class: "panel", id: "health" });
  const log = deliveryLog(id, say, () => show());
  const turn = turns();
  const show = async () => {
    const current = turn();
    const [ep, stats] = await Promise.all([api("GET", "/admin/v1/webhooks/" + enc(id)), api("GET", "/admin/v1/webhooks/" + enc(id) + "/stats").catch(() => null)]);
    if (!current()) return ep;
    const hl = ep.health || {};
    details.replaceChildren(h("h2", {}, "Endpoint"), h("dl", { class: "facts" },
      h("dt", {}, "URL"), h("dd", { class: "mono url-text" }, urlText(ep.url)), h("dt", {}, "Description"), h("dd", {}, ep.description || "—"),
      h("dt", {}, "Mode"), h("dd", {}, ep.mode), h("dt", {}, "Types"), h("dd", { id: "endpoint-types" }, typesText(ep.types)),
      h("dt", {}, "State"), h("dd", { id: "endpoint-state" }, stateOf(ep)), h("dt", {}, "Created"), h("dd", {}, when(ep.createdAt)),
      h("dt", {}, "Secret made"), h("dd", {}, when(ep.secretRotatedAt)),
      h("dt", {}, "Previous secret signs until"), h("dd", { id: "previous-secret" }, ep.previousSecretUntil ? when(ep.previousSecretUntil) + " (" + duration(ep.previousSecretUntil) + ")" : "—"),
      ep.expiresAt ? [h("dt", {}, "Temporary, until"), h("dd", {}, when(ep.expiresAt))] : null));
    health.replaceChildren(h("h2", {}, "Health"), h("dl", { class: "facts" },
      h("dt", {}, "Success, last 24 h"), h("dd", { id: "success-rate" }, rate(stats),
        stats ? h("div", { class: "small muted" }, plural(stats.deliveries, "event") + ": " + fmt(stats.delivered) + " delivered, " + fmt(stats.pending) + " pending, " + fmt(stats.failed) + " failed") : null),
      h("dt", {}, "Last success"), h("dd", {}, when(hl.lastSuccessAt)),
      h("dt", {}, "Failing since"), h("dd", {}, when(hl.failingSince)),
      h("dt", {}, "Last error"), h("dd", { id: "last-error", class: "mono" }, hl.lastError || "—"),
      h("dt", {}, "Disabled"), h("dd", {}, hl.disabledAt ? when(hl.disabledAt) + (hl.disabledReason ? ": " + hl.disabledReason : "") : "—")));
    toggle.textContent = ep.enabled ? "Disable" : "Enable";
    toggle.dataset.enabled = ep.enabled;
    typesForm.replaceChildren(h("fieldset", { class: "types" }, h("legend", {}, "Event types (none: every type)"), typeBoxes(ep.types, "edit-type")),
      h("button", { type: "submit" }, "Save types"));
    return ep;
  };
  const act = async (fn) => {
    try { say(await fn()); } catch (x) { say(problemText(x), true); return; }
    await Promise.all([show(), log.load()]);
  };
  const toggle = h("button", { type: "button", id: "toggle", onclick: () => act(async () => {
    const on = toggle.dataset.enabled !== "true";
    await api("PATCH", "/admin/v1/webhooks/" + enc(id), { enabled: on });
    return on ? "Enabled: waiting events are delivered." : "Disabled: events wait until it is enabled again.";
  }) }, "Disable");
  const typesForm = h("form", { class: "inline", id: "types-form", onsubmit: (ev) => {
    ev.preventDefault();
    act(async () => {
      await api("PATCH", "/admin/v1/webhooks/" + enc(id), { types: checkedTypes(typesForm, "edit-type") });
      return "Event types saved.";
    });
  } });
  // In UTC, as every time on the page: a day ago, unless changed.
  const since = utcInput("recover-since", new Date(Date.now() - 86400e3), true);
  const actions = h("div", { class: "panel", id: "actions" }, h("h2", {}, "Actions"),
    h("div", { class: "buttons" },
      h("button", { type: "button", class: "primary", id: "send-test", onclick: () => act(async () => {
        const v = await api("POST", "/admin/v1/webhooks/" + enc(id) + "/test");
        return "Test event " + v.eventId + " queued.";
      }) }, "Send test event"), toggle,
      h("button", { type: "button", id: "rotate", onclick: () => rotate(id, show, say) }, "Rotate secret…"),
      h("button", { type: "button", class: "danger", id: "delete", onclick: () => remove(e, say) }, "Delete…")),
    h("form", { class: "inline", id: "recover-form", onsubmit: (ev) => {
      ev.preventDefault();
      act(async () => {
        const v = await api("POST", "/admin/v1/webhooks/" + enc(id) + "/recover", { since: utcValue(since).toISOString() });
        return plural(v.queued, "delivery", "deliveries") + " queued again: " + fmt(v.failed) + " failed, " + fmt(v.waiting) + " waiting for a retry.";
      });
    } }, h("label", {}, "Send again, now, every delivery that failed or waits for a retry, queued since (UTC)", since), h("button", { type: "submit" }, "Recover")),
    typesForm, msg);
  const view = h("div", { id: "webhook", "data-webhook": id },
    h("p", { class: "crumbs" }, companyLink(e.companyId), " › webhook endpoint"),
    h("h1", {}, "Webhook endpoint ", h("span", { class: "mono sub" }, id)), h("div", { id: "secret-slot" }),
    h("div", { class: "grid2" }, details, health), actions, log.el);
  await Promise.all([show(), log.load()]);
  return view;
}

async function rotate(id, show, say) {
  const overlap = overlapSelect("rotate-overlap");
  const form = await ask({ title: "Rotate the signing secret?", confirm: "Rotate secret",
    body: [h("p", {}, "A new secret signs every delivery; the old one signs beside it while the receiver moves to the new one."),
      h("label", {}, "The old secret keeps signing for", overlap)] });
  if (!form) return;
  try {
    const v = await api("POST", "/admin/v1/webhooks/" + enc(id) + "/rotate-secret", { overlapSeconds: Number(overlap.value) });
    showSecret(v.secret, "new signing secret", v.previousSecretUntil ? "The old one signs too until " + when(v.previousSecretUntil) + "." : "The old one no longer signs.");
    say("Secret rotated.");
    await show();
  } catch (x) { say(problemText(x), true); }
}

async function remove(e, say) {
  const form = await ask({ title: "Delete this endpoint?", confirm: "Delete endpoint", danger: true,
    body: h("p", {}, "Deleting ", h("span", { class: "mono url-text" }, urlText(e.url)), " drops its waiting events and its delivery log. This cannot be undone.") });
  if (!form) return;
  try {
    await api("DELETE", "/admin/v1/webhooks/" + enc(e.id));
    location.hash = "#/company/" + enc(e.companyId);
  } catch (x) { say(problemText(x), true); }
}
