package admin_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// holdback holds the admin listener's answer to one request, on a test's
// demand: a slow answer, made at will.
type holdback struct {
	mu      sync.Mutex
	path    string        // the path whose next request is held; "" for none
	held    chan struct{} // closed when that request arrives
	release chan struct{} // closed to let it be answered
}

func (hb *holdback) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hb.mu.Lock()
		hold := hb.path != "" && r.URL.Path == hb.path
		held, release := hb.held, hb.release
		if hold {
			hb.path = ""
		}
		hb.mu.Unlock()
		if hold {
			close(held)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hold holds the next request to path: held is closed when it arrives,
// release lets it be answered (and is called when the test ends).
func (hb *holdback) hold(t *testing.T, path string) (held <-chan struct{}, release func()) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.path, hb.held, hb.release = path, make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(hb.release) })
	t.Cleanup(release)
	return hb.held, release
}

// The console's header and addresses in a real browser: the sign-in page
// shows no search, no Companies link and no Sign out (hidden stays hidden,
// whatever display the style gives them); the admin address and /console/
// lead to the console; the Companies link lists every company. And a page
// that answers late never draws over the page opened after it.
func TestConsoleNavigationInBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	b := newBrowser(t, in)
	navigateConsole(t, in, b)
	lateCompanyPage(t, in, b)
	lateAuditAnswer(t, in, b)
}

// navigateConsole: the sign-in page shows no header, the admin address and
// /console/ lead to the console, charts without traffic say so, and the
// Companies link lists every company.
func navigateConsole(t *testing.T, in *instance, b *browser) {
	const shown = `["goto", "companies-link", "signout"].filter(id => document.getElementById(id).getClientRects().length > 0).join(",") || "none"`

	for _, path := range []string{"/", "/console/"} {
		b.run("open "+path, chromedp.Navigate(in.admin.URL+path), chromedp.WaitVisible("#signin"))
		if got := b.until("address", "location.pathname"); got != "/console" {
			t.Errorf("%s led to %s, want /console", path, got)
		}
		if got := b.until("header", shown); got != "none" {
			t.Errorf("the sign-in page shows %s", got)
		}
	}
	b.shot("n1-sign-in")
	b.signIn(in.adminToken, "ana.silva")
	if got := b.until("header", shown); got != "goto,companies-link,signout" {
		t.Errorf("signed in, the header shows %q", got)
	}
	// Charts without traffic say so, rather than draw an empty frame.
	const quiet = `(ps => ps.length ? ps.map(p => p.textContent).join(" | ") : null)([...document.querySelectorAll(".chart-panel .no-traffic")])`
	if got := b.until("quiet overview", quiet); got != "No requests in the last hour." {
		t.Errorf("the overview's chart without traffic: %q", got)
	}
	b.open("#/company/"+coB, "#company")
	if got := b.until("quiet company", quiet); got != "No requests in the last hour. | No requests in the last 30 days." || b.is("bars", `document.querySelector("svg.chart") !== null`) {
		t.Errorf("a company's charts without traffic: %q", got)
	}
	b.shotAt("n1b-no-traffic", ".chart-panel")
	b.run("companies", chromedp.Click("#companies-link"), chromedp.WaitVisible("#search"))
	if got := b.until("every company", companyNamesJS); got != "Kianda Comércio e Serviços Lda,Muxima Tecnologia SA,Palanca Transportes Lda" {
		t.Errorf("the Companies link lists %q, want the three companies", got)
	}
	b.shot("n2-companies")
}

// companyNamesJS is the names of the companies listed, in order.
const companyNamesJS = `(rows => rows.length ? rows.map(r => r.cells[0].textContent).join(",") : null)([...document.querySelectorAll("#companies tr[data-company]")])`

// lateCompanyPage: a company's page is opened, and its first answer held
// back; before it comes, a search is opened. The company's page, answered
// late, must not draw over the search. render is watched: the test knows
// when the company's page has finished loading, drawn or not.
func lateCompanyPage(t *testing.T, in *instance, b *browser) {
	held, release := in.hold.hold(t, "/admin/v1/companies/"+coA+"/usage/minutes")
	b.is("watch render", `(orig => { window.rendered = [];
		window.render = async (...a) => { const at = location.hash; try { return await orig(...a); } finally { window.rendered.push(at); } };
		return true; })(window.render)`)
	b.is("open the company", `(location.hash = "#/company/`+coA+`", true)`)
	waitHeld(t, held, "the company's page asking for its usage")
	b.is("open a search", `(location.hash = "#/companies/muxima", true)`)
	if got := b.until("search", companyNamesJS); got != "Muxima Tecnologia SA" {
		t.Fatalf("search: %q", got)
	}
	release()
	b.until("the company's page loaded", `window.rendered.includes("#/company/`+coA+`") ? "yes" : null`)
	page := b.until("page", `[location.hash, document.getElementById("search") ? "search" : "", document.getElementById("company") ? "company" : ""].join(" ").trim()`)
	if page != "#/companies/muxima search" {
		t.Errorf("after the company's late answer the page is %q, want the search only", page)
	}
}

// lateAuditAnswer: within a page too, the audit log's period is changed
// while the answer for the period chosen before is held back; that late
// answer must not draw over the newer period's. A key made three days ago
// is in the last 30 days and everything kept, not in the last 24 hours.
func lateAuditAnswer(t *testing.T, in *instance, b *browser) {
	in.clock.Add(-72 * time.Hour)
	in.key(t, coA, invoicing.Live, "invoices:read")
	in.clock.Add(72 * time.Hour)
	b.open("#/company/"+coA, "#audit")
	const audited = `(n => document.getElementById("audit-since").value + " " + n)(document.querySelectorAll("#audit tr[data-action]").length)`
	if got := b.until("audit", `(s => s.endsWith(" 1") ? s : null)(`+audited+`)`); got != "30 1" {
		t.Fatalf("audit log: %q", got)
	}
	// answered lists the audit answers the page has taken in, each once
	// everything it made of it is drawn (a timer runs after the promises an
	// answer resolves).
	b.is("watch answers", `(f => { window.answered = [];
		window.fetch = async (...a) => { const r = await f(...a); const text = r.text.bind(r);
			r.text = async () => { const s = await text(); if (r.url.includes("/audit")) setTimeout(() => window.answered.push(r.url), 0); return s; }; return r; };
		return true; })(window.fetch)`)
	choose := func(days string) {
		b.is("choose "+days, `(s => { s.value = "`+days+`"; s.dispatchEvent(new Event("change")); return true; })(document.getElementById("audit-since"))`)
	}
	held, release := in.hold.hold(t, "/admin/v1/companies/"+coA+"/audit")
	choose("1")
	waitHeld(t, held, "the audit log asking for the last 24 hours")
	choose("400")
	b.until("everything kept", `window.answered.length === 1 ? "yes" : null`)
	release()
	b.until("the last 24 hours' late answer", `window.answered.length === 2 ? "yes" : null`)
	if got := b.until("audit", audited+` + " | " + document.getElementById("audit-count").textContent`); got != "400 1 | 1 event." {
		t.Errorf("after the late answer for the last 24 hours, the audit log shows %q, want everything kept's one event", got)
	}
}

// waitHeld waits, generously, for the request a holdback holds.
func waitHeld(t *testing.T, held <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-held:
	case <-time.After(testenv.Patience):
		t.Fatalf("waited %v for %s", testenv.Patience, what)
	}
}
