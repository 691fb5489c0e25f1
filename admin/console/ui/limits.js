// Tuning limits from the recorded traffic: what the limit being typed would
// have refused, shown beside the limit form before it is set; a company's
// requests per second, hour by hour, against its limit; and across
// companies, who comes nearest their limit and who stays far below it.
"use strict";

// The windows a what-if or a shape looks back over (the API's since).
const WINDOWS = [["24h", "the last 24 hours"], ["7d", "the last 7 days"], ["30d", "the last 30 days"]];

function windowSelect(id) {
  return h("select", { id }, WINDOWS.map(([v, label]) => h("option", { value: v }, label)));
}
function windowName(v) { return (WINDOWS.find((w) => w[0] === v) || WINDOWS[0])[1]; }
// minuteWhen is a time to the minute, in UTC like every time on the page.
function minuteWhen(t) { return when(t).slice(0, 16) + " UTC"; }
// fill replaces el's children by kids, as h() takes them (lists
// flattened, null left out).
function fill(el, ...kids) { el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false)); }
function rps(n) { return Number(n).toLocaleString("en-US", { maximumFractionDigits: 3 }) + " rps"; }
function pct(share) { return (100 * share).toFixed(2) + " %"; }

// refusedText sums up one limit's outcome over the window.
function refusedText(o) {
  if (!o.refused) return "none refused";
  let s = fmt(o.refused) + " refused (" + pct(o.refusedShare) + ") in " + plural(o.refusedMinutes, "minute") + " (" + plural(o.refusedSeconds, "second") + ")";
  const w = o.worstMinute;
  if (w) s += "; worst minute " + minuteWhen(w.start) + ", " + fmt(w.refused) + " refused of " + fmt(w.offered);
  return s;
}

// whatIfPanel shows, under the limit form, what the rate and burst typed
// would have refused of the company's recorded traffic, and what the limit
// in force would have: read again a moment after the typing stops (never
// while each key is pressed), and only ever the newest answer drawn. For
// both modes, each mode's own traffic against its own limit.
function whatIfPanel(companyId, mode, rate, burst) {
  const win = windowSelect("whatif-window");
  const out = h("div", { id: "whatif-result", "aria-live": "polite" });
  const turn = turns();
  let timer = 0;
  const useBurst = (b) => { burst.value = b; schedule(0); };
  const modeBlock = (v) => {
    if (!v.offered) return h("p", { class: "muted", "data-mode": v.mode }, "No " + v.mode + " requests recorded over " + windowName(win.value) + ": nothing to refuse.");
    const fit = v.smallestBurst;
    return h("div", { class: "whatif-mode", "data-mode": v.mode },
      h("p", { class: "whatif-proposed" }, h("b", {}, v.mode + " with " + rps(v.proposed.rate) + ", burst " + fmt(v.proposed.burst) + ": "),
        "of " + plural(v.offered, "request") + ", ", h("span", { class: v.proposed.refused ? "bad" : "ok" }, refusedText(v.proposed)), "."),
      h("p", { class: "whatif-current muted" }, "Refused by the gateway, as recorded (the limit in force now: " + rps(v.current.rate) + ", burst " + fmt(v.current.burst) + (v.current.custom ? ", custom" : ", default") + "): " + refusedText(v.current) + "."),
      h("p", { class: "whatif-fit muted" }, fit.tooFewRequests
        ? "No smallest burst suggested: " + plural(v.offered, "request") + " recorded, too few to say (100 at least)."
        : fit.burst === null
          ? "No burst up to 100,000 refuses at most " + pct(fit.maxRefusedShare) + " at " + rps(v.proposed.rate) + "."
          : ["Smallest burst refusing at most " + pct(fit.maxRefusedShare) + " at " + rps(v.proposed.rate) + ": " + fmt(fit.burst) + " (" + fmt(fit.refused) + " refused) ",
            fit.burst !== v.proposed.burst ? h("button", { type: "button", class: "use-burst", onclick: () => useBurst(fit.burst) }, "Use burst " + fmt(fit.burst)) : null]),
      (v.approximate || []).map((a) => h("p", { class: "whatif-approximate muted small" }, "Approximate: " + ({
        summarized: "the " + plural(v.summarizedSeconds, "second") + " older than 48 hours are estimated from per-minute summaries.",
        retries: "requests were refused, and their clients' retries are in the traffic replayed.",
        short_bursts: plural(v.shortBursts, "burst") + " shorter than 125 ms, each refused up to what the rate refills in 62.5 ms more or less than said.",
      }[a] || a))));
  };
  const read = async () => {
    const current = turn();
    if (!rate.value || !burst.value || !rate.checkValidity() || !burst.checkValidity()) {
      fill(out, h("p", { class: "muted" }, "Type a rate and a burst to see what they would have refused."));
      return;
    }
    const modes = mode.value ? [mode.value] : ["LIVE", "TEST"];
    const since = win.value;
    fill(out, h("p", { class: "muted" }, "Replaying " + windowName(since) + " of recorded traffic…"));
    try {
      const views = await Promise.all(modes.map((m) => api("GET", "/admin/v1/companies/" + enc(companyId) + "/limits/whatif" + q({ mode: m, rate: rate.value, burst: burst.value, since }))));
      if (!current()) return;
      fill(out, h("p", { class: "whatif-window muted small" }, "Over " + windowName(since) + " (" + minuteWhen(views[0].from) + " to " + minuteWhen(views[0].to) + "), before the change is made:"),
        views.map(modeBlock));
    } catch (x) { if (current()) fill(out, h("p", { class: "error" }, problemText(x))); }
  };
  // schedule reads after ms without another change: a late answer of an
  // earlier value never draws over a newer one (turn).
  const schedule = (ms) => { clearTimeout(timer); timer = setTimeout(read, ms); };
  for (const el of [rate, burst]) el.addEventListener("input", () => schedule(400));
  for (const el of [mode, win]) el.addEventListener("change", () => schedule(0));
  schedule(0);
  return h("div", { id: "whatif", class: "whatif" }, h("h3", {}, "What this limit would have refused ", h("label", { class: "inline-label" }, "over", win)), out);
}

// SVG building, for the shape's chart.
const SVG = "http://www.w3.org/2000/svg";
function svg(tagName, attrs, text) {
  const el = document.createElementNS(SVG, tagName);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

// shapeChart draws each hour's busiest second (light), p99 (solid) and
// p50 (a tick), against the limit's rate (a dashed line).
function shapeChart(v) {
  const W = 1000, H = 170, pad = 34;
  const top = Math.max(v.limit.rate, ...v.hours.map((x) => x.max)) * 1.08;
  const y = (n) => H - (n / top) * (H - 10);
  const bw = (W - pad) / Math.max(1, v.hours.length);
  const step = niceStep(v.hours.length, 8, [1, 2, 3, 6, 12, 24, 48, 72, 168]);
  const el = svg("svg", { viewBox: `0 0 ${W} ${H + 18}`, class: "chart shape-chart", role: "img",
    "aria-label": "Requests per second of each hour's busy seconds (p50, p99, busiest) against the limit" });
  el.append(svg("line", { x1: pad, y1: H, x2: W, y2: H, stroke: "#e4e7ec" }));
  v.hours.forEach((x, i) => {
    const at = pad + i * bw, wd = Math.max(1, bw - 2);
    if (x.busySeconds) {
      const g = svg("g", { "data-hour": x.start });
      g.append(svg("title", {}, minuteWhen(x.start) + ": p50 " + x.p50 + ", p99 " + x.p99 + ", busiest " + x.max + " requests/s; " + fmt(x.requests) + " requests"),
        svg("rect", { x: at + 1, y: y(x.max), width: wd, height: H - y(x.max), fill: "#d1e0ff" }),
        svg("rect", { x: at + 1, y: y(x.p99), width: wd, height: H - y(x.p99), fill: x.p99 > v.limit.rate ? "#d92d20" : "#155eef" }),
        svg("rect", { x: at + 1, y: y(x.p50) - 1, width: wd, height: 2, fill: "#101828" }));
      el.append(g);
    }
    // Ticks at round hours of the clock (UTC): every 1, 2, 3, 6, 12 or 24
    // hours, at midnight for a day or more.
    if (Math.floor(Date.parse(x.start) / 3600e3) % step === 0) el.append(svg("text", { x: at, y: H + 14, "font-size": 10, fill: "#667085", class: "tick" }, minuteWhen(x.start).slice(5, 16)));
  });
  const limitY = y(v.limit.rate);
  el.append(svg("line", { x1: pad, y1: limitY, x2: W, y2: limitY, stroke: "#d92d20", "stroke-dasharray": "6 4", class: "limit-line" }),
    svg("text", { x: 0, y: limitY + 4, "font-size": 10, fill: "#d92d20", class: "axis-label" }, String(v.limit.rate)));
  // The top's label only where it clears the limit's by more than a line.
  if (limitY + 4 - 10 >= 24) el.append(svg("text", { x: 0, y: 10, "font-size": 10, fill: "#667085", class: "axis-label" }, String(Math.round(top))));
  const legend = h("div", { class: "legend" }, [["#d1e0ff", "busiest second"], ["#155eef", "p99 (red above the limit)"], ["#101828", "p50"], ["#d92d20", "limit (rate)"]]
    .map(([c, label]) => h("span", {}, h("i", { "data-color": c }), label)));
  legend.querySelectorAll("i").forEach((i) => { i.style.background = i.dataset.color; });
  return [legend, el];
}

// shapePanel is a company's requests per second, hour by hour, over a
// window, against the limit in force: of its busy seconds (those with a
// request), the median, the 99th percentile and the busiest.
function shapePanel(companyId) {
  const mode = h("select", { id: "shape-mode" }, h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const win = windowSelect("shape-window");
  const body = h("div", { id: "shape-body" });
  const turn = turns();
  const load = async () => {
    const current = turn();
    try {
      const v = await api("GET", "/admin/v1/companies/" + enc(companyId) + "/limits/shape" + q({ mode: mode.value, since: win.value }));
      if (!current()) return;
      const w = v.window, lim = v.limit;
      const limitText = rps(lim.rate) + ", burst " + fmt(lim.burst) + (lim.custom ? " (custom)" : " (default)");
      if (!w.busySeconds) {
        fill(body, h("p", { class: "muted no-traffic" }, "No " + v.mode + " requests over " + windowName(win.value) + ". Limit " + limitText + "."));
        return;
      }
      const busy = v.hours.filter((x) => x.busySeconds);
      const hourRow = (x) => h("tr", { "data-hour": x.start }, h("td", {}, minuteWhen(x.start)), h("td", {}, fmt(x.requests)), h("td", {}, fmt(x.busySeconds)),
        h("td", {}, String(x.p50)), h("td", { class: x.p99 > lim.rate ? "bad" : "" }, String(x.p99)), h("td", {}, String(x.max)));
      fill(body,
        h("p", { id: "shape-summary" }, "Of " + plural(w.busySeconds, "busy second") + " (" + fmt(w.requests) + " requests): p50 ", h("b", {}, String(w.p50)),
          ", p99 ", h("b", {}, String(w.p99)), ", busiest ", h("b", {}, String(w.max)), " requests/s; limit ", h("b", {}, limitText),
          " (p99 at " + Math.round((100 * w.p99) / lim.rate) + " % of the rate)."),
        shapeChart(v),
        v.summarizedSeconds ? h("p", { class: "muted small" }, "The " + plural(v.summarizedSeconds, "second") + " older than 48 hours are estimated from per-minute summaries.") : null,
        h("details", {}, h("summary", {}, "Hours with requests (" + busy.length + ")"),
          table(["Hour (UTC)", "Requests", "Busy seconds", "p50", "p99", "Busiest"], busy.map(hourRow), { id: "shape-hours" })));
    } catch (x) { if (current()) fill(body, h("p", { class: "muted" }, "Not available: " + problemText(x))); }
  };
  for (const el of [mode, win]) el.addEventListener("change", load);
  return { el: h("div", { class: "panel", id: "shape" }, h("h2", {}, "Requests per second, against the limit"),
    h("div", { class: "inline" }, h("label", {}, "Mode", mode), h("label", {}, "Over", win)), body), load };
}

// shareText is a share of a limit in per cent: whole ones, tenths below 10.
function shareText(s) { const p = 100 * s; return (p < 9.95 ? p.toFixed(1) : String(Math.round(p))) + " %"; }

// headroomPanel is the overview's companies nearest their limit, and those
// far below it (limits that could be lowered), by their p99 busy second of
// today and yesterday.
function headroomPanel() {
  const mode = h("select", { id: "headroom-mode" }, h("option", {}, "LIVE"), h("option", {}, "TEST"));
  const body = h("div");
  const turn = turns();
  const rows = (list) => list.map((c) => h("tr", { "data-company": c.companyId }, h("td", {}, companyLink(c.companyId)),
    h("td", {}, fmt(c.p99) + " requests/s"), h("td", {}, rps(c.limit.rate) + ", burst " + fmt(c.limit.burst), c.limit.custom ? [" ", tag("custom")] : null),
    h("td", { class: "share " + (c.share >= 1 ? "bad" : c.share >= 0.8 ? "warn" : "") }, shareText(c.share))));
  const load = async () => {
    const current = turn();
    try {
      const v = await api("GET", "/admin/v1/limits/headroom" + q({ mode: mode.value, top: 10 }));
      await loadNames([...v.nearest, ...v.farBelow].map((c) => c.companyId));
      if (!current()) return;
      const head = ["Company", "p99 busy second", "Limit", "Of the rate"];
      fill(body, h("p", { class: "muted small" }, plural(v.companies, "company", "companies") + " with " + v.mode + " traffic today or yesterday (Luanda)."),
        h("div", { class: "grid2" },
          h("div", {}, h("h3", {}, "Nearest their limit"), table(head, rows(v.nearest), { id: "headroom-nearest" })),
          h("div", {}, h("h3", {}, "Far below it (10 % or less: limits that could be lowered)"), table(head, rows(v.farBelow), { id: "headroom-far" }))));
    } catch (x) { if (current()) fill(body, h("p", { class: "muted" }, "Not available: " + problemText(x))); }
  };
  mode.addEventListener("change", load);
  load();
  return h("div", { class: "panel", id: "headroom" }, h("h2", {}, "Busiest seconds against the limit ", h("label", { class: "inline-label" }, "Mode", mode)), body);
}
