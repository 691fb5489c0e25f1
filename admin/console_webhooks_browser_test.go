package admin_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/client"
)

// flipReceiver is an integrator's receiver whose answer the test flips: it
// verifies each delivery with the secret the console showed, and answers
// 204, or 500 while failing.
type flipReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	verifier *client.WebhookVerifier
	failing  bool
	got      map[string]int // event id: deliveries verified and taken
	refused  []string       // deliveries that did not verify: id, signatures and why
	step     string         // what the test was doing, for the refusals' report
}

func newFlipReceiver(t *testing.T) *flipReceiver {
	f := &flipReceiver{got: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failing {
			http.Error(w, "boom: the ERP is down", http.StatusInternalServerError)
			return
		}
		ev, err := f.verifier.Verify(r.Header, body)
		if err != nil {
			f.refused = append(f.refused, fmt.Sprintf("during %q: %s at %s (%d signatures): %v", f.step, r.Header.Get("webhook-id"),
				r.Header.Get("webhook-timestamp"), len(strings.Fields(r.Header.Get("webhook-signature"))), err))
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		f.got[ev.ID]++
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flipReceiver) trust(t *testing.T, secret string) {
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.verifier = v
	f.mu.Unlock()
}

// at names what the test does next, for the report of refused deliveries.
func (f *flipReceiver) at(step string) { f.mu.Lock(); f.step = step; f.mu.Unlock() }

func (f *flipReceiver) fail(on bool) { f.mu.Lock(); f.failing = on; f.mu.Unlock() }

func (f *flipReceiver) count(id string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.got[id] }

// Webhooks in the console, in a real browser: create an endpoint, trigger
// an event, see the delivery; make the receiver fail, see the retries and
// the error; recover, see it delivered once more; replay one; change its
// types, disable and enable it, rotate its secret with an overlap, delete
// it; every change in the audit log.
func TestConsoleWebhooksInBrowser(t *testing.T) {
	w := newWorld(t)
	in := w.start(withRetries(300*time.Millisecond, 300*time.Millisecond)) // three attempts, quickly
	in.runEvents(t)
	recv := newFlipReceiver(t)
	b := newBrowser(t, in)
	b.signIn(in.adminToken, "ana.silva")

	// Create an endpoint: its signing secret is shown once; it is listed.
	b.open("#/company/"+coA, "#webhooks")
	b.run("create endpoint", chromedp.SetValue("#hook-mode", "TEST"), chromedp.SetValue("#hook-url", recv.srv.URL+"/hooks"),
		chromedp.SetValue("#hook-description", "ERP of Kianda"), chromedp.Click(`#hook-form button[type=submit]`), chromedp.WaitVisible("#secret-value"))
	secret := b.text("secret", "#secret-value")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret shown: %q", secret)
	}
	recv.trust(t, secret)
	id := b.until("listed", `document.querySelector("#webhooks-table tr[data-webhook]")?.dataset.webhook || null`)
	if row := b.text("row", "#webhooks-table tr[data-webhook]"); !strings.Contains(row, "ERP of Kianda") || !strings.Contains(row, "every type") ||
		!strings.Contains(row, "enabled") || !strings.Contains(row, "no attempts in 24 h") {
		t.Errorf("endpoint row: %q", row)
	}
	b.shotAt("w1-endpoint-created", "#company")

	recv.at("send a test event")
	// Trigger an event (the console's test event); see the delivery.
	b.run("open endpoint", chromedp.Click(`#webhooks-table tr[data-webhook] a.url`), chromedp.WaitVisible("#deliveries"))
	if page := b.until("page", `document.getElementById("webhook")?.dataset.webhook || null`); page != id {
		t.Fatalf("opened endpoint %s, want %s", page, id)
	}
	if b.is("secret carried over", `document.body.textContent.includes(`+jsString(secret)+`)`) {
		t.Error("the secret is shown again on the endpoint's page")
	}
	const queued = `(document.getElementById("endpoint-msg").textContent.match(/evt_[a-z0-9]+/) || [""])[0]`
	send := func() string {
		t.Helper()
		before := b.until("message", queued+` + " "`)
		b.run("send test", chromedp.Click("#send-test"))
		return b.until("queued", `(id => id && id + " " !== `+jsString(before)+` ? id : null)(`+queued+`)`)
	}
	// state polls the delivery log, refreshing it, until the event's row is
	// in the state; it answers the row's text.
	state := func(event, want string) string {
		t.Helper()
		return b.until(event+" "+want, `(r => r && r.dataset.state === `+jsString(want)+` ? r.innerText : (document.getElementById("deliveries-refresh").click(), null))`+
			`(document.querySelector(`+jsString(`#deliveries tbody[data-event="`+event+`"]`)+`))`)
	}
	first := send()
	state(first, "delivered")
	if recv.count(first) != 1 {
		t.Errorf("the receiver took the test event %d times, want 1", recv.count(first))
	}
	b.shotAt("w2-delivered", "#webhook")

	recv.at("receiver failing")
	// The receiver fails: three attempts, each with its status, error and
	// the answer's first bytes; the health says so.
	recv.fail(true)
	second := send()
	row := state(second, "failed")
	for _, want := range []string{"answered 500 Internal Server Error", "boom: the ERP is down", "webhook.test"} {
		if !strings.Contains(row, want) {
			t.Errorf("the failed delivery's row lacks %q: %q", want, row)
		}
	}
	if n := b.text("attempts", `#deliveries tbody[data-event="`+second+`"] .attempt-count`); n != "3" {
		t.Errorf("attempts: %s, want 3", n)
	}
	if got := b.until("health", `(t => t.includes("1 failed") ? t : (document.getElementById("deliveries-refresh").click(), null))(document.getElementById("health").innerText)`); !strings.Contains(got, "25 %") ||
		!strings.Contains(got, "of 4 attempts") || !strings.Contains(got, "answered 500 Internal Server Error") {
		t.Errorf("health after the failures: %q, want 1 of 4 attempts succeeded, 1 failed", got)
	}
	b.shotAt("w3-retries-and-error", "#webhook")
	// Filtered: the failed one only, then the test events.
	b.run("filter failed", chromedp.SetValue("#filter-state", "failed"))
	b.until("filtered", `(rs => rs.length === 1 && rs[0].dataset.event === `+jsString(second)+` ? "yes" : null)([...document.querySelectorAll("#deliveries tbody[data-event]")])`)
	b.any("#filter-state")
	b.run("by type", chromedp.SetValue("#filter-type", "webhook.test"))
	b.until("by type", `document.querySelectorAll("#deliveries tbody[data-event]").length === 2 ? "yes" : null`)
	b.any("#filter-type")

	recv.at("recover")
	// Recover: the receiver answers again; every failed delivery since a day
	// ago is sent once more, and arrives once.
	recv.fail(false)
	b.run("recover", chromedp.Click(`#recover-form button[type=submit]`))
	if msg := b.until("recovered", `(t => t.includes("queued again") ? t : null)(document.getElementById("endpoint-msg").textContent)`); msg != "1 failed delivery queued again." {
		t.Errorf("recover: %q", msg)
	}
	state(second, "delivered")
	// Sent again, its attempts are counted afresh; the log keeps all four.
	if got := b.until("attempts", `(r => r.querySelector(".attempt-count").textContent + " " + [...r.querySelectorAll("table.attempts tbody tr")].map(a => a.className + ":" + a.cells[2].textContent).join(","))`+
		`(document.querySelector(`+jsString(`#deliveries tbody[data-event="`+second+`"]`)+`))`); got != "1 failed:500,failed:500,failed:500,ok:204" {
		t.Errorf("attempts after the recovery: %q", got)
	}
	if recv.count(second) != 1 || recv.count(first) != 1 {
		t.Errorf("the receiver took the events %d and %d times, want once each", recv.count(first), recv.count(second))
	}
	b.shotAt("w4-recovered", "#deliveries")

	recv.at("replay")
	// Replay the first: it arrives again, with its id.
	b.run("replay", chromedp.Click(`#deliveries tbody[data-event="`+first+`"] button.replay`))
	deadline := time.Now().Add(time.Minute)
	for recv.count(first) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the replayed event arrived %d times", recv.count(first))
		}
		time.Sleep(20 * time.Millisecond)
	}

	recv.at("types, disable, enable")
	// Its types, then disabled (since when, and why) and enabled again.
	b.run("types", chromedp.Click(`#types-form input[value="invoice.paid"]`), chromedp.Click(`#types-form input[value="client.created"]`),
		chromedp.Click(`#types-form button[type=submit]`))
	b.until("types saved", `document.getElementById("endpoint-types").textContent === "invoice.paid, client.created" ? "yes" : null`)
	b.run("disable", chromedp.Click("#toggle"))
	disabled := b.until("disabled", `(t => t.startsWith("disabled") ? t : null)(document.getElementById("endpoint-state").innerText)`)
	if !strings.Contains(disabled, "since ") {
		t.Errorf("disabled endpoint's state: %q", disabled)
	}
	b.shotAt("w5-disabled", "#webhook")
	b.run("enable", chromedp.Click("#toggle"))
	b.until("enabled", `document.getElementById("endpoint-state").innerText.startsWith("enabled") ? "yes" : null`)

	recv.at("rotate")
	// Rotate the secret, asked first, with an hour of overlap: the new secret
	// is shown once, and signs the next delivery.
	b.run("rotate", chromedp.Click("#rotate"), chromedp.WaitVisible("#ask"), chromedp.SetValue("#rotate-overlap", "3600"))
	b.shotAt("w6-rotate-asked", "#webhook")
	b.confirm("rotate")
	b.run("rotated", chromedp.WaitVisible("#secret-value"))
	rotated := b.text("new secret", "#secret-value")
	if !strings.HasPrefix(rotated, "whsec_") || rotated == secret {
		t.Fatalf("rotated secret %q", rotated)
	}
	b.until("previous secret", `document.getElementById("previous-secret").textContent.includes("in 60 min") ? "yes" : null`)
	recv.trust(t, rotated)
	recv.at("a test event signed with the new secret")
	state(send(), "delivered")

	recv.at("twenty test events")
	// The log a page of 20 at a time: the newest, then the older ones.
	for range 20 {
		if r := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/webhooks/" + id + "/test",
			Header: map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": testActor}}); r.Status != 202 {
			t.Fatalf("test event: %d %s", r.Status, r.Body)
		}
	}
	const shown = `[...document.querySelectorAll("#deliveries tbody[data-event]")].map(r => r.dataset.event)`
	b.run("refresh", chromedp.Click("#deliveries-refresh"))
	newest := strings.Fields(b.until("first page", `(ids => ids.length === 20 && !document.getElementById("deliveries-older").disabled ? ids.join(" ") : null)(`+shown+`)`))
	b.run("older", chromedp.Click("#deliveries-older"))
	older := strings.Fields(b.until("second page", `(ids => document.getElementById("deliveries-page").textContent === "page 2" && ids.length && ids[0] !== `+jsString(newest[0])+` ? ids.join(" ") : null)(`+shown+`)`))
	if len(older) != 3 || !slices.Contains(older, first) || !slices.Contains(older, second) || slices.ContainsFunc(older, func(id string) bool { return slices.Contains(newest, id) }) {
		t.Errorf("pages: %q then %q, want 20 then the 3 older ones", newest, older)
	}
	if !b.is("last page", `document.getElementById("deliveries-older").disabled`) {
		t.Error("Older is enabled on the last page")
	}
	b.shotAt("w6b-older-deliveries", "#deliveries")
	b.run("newest", chromedp.Click("#deliveries-newest"))
	b.until("back to the first page", `document.getElementById("deliveries-page").textContent === "page 1" ? "yes" : null`)

	recv.at("delete")
	// Delete, asked first: cancelled, nothing; confirmed, back to the
	// company, without the endpoint.
	b.run("delete, cancel", chromedp.Click("#delete"), chromedp.WaitVisible("#ask"), chromedp.Click("#ask-cancel"), chromedp.WaitNotPresent("#ask"))
	b.run("delete", chromedp.Click("#delete"), chromedp.WaitVisible("#ask"))
	b.shotAt("w7-delete-asked", "#webhook")
	b.confirm("delete")
	b.run("back", chromedp.WaitVisible("#company"))
	b.until("gone", `document.querySelector("#webhooks-table") && !document.querySelector("#webhooks-table tr[data-webhook]") ? "yes" : null`)

	// Every change is in the audit log, under the name signed in with.
	actions := b.until("audit", `(a => a.includes("webhook.deleted") ? a.join(" ") : null)`+
		`([...document.querySelectorAll("#audit tr[data-action]")].filter(r => r.cells[1].textContent === "ana.silva").map(r => r.dataset.action).reverse())`)
	want := "webhook.created webhook.tested webhook.tested webhook.recovered webhook.replayed webhook.updated webhook.updated webhook.updated webhook.secret_rotated webhook.tested webhook.deleted"
	if actions != want {
		t.Errorf("audit actions:\n%s\nwant\n%s", actions, want)
	}
	if d := b.until("disable in the audit", `(r => r ? r.querySelector("dl.diff").textContent : null)(document.querySelectorAll('#audit tr[data-action="webhook.updated"]')[1])`); d != "enabledtrue → false" {
		t.Errorf("the disabling in the audit log: %q", d)
	}
	b.shotAt("w8-audit", "#audit")
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.refused) != 0 {
		t.Errorf("deliveries that did not verify with the secrets the console showed:\n%s", strings.Join(recv.refused, "\n"))
	}
}
