package admin_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// Tuning a limit in a real browser, from recorded traffic: the overview
// ranks the companies by their busiest seconds against their limits; on a
// company's page, what the rate and burst being typed would have refused is
// shown beside the limit form before anything is set (the limit stays as
// it was), worst minute in UTC, only ever the newest answer drawn; the
// smallest burst offered is taken with a click; the company's requests per
// second are drawn against its limit; and once the limit is set, what the
// gateway refused of the traffic stays what it recorded, beside the new
// limit.
func TestConsoleWhatIfInBrowser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	in := w.start()
	// Three minutes of company A's traffic two blocks ago (bursty: 10 a
	// second, 100 in one, 60 in three), a little of B's, and the demo's third
	// company at its own limit; summarized, so that the overview ranks them.
	t0 := time.Now().Truncate(10 * time.Minute).Add(-20 * time.Minute)
	in.clock.Set(t0.Add(3 * time.Minute))
	var src recorder
	for co, counts := range map[string][]int{coA: bursty(), coB: {2, 2, 1, 0, 2}, coS: {9, 10, 10, 8}} {
		for i, n := range counts {
			src.offer(co, invoicing.Live, t0.Add(time.Duration(i)*time.Second), n)
		}
	}
	if err := in.shape.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	for co, lim := range map[string]tenants.Limit{coA: {Rate: 50, Burst: 100}, coS: {Rate: 10, Burst: 10}} {
		if err := in.limiter.SetLimit(ctx, co, invoicing.Live, lim); err != nil {
			t.Fatal(err)
		}
	}
	in.clock.Set(t0.Add(12*time.Minute + time.Second))
	if err := in.shape.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, in)
	b.signIn(in.adminToken, "ana.silva")
	c := &whatIfTour{t: t, in: in, b: b, t0: t0}
	c.overview()
	c.inForce()
	c.typed()
	c.smallestBurst()
	c.lateAnswer()
	c.shape()
	c.set()
	c.charts()
}

// charts: over 7 days the ticks are a day apart, at midnight UTC; a
// company at its limit (the third, 10 a second at 10/s) has its limit's
// label on the axis, clear of any other.
func (c *whatIfTour) charts() {
	t, b := c.t, c.b
	choose(b, "#shape-window", "7d")
	ticks := b.until("7-day ticks", `(ts => ts.length >= 6 ? ts.map(e => e.textContent).join("|") : null)([...document.querySelectorAll("#shape svg text.tick")])`)
	parts := strings.Split(ticks, "|")
	for i, p := range parts {
		at, err := time.Parse("01-02 15:04", p)
		if err != nil || at.Hour() != 0 || at.Minute() != 0 {
			t.Errorf("tick %q of %q: not at midnight", p, ticks)
		}
		if prev, _ := time.Parse("01-02 15:04", parts[max(0, i-1)]); i > 0 && at.Sub(prev) != 24*time.Hour {
			t.Errorf("ticks %q: %s after %s", ticks, p, parts[i-1])
		}
	}
	b.open("#/company/"+coS, "#shape")
	b.until("the third company's shape", `document.querySelector("#shape svg .limit-line") ? "yes" : null`)
	gaps := b.until("axis labels", `(ls => ls.length + ":" + ls.map((a, i) => i ? Math.round(a.getBoundingClientRect().top - ls[i-1].getBoundingClientRect().bottom) : 0).join(","))`+
		`([...document.querySelectorAll("#shape svg text.axis-label")].sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top))`)
	n, rest, _ := strings.Cut(gaps, ":")
	for _, g := range strings.Split(rest, ",")[1:] {
		if px, _ := strconv.Atoi(g); px < 6 {
			t.Errorf("axis labels %s apart (%s of them): they touch", g, n)
		}
	}
	b.shotAt("w4-at-the-limit", "#shape")
}

// whatIfTour is TestConsoleWhatIfInBrowser's story, a step a method: what a
// step leaves for the next ones is in its fields.
type whatIfTour struct {
	t  *testing.T
	in *instance
	b  *browser
	t0 time.Time // the start of the recorded traffic

	worst    string // the worst minute at 20/s burst 40, as the page shows it
	fitBurst string // the smallest burst offered at 20/s
}

// overview ranks the companies by headroom: A's p99 busy second (60, counted
// as up to 63) over its 50/s, the third company at its limit, B far below its
// default 1000/s (2/s).
func (c *whatIfTour) overview() {
	t, b := c.t, c.b
	const ranked = `(rs => rs.length ? rs.map(r => r.dataset.company + " " + r.querySelector("td.share").textContent).join(", ") : null)([...document.querySelectorAll("%s tr[data-company]")])`
	// B is far below its limit, and so not among the nearest: never in both.
	if got := b.until("nearest", strings.Replace(ranked, "%s", "#headroom-nearest", 1)); got != coA+" 126 %, "+coS+" 100 %" {
		t.Errorf("nearest their limit: %q", got)
	}
	if got := b.until("far below", strings.Replace(ranked, "%s", "#headroom-far", 1)); got != coB+" 0.2 %" {
		t.Errorf("far below their limit: %q", got)
	}
	b.shotAt("w1-headroom", "#headroom")
}

// inForce opens company A's page: it predicts the limit in force for both modes.
func (c *whatIfTour) inForce() {
	t, b := c.t, c.b
	b.open("#/company/"+coA, "#whatif")
	got := c.prediction("the limit in force", "TEST")
	for _, want := range []string{"LIVE with 50 rps, burst 100: of 2,040 requests, none refused.", "No TEST requests recorded over the last 24 hours: nothing to refuse."} {
		if !strings.Contains(got, want) {
			t.Errorf("before typing, the prediction says %q; want %q in it", got, want)
		}
	}
}

// typed types LIVE, 20/s, burst 40: it is predicted; nothing is set.
func (c *whatIfTour) typed() {
	t, in, b, t0 := c.t, c.in, c.b, c.t0
	ctx := context.Background()
	choose(b, "#limit-mode", "LIVE")
	typeIn(b, "#limit-rate", "20")
	typeIn(b, "#limit-burst", "40")
	got := c.prediction("20/s burst 40", "burst 40:")
	worst := t0.Add(2 * time.Minute).UTC().Format("2006-01-02 15:04")
	fit, err := in.adm.Limits.WhatIf(ctx, admin.WhatIfQuery{CompanyID: coA, Mode: "LIVE", Rate: 20, Burst: 40, Since: in.clock.Now().Add(-24 * time.Hour), MaxRefused: admin.DefaultMaxRefused})
	if err != nil || fit.SmallestBurst.Burst == nil {
		t.Fatalf("what-if: %+v, %v", fit.SmallestBurst, err)
	}
	fitBurst := strconv.Itoa(*fit.SmallestBurst.Burst)
	for _, want := range []string{
		"Over the last 24 hours (",
		"LIVE with 20 rps, burst 40: of 2,040 requests, 122 refused (5.98 %) in 2 minutes (4 seconds); worst minute " + worst + " UTC, 81 refused of 750.",
		"Refused by the gateway, as recorded (the limit in force now: 50 rps, burst 100, custom): none refused.",
		"Smallest burst refusing at most 0.10 % at 20 rps: " + fitBurst + " (" + strconv.FormatInt(fit.SmallestBurst.Refused, 10) + " refused)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("typed 20/s burst 40, the prediction says %q; want %q in it", got, want)
		}
	}
	if strings.Contains(got, "TEST") {
		t.Errorf("LIVE chosen, the prediction still speaks of TEST: %q", got)
	}
	if l, err := in.adm.Limits.CompanyLimits(ctx, coA); err != nil || l.Live.Rate != 50 || l.Live.Burst != 100 {
		t.Fatalf("the limit changed before it was set: %+v, %v", l, err)
	}
	b.shotAt("w2-prediction", "#limits")
	c.worst, c.fitBurst = worst, fitBurst
}

// smallestBurst: the smallest burst, taken with a click, is predicted in turn.
func (c *whatIfTour) smallestBurst() {
	t, b, fitBurst := c.t, c.b, c.fitBurst
	b.run("use the burst", chromedp.Click("#whatif button.use-burst"))
	if got := c.prediction("the smallest burst", "burst "+fitBurst+":"); !strings.Contains(got, "LIVE with 20 rps, burst "+fitBurst+": of 2,040 requests, ") ||
		!b.is("burst field", `document.getElementById("limit-burst").value === `+jsString(fitBurst)) {
		t.Errorf("after Use burst %s: %q", fitBurst, got)
	}
}

// lateAnswer: a late answer never draws over a newer one: the answer for rate
// 30 is held back while burst 41 is typed and answered. Each is one edit (a
// paste), so that exactly one question is asked of each.
func (c *whatIfTour) lateAnswer() {
	t, in, b, fitBurst := c.t, c.in, c.b, c.fitBurst
	b.is("watch answers", `(f => { window.answered = [];
		window.fetch = async (...a) => { const r = await f(...a); const text = r.text.bind(r);
			r.text = async () => { const s = await text(); if (r.url.includes("/whatif")) setTimeout(() => window.answered.push(r.url), 0); return s; }; return r; };
		return true; })(window.fetch)`)
	held, release := in.hold.hold(t, "/admin/v1/companies/"+coA+"/limits/whatif")
	paste(b, "#limit-rate", "30")
	waitHeld(t, held, "the what-if for rate 30")
	paste(b, "#limit-burst", "41")
	c.prediction("30/s burst 41", "LIVE with 30 rps, burst 41:")
	release()
	b.until("the late answer", `window.answered.some(u => u.includes("&rate=30&burst=`+fitBurst+`&")) ? "yes" : null`)
	if got := c.prediction("after the late answer", "rps"); !strings.Contains(got, "LIVE with 30 rps, burst 41:") {
		t.Errorf("after the late answer for burst %s, the prediction says %q", fitBurst, got)
	}
}

// shape draws the company's requests per second against its limit.
func (c *whatIfTour) shape() {
	t, b, t0 := c.t, c.b, c.t0
	summary := b.until("shape", `(e => e ? e.textContent : null)(document.getElementById("shape-summary"))`)
	if want := "Of 180 busy seconds (2,040 requests): p50 10, p99 60, busiest 100 requests/s; limit 50 rps, burst 100 (custom) (p99 at 120 % of the rate)."; summary != want {
		t.Errorf("shape: %q, want %q", summary, want)
	}
	if n := b.until("hours drawn", `String(document.querySelectorAll("#shape svg g[data-hour]").length) + " " + String(document.querySelectorAll("#shape svg .limit-line").length)`); n != "1 1" {
		t.Errorf("hours with requests drawn, and limit lines: %s, want 1 1", n)
	}
	hour := t0.UTC().Truncate(time.Hour).Format("2006-01-02 15:04")
	if row := b.until("hours", `[...document.querySelectorAll("#shape-hours tr[data-hour] td")].map(c => c.textContent).join(" | ")`); row != hour+" UTC | 2,040 | 180 | 10 | 60 | 100" {
		t.Errorf("the hours table: %q", row)
	}
	b.shotAt("w3-shape", "#shape")
}

// set sets 20/s burst 40: the refusals shown are still the recorded ones.
func (c *whatIfTour) set() {
	t, b := c.t, c.b
	typeIn(b, "#limit-rate", "20")
	typeIn(b, "#limit-burst", "40")
	b.run("set the limit", chromedp.Click(`#limit-form button[type=submit]`))
	b.until("set", `[...document.querySelectorAll("#limits td.limit-rate")].map(e => e.textContent).join(",") === "20 rps,1000 rps" ? "yes" : null`)
	// The traffic was recorded under 50/s burst 100, which refused none of
	// it: the line of what was refused says so, beside the limit now.
	if got := c.prediction("in force", "the limit in force now: 20 rps"); !strings.Contains(got, "Refused by the gateway, as recorded (the limit in force now: 20 rps, burst 40, custom): none refused.") {
		t.Errorf("once set, the limit in force: %q", got)
	}
}

// choose picks a select's option by value, as a person would.
func choose(b *browser, sel, value string) {
	b.t.Helper()
	b.is("choose "+value, `(s => { s.value = `+jsString(value)+`; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })(document.querySelector(`+jsString(sel)+`))`)
}

// typeIn replaces a field's text by typing, key by key.
func typeIn(b *browser, sel, text string) {
	b.t.Helper()
	b.run("type "+text+" in "+sel, chromedp.SetValue(sel, ""), chromedp.SendKeys(sel, text))
}

// paste replaces a field's text in one edit.
func paste(b *browser, sel, text string) {
	b.t.Helper()
	b.is("paste "+text+" in "+sel, `(e => { e.value = `+jsString(text)+`; e.dispatchEvent(new Event("input", {bubbles: true})); return true; })(document.querySelector(`+jsString(sel)+`))`)
}

// prediction waits until the page's prediction has been answered and has
// has in it; it answers the prediction's text.
func (c *whatIfTour) prediction(what, has string) string {
	c.t.Helper()
	const result = `(r => r && !r.textContent.includes("Replaying") && r.textContent.includes(%q) ? r.innerText : null)(document.getElementById("whatif-result"))`
	return c.b.until(what, strings.Replace(result, "%q", jsString(has), 1))
}
