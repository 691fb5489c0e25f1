package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The admin console in a real browser: sign in, see the overview (six cards
// on a row, companies by name), find a company by name and by NIF, create a
// key and see it listed with its secret shown once, page through the keys,
// change a limit and see the public listener apply it, see the company's
// traffic and its audit log field by field, and roll a key (asked first,
// with an overlap chosen) to see the page updated at once. A screenshot of
// each page is written for a person to look at (CONSOLE_SCREENSHOTS,
// default a directory under the system's temp dir).
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := &consoleTour{t: t, in: w.start()}
	c.prepare()
	c.b = newBrowser(t, c.in)
	c.signIn()
	c.overview()
	c.findCompany()
	c.createKey()
	c.pageKeys()
	c.setLimit()
	c.usageChart()
	c.auditLog()
	c.rollKey()
	c.revokeKey()
}

// consoleTour is TestConsoleInBrowser's story, a step a method: the
// instance, its browser, and what a step leaves for the next ones.
type consoleTour struct {
	t  *testing.T
	in *instance
	b  *browser
	k  admin.KeyView // company A's LIVE key, made before the console opens

	secret, consoleKey string // the key the console creates
}

// prepare makes some traffic of company A for the charts, and more keys
// and audit events than a page holds.
func (c *consoleTour) prepare() {
	t, in := c.t, c.in
	ctx := context.Background()
	k := in.key(t, coA, invoicing.Live, allScopes)
	for range 5 { // some traffic of company A for the charts
		do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=2", Key: k.Key, Company: coA})
	}
	do(t, in.pub.URL, req{Path: "/api/v1/v1/clients/not-an-id", Key: k.Key, Company: coA})
	if err := in.usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Keys made and revoked before: more than a page of keys (20) and of
	// the audit log (50).
	for range 3 {
		var made []string
		for range 8 {
			made = append(made, in.key(t, coA, invoicing.Test, "invoices:read").ID)
		}
		for _, id := range made {
			if _, err := in.adm.Keys.RevokeKey(ctx, testActor, id, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.k = k
}

// signIn signs in: a wrong token is refused, the right one opens the overview.
func (c *consoleTour) signIn() {
	t, b, in := c.t, c.b, c.in
	b.run("open", chromedp.Navigate(b.console), chromedp.WaitVisible("#signin"))
	b.shot("1-sign-in")
	b.run("wrong token", chromedp.SendKeys("#token", "not-the-token"), chromedp.SendKeys("#actor", "ana.silva"),
		chromedp.Click(`#signin button[type=submit]`), chromedp.WaitVisible("#signin-error"))
	if msg := b.until("read error", `document.getElementById("signin-error").textContent || null`); !strings.Contains(msg, "not the gateway's") {
		t.Fatalf("wrong token: %q", msg)
	}
	b.run("sign in", chromedp.SetValue("#token", in.adminToken), chromedp.Click(`#signin button[type=submit]`), chromedp.WaitVisible("#overview"))
	if active := b.text("overview", "#active-today"); strings.TrimSpace(active) != "1" {
		t.Errorf("companies with traffic today: %q, want 1", active)
	}
	if !b.is("token storage", `sessionStorage.getItem("adminToken") !== null && document.cookie === "" && localStorage.length === 0`) {
		t.Error("the token is not (only) in session storage")
	}
	if strings.Contains(b.until("address", "location.href"), in.adminToken) {
		t.Error("the token is in the address")
	}
}

// overview is six cards on one row (three and three on a narrower screen,
// never one alone); companies by name, their ids beside.
func (c *consoleTour) overview() {
	t, b := c.t, c.b
	const rows = `(cs => { const r = {}; cs.forEach(c => { const y = Math.round(c.getBoundingClientRect().top); r[y] = (r[y] || 0) + 1; });
		return cs.length + ":" + Object.values(r).join(","); })([...document.querySelectorAll("#cards .card")])`
	if got := b.until("cards", rows); got != "6:6" {
		t.Errorf("cards per row at 1280 px: %s, want 6 on one row", got)
	}
	if top := b.text("busiest", "#top-today"); !strings.Contains(top, "Kianda Comércio e Serviços Lda") || !strings.Contains(top, coA) {
		t.Errorf("busiest today: %q, want the company's name and id", top)
	}
	b.shot("2-overview")
	b.run("narrow", chromedp.EmulateViewport(820, 1000))
	if got := b.until("cards", rows); got != "6:3,3" {
		t.Errorf("cards per row at 820 px: %s, want 3 and 3", got)
	}
	b.shot("2b-overview-narrow")
	b.run("wide", chromedp.EmulateViewport(1280, 1100))
}

// findCompany finds a company by name, then by NIF, from the header.
func (c *consoleTour) findCompany() {
	t, b := c.t, c.b
	find := func(text string) string {
		t.Helper()
		b.run("find "+text, chromedp.SetValue("#goto-id", text), chromedp.Click("#goto button"), chromedp.WaitVisible("#search"))
		return b.until("results of "+text, `(rows => document.getElementById("search-text").value === `+jsString(text)+` && rows.length ? rows.map(r => r.textContent).join("\n") : null)`+
			`([...document.querySelectorAll("#companies tr[data-company]")])`)
	}
	if got := find("muxima"); !strings.Contains(got, "Muxima Tecnologia SA") || !strings.Contains(got, "5417000020") || strings.Contains(got, "Kianda") {
		t.Errorf("search muxima: %q", got)
	}
	b.shot("3-company-search")
	if got := find("5417 000 010"); !strings.Contains(got, "Kianda Comércio e Serviços Lda") || strings.Contains(got, "Muxima") {
		t.Errorf("search by NIF: %q", got)
	}
	b.run("open found", chromedp.Click(`#companies tr[data-company] a`), chromedp.WaitVisible("#company"))
	if title := b.text("title", "#company h1"); !strings.Contains(title, "Kianda Comércio e Serviços Lda") || !strings.Contains(title, "5417000010") || !strings.Contains(title, coA) {
		t.Errorf("company title: %q", title)
	}
}

// createKey makes a key: its secret is shown once and it is listed, first (the
// instance's clock stands still: a second on, it is the newest).
func (c *consoleTour) createKey() {
	t, b, in := c.t, c.b, c.in
	in.clock.Add(time.Second)
	// Its expiry is typed as the page shows times, in UTC (the browser runs
	// in Luanda's zone).
	b.run("create key", chromedp.SendKeys("#key-name", "console key"), chromedp.SetValue("#key-expiry", "2030-01-02 03:04"),
		chromedp.Click(`#key-form button[type=submit]`), chromedp.WaitVisible("#secret-value"))
	secret := b.text("read secret", "#secret-value")
	if !strings.HasPrefix(secret, "igw_live_") {
		t.Fatalf("secret shown: %q", secret)
	}
	consoleKey := strings.TrimPrefix(b.text("key id", "#secret-id"), "Key id ")
	b.until("listed", `document.querySelector("#keys-table tr[data-key]")?.dataset.key === `+jsString(consoleKey)+` ? "yes" : null`)
	if got := do(t, in.admin.URL, req{Path: "/admin/v1/keys/" + consoleKey, Header: map[string]string{"Authorization": "Bearer " + in.adminToken}}).json(t)["expiresAt"]; got != "2030-01-02T03:04:00Z" {
		t.Errorf("the key typed to expire at 2030-01-02 03:04 (UTC) expires at %v", got)
	}
	if got := b.until("expiry shown", keyRowJS(consoleKey)+`.querySelector("td.expires .when").innerText.replace(/\s+/g, " ")`); got != "2030-01-02 03:04:00 UTC" {
		t.Errorf("its expiry is shown as %q", got)
	}
	b.shotAt("4-key-created", "#company")
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: secret, Company: coA}); r.Status != 200 {
		t.Fatalf("the console's new key on the public listener: %d", r.Status)
	}
	b.run("dismiss", chromedp.Click(`#secret button`), chromedp.WaitNotPresent("#secret"))
	if b.is("secret gone", `document.body.textContent.includes(`+jsString(secret)+`)`) {
		t.Error("the secret is still shown after it was dismissed")
	}
	if b.is("secret stored", `JSON.stringify(Object.entries(sessionStorage)).includes(`+jsString(secret)+`) || location.href.includes(`+jsString(secret)+`)`) {
		t.Error("the secret is kept in storage or the address")
	}
	c.secret, c.consoleKey = secret, consoleKey
}

// pageKeys shows the keys a page at a time: 20, then the rest.
func (c *consoleTour) pageKeys() {
	t, b := c.t, c.b
	const keyRows = `String(document.querySelectorAll("#keys-table tr[data-key]").length)`
	if n := b.until("keys", keyRows); n != "20" {
		t.Errorf("first page: %s keys, want 20", n)
	}
	b.run("more keys", chromedp.Click("#keys-table button.more"))
	all := b.until("all keys", `(n => n > 20 ? String(n) : null)(document.querySelectorAll("#keys-table tr[data-key]").length)`)
	if all != "26" || !b.is("more hidden", `document.querySelector("#keys-table button.more").hidden`) ||
		!b.is("distinct", `(ids => new Set(ids).size === ids.length)([...document.querySelectorAll("#keys-table tr[data-key]")].map(r => r.dataset.key))`) {
		t.Errorf("all keys: %s rows, want 26 distinct and no more pages", all)
	}
}

// setLimit changes a limit: one out of bounds is refused in the user's words, once;
// a lower LIVE limit is applied by the public listener.
func (c *consoleTour) setLimit() {
	t, b, in := c.t, c.b, c.in
	k := c.k
	b.run("limit too high", chromedp.SetValue("#limit-mode", "LIVE"), chromedp.SetValue("#limit-rate", "1000000"), chromedp.SetValue("#limit-burst", "1"),
		chromedp.Click(`#limit-form button[type=submit]`))
	if msg := b.until("refusal", `document.querySelector("#limits > p.error").textContent || null`); msg != "rate must be from 0.001 to 100000 requests per second." {
		t.Errorf("the limit form's refusal: %q", msg)
	}
	// Change the LIVE limit; the public listener applies it.
	b.run("set limit", chromedp.SetValue("#limit-mode", "LIVE"), chromedp.SetValue("#limit-rate", "0.01"), chromedp.SetValue("#limit-burst", "1"),
		chromedp.Click(`#limit-form button[type=submit]`), chromedp.WaitVisible("#limits"))
	rates := b.until("read limits", `(t => t.startsWith("0.01") ? t : null)([...document.querySelectorAll("#limits td.limit-rate")].map(e => e.textContent).join(","))`)
	if !strings.HasPrefix(rates, "0.01 rps") {
		t.Fatalf("limits shown after the change: %q", rates)
	}
	// Instances spend leased tokens for up to the lease TTL (500 ms) after a
	// change: the public listener refuses once they are spent.
	statuses := map[int]int{}
	testenv.Eventually(t, "a 429 after the console lowered the limit", func() error {
		status := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: k.Key, Company: coA}).Status
		statuses[status]++
		return testenv.Want(status, 429, fmt.Sprintf("status (all so far: %v)", statuses))
	})
}

// usageChart shows this test's traffic.
func (c *consoleTour) usageChart() {
	t, b, in := c.t, c.b, c.in
	ctx := context.Background()
	if err := in.usage.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b.run("reload", chromedp.Reload(), chromedp.WaitVisible("#company"))
	b.until("bars", `document.querySelectorAll('svg.chart rect[data-class="2xx"]').length > 0 ? "yes" : null`)
	// The charts' times are in UTC too, said so: the usage API's minutes
	// are Luanda's (UTC+1 all year), its days Luanda's calendar days.
	var usageMinutes struct{ Minutes []struct{ Time string } }
	if err := json.Unmarshal(do(t, in.admin.URL, req{Path: "/admin/v1/companies/" + coA + "/usage/minutes?minutes=60",
		Header: map[string]string{"Authorization": "Bearer " + in.adminToken}}).Body, &usageMinutes); err != nil || len(usageMinutes.Minutes) == 0 {
		t.Fatalf("usage minutes: %v %v", err, usageMinutes)
	}
	first, err := time.ParseInLocation("2006-01-02T15:04", usageMinutes.Minutes[0].Time, time.FixedZone("Luanda", 3600))
	if err != nil {
		t.Fatal(err)
	}
	if got := b.until("chart", `(c => c.querySelector("b").textContent + " | " + c.querySelectorAll("svg text")[1].textContent)(document.querySelector("svg.chart").parentElement)`); got != "Requests per minute, last hour (UTC) | "+first.UTC().Format("15:04") {
		t.Errorf("the minutes' chart: %q, want its first minute, %s in Luanda, in UTC", got, usageMinutes.Minutes[0].Time)
	}
	// The 429s after the limit was lowered: a segment of their own, seen,
	// and a mark over their bar, not a dot inside the green.
	seen := b.until("429s drawn", `(r => r ? (m => Math.round(r.getBoundingClientRect().height) + " " + (m && m.getBoundingClientRect().bottom <= r.parentNode.querySelector('rect').getBoundingClientRect().top + 1 ? "above" : "not above"))`+
		`([...r.parentNode.querySelectorAll("path.limited-mark")].find(m => Math.abs(m.getBoundingClientRect().left + m.getBoundingClientRect().width / 2 - r.getBoundingClientRect().left - r.getBoundingClientRect().width / 2) < 2)) : null)`+
		`(document.querySelector('svg.chart rect[data-class="429"]'))`)
	if h, where, _ := strings.Cut(seen, " "); h == "0" || h == "1" || where != "above" {
		t.Errorf("the 429s: %s px high, the mark %s the bar", h, where)
	}
	b.shotAt("4b-minutes-chart", ".chart-panel")
	// The minutes' ticks are 10 minutes apart.
	ticks := b.until("ticks", `[...document.querySelector("svg.chart").querySelectorAll("text")].slice(1).map(e => e.textContent).join("|")`)
	if parts := strings.Split(ticks, "|"); len(parts) < 3 {
		t.Errorf("ticks %q", ticks)
	} else if a, errA := time.Parse("15:04", parts[0]); errA == nil {
		if b2, errB := time.Parse("15:04", parts[1]); errB != nil || b2.Sub(a) != 10*time.Minute {
			t.Errorf("ticks %q: not 10 minutes apart", ticks)
		}
	}
}

// auditLog is the audit log, newest first: what changed, field by field,
// under the name signed in with; 50 events, then older ones.
func (c *consoleTour) auditLog() {
	t, b := c.t, c.b
	if d := c.diff("limits.set"); !strings.HasPrefix(d, "ana.silva |") || !strings.Contains(d, "live.rate1000 → 0.01") || !strings.Contains(d, "live.customfalse → true") ||
		strings.Contains(d, "test.rate") || strings.Contains(d, "{") {
		t.Errorf("limits.set shown as %q: want live.rate 1000 → 0.01 and live.custom false → true only", d)
	}
	if d := c.diff("key.created"); !strings.Contains(d, "nameconsole key") || !strings.Contains(d, "scopesinvoices:read, clients:read") || strings.Contains(d, "{") {
		t.Errorf("key.created shown as %q", d)
	}
	if first := b.until("newest", `document.querySelector("#audit tbody tr").dataset.action || null`); first != "limits.set" {
		t.Errorf("the newest event shown first is %s, want limits.set", first)
	}
	const auditRows = `String(document.querySelectorAll("#audit tr[data-action]").length)`
	if n := b.until("audit rows", auditRows); n != "50" {
		t.Errorf("audit rows: %s, want the newest 50", n)
	}
	b.shot("5-company")
	b.shotAt("5b-audit-log", "#audit")
	b.run("older", chromedp.Click("#audit-older"))
	if n, _ := strconv.Atoi(b.until("older rows", `(n => n > 50 ? String(n) : null)(document.querySelectorAll("#audit tr[data-action]").length)`)); n != 51 {
		t.Errorf("audit rows with older ones: %d, want 51", n)
	}
}

// rollKey rolls the console's key: asked first, with the overlap;
// cancelled, it changes nothing.
func (c *consoleTour) rollKey() {
	t, b, in := c.t, c.b, c.in
	consoleKey := c.consoleKey
	secret := c.secret
	rollButton := `tr[data-key="` + consoleKey + `"] button.roll`
	b.run("roll, cancel", chromedp.Click(rollButton), chromedp.WaitVisible("#ask"), chromedp.Click("#ask-cancel"), chromedp.WaitNotPresent("#ask"))
	if v := do(t, in.admin.URL, req{Path: "/admin/v1/keys/" + consoleKey, Header: map[string]string{"Authorization": "Bearer " + in.adminToken}}).json(t); v["replacedBy"] != nil {
		t.Fatalf("a cancelled roll rolled: %v", v)
	}
	in.clock.Add(time.Second) // the new key is the newest: first in the list
	b.run("roll", chromedp.Click(rollButton), chromedp.WaitVisible("#ask"), chromedp.SetValue("#roll-overlap", "3600"))
	b.shotAt("6-roll-asked", "#keys")
	b.confirm("roll")
	b.run("rolled", chromedp.WaitVisible("#secret-value"))
	rolled := b.text("rolled secret", "#secret-value")
	if !strings.HasPrefix(rolled, "igw_live_") || rolled == secret {
		t.Fatalf("rolled secret %q", rolled)
	}
	newKey := strings.TrimPrefix(b.text("new key id", "#secret-id"), "Key id ")
	// Without "I have copied it": the new key listed, the old one with its
	// new expiry an hour away, key.rolled in the audit log.
	var old, made struct {
		CreatedAt  time.Time `json:"createdAt"`
		ExpiresAt  time.Time `json:"expiresAt"`
		ReplacedBy string    `json:"replacedBy"`
	}
	adminAuth := map[string]string{"Authorization": "Bearer " + in.adminToken}
	if err := json.Unmarshal(do(t, in.admin.URL, req{Path: "/admin/v1/keys/" + consoleKey, Header: adminAuth}).Body, &old); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(do(t, in.admin.URL, req{Path: "/admin/v1/keys/" + newKey, Header: adminAuth}).Body, &made); err != nil {
		t.Fatal(err)
	}
	if old.ReplacedBy != newKey || !old.ExpiresAt.Equal(made.CreatedAt.Add(time.Hour)) {
		t.Fatalf("the rolled key: %+v, want replaced by %s, expiring an hour after %s", old, newKey, made.CreatedAt)
	}
	expires := old.ExpiresAt.UTC().Format("2006-01-02 15:04:05") + " UTC"
	b.until("new key listed", keyRowJS(newKey)+` ? "yes" : null`)
	if got := b.until("old key's expiry", `(r => r && r.querySelector("td.expires").innerText.replace(/\s+/g, " ").includes(`+jsString(expires)+`) ? r.textContent : null)`+
		`(`+keyRowJS(consoleKey)+`)`); !strings.Contains(got, "rolled to "+newKey) {
		t.Errorf("the old key's row: %q", got)
	}
	if d := c.diff("key.rolled"); !strings.Contains(d, "expiresAt2030-01-02 03:04:00 UTC → "+expires) || !strings.Contains(d, "replacedBy— → "+newKey) {
		t.Errorf("key.rolled shown as %q", d)
	}
	if !b.is("secret still shown", `document.getElementById("secret-value") !== null`) {
		t.Error("the page was redrawn over the new secret")
	}
	b.shotAt("7-key-rolled", "#company")
	b.shotAt("7b-key-rolled-audit", "#audit")
	// On a narrow screen no key id breaks inside itself: each is one line.
	b.run("narrow", chromedp.EmulateViewport(820, 1000))
	if broken := b.until("key ids", `(ids => ids.length ? ids.filter(e => e.getClientRects().length > 1 || e.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(e).lineHeight || 16)).map(e => e.textContent).join(",") || "none" : null)`+
		`([...document.querySelectorAll("#keys .mono")].filter(e => /key_/.test(e.textContent)))`); broken != "none" {
		t.Errorf("key ids broken over lines at 820 px: %s", broken)
	}
	b.shotAt("7c-keys-narrow", "#keys")
	b.run("wide", chromedp.EmulateViewport(1280, 1100))
}

// revokeKey revokes the first key, asked first; it is on the second page.
func (c *consoleTour) revokeKey() {
	t, b, in := c.t, c.b, c.in
	k := c.k
	b.run("more keys", chromedp.Click("#keys-table button.more"), chromedp.WaitVisible(`tr[data-key="`+k.ID+`"] button.revoke`))
	b.run("revoke", chromedp.Click(`tr[data-key="`+k.ID+`"] button.revoke`))
	b.confirm("revoke")
	b.until("revoked", keyRowJS(k.ID)+`?.dataset.state === "revoked" ? "yes" : null`)
	if d := c.diff("key.revoked"); !strings.Contains(d, "stateactive → revoked") {
		t.Errorf("key.revoked shown as %q", d)
	}
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: k.Key, Company: coA}); r.Status != 401 {
		t.Errorf("the revoked key on the public listener: %d, want 401", r.Status)
	}
}

// diff is an action's row in the audit log: who, and what changed.
func (c *consoleTour) diff(action string) string {
	c.t.Helper()
	return c.b.until(action+" in the audit log", `(r => r ? r.querySelector("td:nth-child(2)").textContent + " | " + r.querySelector("dl.diff").textContent : null)`+
		`(document.querySelector('#audit tr[data-action="`+action+`"]'))`)
}

// keyRowJS is the expression of a key's row in the keys' table.
func keyRowJS(id string) string {
	return `document.querySelector(` + jsString(`#keys-table tr[data-key="`+id+`"]`) + `)`
}
