// A company's page: its limits, keys, webhook endpoints, traffic and audit
// log. After a change, the panels it touches are read again at once.
"use strict";

async function companyView(id) {
  const [minutes, days] = await Promise.all([
    api("GET", "/admin/v1/companies/" + enc(id) + "/usage/minutes?minutes=60"),
    api("GET", "/admin/v1/companies/" + enc(id) + "/usage?days=30"),
    loadNames([id]),
  ]);
  const c = companies.get(minutes.companyId);
  const title = c
    ? h("h1", {}, c.name, " ", c.status !== "active" ? tag(c.status) : null, h("span", { class: "sub" }, h("span", { class: "mono" }, minutes.companyId), " · NIF ", h("span", { class: "mono", id: "company-nif" }, c.nif)))
    : h("h1", {}, "Company ", h("span", { class: "mono" }, minutes.companyId));
  const keys = keysPanel(minutes.companyId);
  const hooks = webhooksPanel(minutes.companyId);
  const audit = auditPanel(minutes.companyId);
  const shape = shapePanel(minutes.companyId);
  const view = h("div", { id: "company", "data-company": minutes.companyId }, title, h("div", { id: "secret-slot" }),
    limitsPanel(minutes.companyId, minutes), shape.el, keys.el, hooks.el,
    chart(minutes.minutes.map((m) => ({ ...m, label: minuteUTC(m.time) })), "Requests per minute, last hour (UTC)", "No requests in the last hour."),
    chart(days.days.map((d) => ({ ...d, label: d.date.slice(5) })), "Requests per day, last 30 days (Luanda's days: each from 23:00 UTC the day before)", "No requests in the last 30 days."),
    audit.el);
  // What a change touches is read again: a key's list and the audit log.
  view.refresh = { keys: keys.refresh, hooks: hooks.load, audit: audit.load };
  shape.load(); // a replay of the window: the page does not wait for it
  await Promise.all([keys.load(), hooks.load(), audit.load()]);
  return view;
}

// changed reads again the panels a change touched.
function changed(...what) {
  const view = document.getElementById("company");
  if (view && view.refresh) return Promise.all(what.map((w) => view.refresh[w]()));
  return Promise.resolve();
}

function limitsPanel(id, minutes) {
  const l = minutes.limits, r = minutes.rate;
  const msg = h("p", { class: "error" });
  const mode = h("select", { id: "limit-mode" }, h("option", { value: "" }, "both"), h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const rate = h("input", { id: "limit-rate", type: "number", step: "any", min: "0.001", value: l.live.rate, required: true });
  const burst = h("input", { id: "limit-burst", type: "number", min: "1", value: l.live.burst, required: true });
  const row = (name, lim, now) => h("tr", {}, h("td", {}, name), h("td", { class: "limit-rate" }, lim.rate + " rps"), h("td", {}, String(lim.burst)),
    h("td", {}, lim.custom ? tag("custom") : h("span", { class: "muted" }, "default")), h("td", {}, now.toFixed(2) + " rps"));
  return h("div", { class: "panel", id: "limits" }, h("h2", {}, "Rate limits"),
    table(["Mode", "Rate", "Burst", "", "Now (last complete minute)"], [row("LIVE", l.live, r.live), row("TEST", l.test, r.test)]),
    h("form", { class: "inline", id: "limit-form", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("PUT", "/admin/v1/companies/" + enc(id) + "/limits", { mode: mode.value, rate: Number(rate.value), burst: Number(burst.value) });
        render();
      } catch (x) { msg.textContent = problemText(x); }
    } }, h("label", {}, "Mode", mode), h("label", {}, "Rate (requests/s)", rate), h("label", {}, "Burst", burst),
    h("button", { class: "primary", type: "submit" }, "Set limit"),
    h("button", { type: "button", onclick: async () => {
      try { await api("DELETE", "/admin/v1/companies/" + enc(id) + "/limits"); render(); } catch (x) { msg.textContent = problemText(x); }
    } }, "Reset to defaults")), msg, whatIfPanel(id, mode, rate, burst));
}

// roll asks for the overlap, rolls, shows the new secret once and reads
// the keys and the audit log again: the old key's new expiry, the new key
// and key.rolled are on the page at once.
async function roll(k, msg) {
  const overlap = overlapSelect("roll-overlap");
  const form = await ask({
    title: "Roll key " + (k.name || k.id) + "?", confirm: "Roll key",
    body: [h("p", {}, "A new secret replaces ", h("span", { class: "mono" }, k.id), " with the same grants (mode, scopes, networks, expiry)."),
      h("label", {}, "The old key keeps working for", overlap)],
  });
  if (!form) return;
  try {
    const v = await api("POST", "/admin/v1/keys/" + enc(k.id) + "/roll", { overlapSeconds: Number(overlap.value) });
    const until = v.previous.expiresAt;
    showSecret(v.key, "new key", Number(overlap.value) === 0 ? "The old key stopped now." : "The old key works until " + when(until) + " (" + duration(until) + ").", "Key id " + v.id);
    await changed("keys", "audit");
  } catch (x) { msg.textContent = problemText(x); }
}

// revoke asks, and revokes. A key made by a roll is revoked with the key
// it replaced while that one still works (its overlap), unless the box is
// unticked: the dialog names that key and until when it works, and what
// was done is said after.
async function revoke(k, msg) {
  let prev = null;
  if (k.replaces) {
    try { prev = await api("GET", "/admin/v1/keys/" + enc(k.replaces)); } catch (x) { prev = null; }
    if (prev && prev.state !== "active") prev = null;
  }
  const also = prev ? h("input", { type: "checkbox", id: "revoke-previous", checked: true }) : null;
  const form = await ask({
    title: "Revoke key " + (k.name || k.id) + "?", confirm: "Revoke key", danger: true,
    body: [h("p", {}, "Every gateway refuses ", h("span", { class: "mono" }, k.id), " within a second. This cannot be undone."),
      prev ? h("label", { class: "check", id: "revoke-previous-label" }, also, h("span", {}, "Also revoke ", h("span", { class: "mono" }, prev.id),
        ", the key it replaced, which still works until " + when(prev.expiresAt) + " (" + duration(prev.expiresAt) + ")")) : null],
  });
  if (!form) return;
  try {
    const v = await api("DELETE", "/admin/v1/keys/" + enc(k.id) + (also && !also.checked ? "?keepPrevious=true" : ""));
    await changed("keys", "audit");
    const note = document.getElementById("keys-note");
    if (note) {
      note.textContent = (v.alsoRevoked || []).map((p) => "Revoked " + k.id + " and " + p.id + ", the key it replaced.").join(" ") +
        (v.stillActive || []).map((p) => "Revoked " + k.id + "; " + p.id + ", the key it replaced, still works until " + when(p.expiresAt) + ".").join(" ");
    }
  } catch (x) { msg.textContent = problemText(x); }
}

function keyRow(k) {
  const actions = h("td", { class: "actions" });
  const msg = h("div", { class: "error" });
  if (k.state === "active") {
    actions.append(h("button", { type: "button", class: "roll", onclick: () => roll(k, msg) }, "Roll"), " ",
      h("button", { type: "button", class: "danger revoke", onclick: () => revoke(k, msg) }, "Revoke"), msg);
  }
  const links = [k.replaces ? h("div", { class: "muted small" }, "replaces ", h("span", { class: "mono" }, k.replaces)) : null,
    k.replacedBy ? h("div", { class: "muted small" }, "rolled to ", h("span", { class: "mono" }, k.replacedBy)) : null];
  return h("tr", { "data-key": k.id, "data-state": k.state },
    h("td", {}, k.name || h("span", { class: "muted" }, "(no name)"), h("div", { class: "mono small" }, k.id), h("div", { class: "mono muted small" }, k.hint)),
    h("td", {}, k.mode), h("td", { class: "small" }, (k.scopes || []).join(", ")),
    h("td", { class: "state" }, tag(k.state), links), h("td", {}, whenCell(k.createdAt)), h("td", {}, whenCell(k.lastUsedAt)),
    h("td", { class: "expires" }, whenCell(k.expiresAt), k.expiresAt && k.state === "active" ? h("div", { class: "muted small" }, duration(k.expiresAt)) : null),
    h("td", { class: "mono small" }, (k.allowedCidrs || []).join(" ") || "any"), actions);
}

function keysPanel(id) {
  const msg = h("p", { class: "error" });
  const mode = h("select", { id: "key-mode" }, h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const name = h("input", { id: "key-name", maxlength: 100 });
  const scopeNames = ["invoices:read", "clients:read", "clients:write", "events:read"];
  // Reading is granted by default; creating clients and reading the events feed are asked for.
  const scopes = scopeNames.map((s) => h("input", { type: "checkbox", value: s, checked: s === "invoices:read" || s === "clients:read", class: "key-scope" }));
  const expiry = utcInput("key-expiry");
  const nets = h("input", { id: "key-cidrs", placeholder: "e.g. 203.0.113.0/24, 2001:db8::/32", size: 30 });
  const list = pager({
    id: "keys-table", row: keyRow, empty: "No keys yet.",
    head: ["Key", "Mode", "Scopes", "State", "Created", "Last used", "Expires", "Networks", ""],
    path: (cursor) => "/admin/v1/keys" + q({ companyId: id, limit: 20, cursor }),
  });
  const form = h("form", { class: "inline", id: "key-form", onsubmit: async (e) => {
    e.preventDefault();
    msg.textContent = "";
    const body = { companyId: id, mode: mode.value, name: name.value, scopes: scopes.filter((c) => c.checked).map((c) => c.value) };
    const cidrs = nets.value.split(",").map((s) => s.trim()).filter(Boolean);
    if (cidrs.length) body.allowedCidrs = cidrs;
    try {
      const expires = utcValue(expiry);
      if (expires) body.expiresAt = expires.toISOString();
      const v = await api("POST", "/admin/v1/keys", body);
      showSecret(v.key, "key", "", "Key id " + v.id);
      form.reset();
      await changed("keys", "audit");
    } catch (x) { msg.textContent = problemText(x); }
  } }, h("label", {}, "Mode", mode), h("label", {}, "Name", name),
  h("fieldset", {}, h("legend", {}, "Scopes"), scopes.map((c, i) => h("label", { class: "check" }, c, scopeNames[i]))),
  h("label", {}, "Expires (optional; UTC)", expiry), h("label", {}, "Source networks (optional)", nets),
  h("button", { class: "primary", type: "submit" }, "Create key"));
  return { el: h("div", { class: "panel", id: "keys" }, h("h2", {}, "API keys"), h("p", { id: "keys-note", class: "small", role: "status" }), list.el, h("h3", {}, "New key"), form, msg), load: list.load, refresh: list.refresh };
}
