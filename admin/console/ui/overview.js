// The overview across companies, and the traffic charts it shares with a
// company's page.
"use strict";

const COLORS = { "2xx": "#12b76a", "3xx": "#2e90fa", "4xx": "#f79009", "429": "#7a5af8", "5xx": "#d92d20" };

// niceStep is the first of steps that leaves at most `most` ticks over n
// rows: ticks at round intervals (every 10 minutes, every 7 days), never
// every 8 or 22.
function niceStep(n, most, steps) {
  return steps.find((s) => n / s <= most) || steps[steps.length - 1];
}

// chart draws stacked bars of status classes per period, the 429s (which
// the 4xx count too) a segment of their own, each segment at least 2 px
// high, and a mark over each bar with 429s, so that a few among many are
// seen; rows are [{label, live: {2xx..}, test: {...}, rateLimited}].
// Without a request in the period it says so (empty), not an empty frame.
function chart(rows, title, empty) {
  const W = 1000, H = 170, pad = 24;
  const classes = ["2xx", "3xx", "4xx", "429", "5xx"];
  const count = (r, c) => {
    const n = (k) => ((r.live || {})[k] || 0) + ((r.test || {})[k] || 0);
    const lim = ((r.rateLimited || {}).live || 0) + ((r.rateLimited || {}).test || 0);
    if (c === "429") return Math.min(lim, n("4xx"));
    if (c === "4xx") return n("4xx") - Math.min(lim, n("4xx"));
    return n(c);
  };
  const totals = rows.map((r) => classes.reduce((a, c) => a + count(r, c), 0));
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
  const step = niceStep(rows.length, 8, [1, 2, 5, 10, 15, 30, 60]);
  rows.forEach((r, i) => {
    let y = H;
    const x = pad + i * bw + 1, wd = Math.max(1, bw - 2);
    for (const c of classes) {
      const n = count(r, c);
      if (!n) continue;
      const hgt = Math.max(2, (n / top) * (H - 24));
      y -= hgt;
      const rect = add("rect", { x, y, width: wd, height: hgt, fill: COLORS[c], "data-class": c });
      const tip = document.createElementNS(ns, "title");
      tip.textContent = `${r.label}: ${n} ${c === "429" ? "429 (rate limited)" : c}`;
      rect.append(tip);
    }
    if (count(r, "429")) {
      const cx = x + wd / 2;
      add("path", { d: `M${cx - 4} ${y - 9} L${cx + 4} ${y - 9} L${cx} ${y - 3} Z`, fill: COLORS["429"], class: "limited-mark" });
    }
    if (i % step === 0) add("text", { x: pad + i * bw, y: H + 14, "font-size": 10, fill: "#667085" }, r.label);
  });
  const legend = h("div", { class: "legend" }, classes.map((c) => h("span", {}, h("i", {}), c === "429" ? "429 (rate limited, ▼ over the bar)" : c === "4xx" ? "other 4xx" : c)));
  legend.querySelectorAll("i").forEach((el, i) => { el.style.background = COLORS[classes[i]]; });
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
