// The overview across companies, and the traffic charts it shares with a
// company's page.
"use strict";

const COLORS = { "2xx": "#12b76a", "3xx": "#2e90fa", "4xx": "#f79009", "5xx": "#d92d20", limited: "#7a5af8" };

// chart draws stacked bars of status classes per period, 429s as a line
// of dots; rows are [{label, live: {2xx..}, test: {...}, rateLimited}].
// Without a request in the period it says so (empty), not an empty frame.
function chart(rows, title, empty) {
  const W = 1000, H = 170, pad = 24;
  const classes = ["2xx", "3xx", "4xx", "5xx"];
  const totals = rows.map((r) => classes.reduce((a, c) => a + ((r.live || {})[c] || 0) + ((r.test || {})[c] || 0), 0));
  if (!totals.some((n) => n > 0)) return h("div", { class: "panel chart-panel" }, h("b", {}, title), h("p", { class: "muted no-traffic" }, empty));
  const top = Math.max(1, ...totals);
  const bw = (W - pad) / Math.max(1, rows.length);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H + 18}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", title);
  const add = (tagName, attrs, text) => {
    const el = document.createElementNS(ns, tagName);
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
  const keys = [...classes, "limited"];
  const legend = h("div", { class: "legend" }, keys.map((c) => h("span", {}, h("i", {}), c === "limited" ? "429" : c)));
  legend.querySelectorAll("i").forEach((el, i) => { el.style.background = COLORS[keys[i]]; });
  return h("div", { class: "panel chart-panel" }, h("b", {}, title), legend, svg);
}

async function overviewView() {
  const o = await api("GET", "/admin/v1/overview?top=10");
  await loadNames([...(o.topToday || []), ...(o.topLastHour || []), ...(o.nearLimit || [])].map((c) => c.companyId));
  const rows = (list, limited) => list.map((c) => h("tr", {}, h("td", {}, companyLink(c.companyId)), h("td", {}, fmt(c.requests)),
    limited ? h("td", {}, fmt(c.rateLimited)) : null));
  const totals = (o.minutes || []).reduce((a, m) => {
    for (const [k, v] of Object.entries(m.live || {})) a[k] = (a[k] || 0) + v;
    for (const [k, v] of Object.entries(m.test || {})) a[k] = (a[k] || 0) + v;
    a.limited += (m.rateLimited || {}).live + (m.rateLimited || {}).test || 0;
    return a;
  }, { limited: 0 });
  const card = (label, value, id) => h("div", { class: "card" }, h("span", {}, label), h("b", { id }, fmt(value)));
  return h("div", { id: "overview" }, h("h1", {}, "Overview ", h("span", { class: "muted", id: "overview-date" }, o.date + " (today in Luanda, from 23:00 UTC)")),
    h("div", { class: "cards", id: "cards" },
      card("Companies with traffic today", o.activeToday, "active-today"),
      card("… in the last hour", o.activeLastHour, "active-hour"),
      ["2xx", "4xx", "5xx"].map((c) => card(c + " in the last hour", totals[c])),
      card("429s in the last hour", totals.limited, "limited-hour")),
    chart((o.minutes || []).map((m) => ({ ...m, label: minuteUTC(m.time) })), "All companies, per minute, last hour (UTC)", "No requests in the last hour."),
    h("div", { class: "grid2" },
      h("div", {}, h("h2", {}, "Busiest today"), table(["Company", "Requests", "429s"], rows(o.topToday || [], true), { id: "top-today" })),
      h("div", {}, h("h2", {}, "Busiest in the last hour"), table(["Company", "Requests"], rows(o.topLastHour || [], false)))),
    h("h2", {}, "Near their limit"),
    table(["Company", "LIVE rate / limit", "TEST rate / limit", "429s today"], (o.nearLimit || []).map((n) => h("tr", {},
      h("td", {}, companyLink(n.companyId)),
      h("td", {}, n.rate.live.toFixed(2) + " / " + n.limits.live.rate + " rps"),
      h("td", {}, n.rate.test.toFixed(2) + " / " + n.limits.test.rate + " rps"),
      h("td", {}, fmt(n.rateLimitedToday))))),
    headroomPanel());
}

// companiesView is the search of companies by name or NIF.
function companiesView(text) {
  const input = h("input", { id: "search-text", value: text, placeholder: "Name or NIF", "aria-label": "Name or NIF", size: 40 });
  const list = pager({
    id: "companies", head: ["Name", "NIF", "Status", "Id"], empty: "No company has that in its name or NIF.",
    path: (cursor) => "/admin/v1/companies" + q({ search: text, limit: 25, cursor }),
    row: (c) => { companies.set(c.id, c); return h("tr", { "data-company": c.id }, h("td", {}, h("a", { href: "#/company/" + enc(c.id) }, c.name)),
      h("td", { class: "mono" }, c.nif), h("td", {}, tag(c.status)), h("td", { class: "mono muted" }, c.id)); },
  });
  list.load();
  return h("div", { id: "search" }, h("h1", {}, "Companies"),
    h("form", { class: "inline", onsubmit: (e) => { e.preventDefault(); location.hash = "#/companies/" + enc(input.value.trim()); } },
      h("label", {}, "Find by name or NIF", input), h("button", { class: "primary", type: "submit" }, "Search")),
    h("div", { class: "panel" }, list.el));
}
