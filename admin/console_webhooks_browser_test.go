package admin_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Webhooks in the console, in a real browser, on real events: create an
// endpoint; a client created through the public API with a TEST key is
// detected in the sandbox, delivered, and seen in the delivery log; a test
// event too. The receiver fails while an invoice is paid in the sandbox:
// the log shows the retries and the error; recover, and the payment is
// delivered once more; replay one; change its types, disable and enable
// it, rotate its secret with an overlap, delete it; every change in the
// audit log.
func TestConsoleWebhooksInBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start(withRetries(300*time.Millisecond, 300*time.Millisecond)) // three attempts, quickly
	in.runEvents(t)
	h := &hookTour{t: t, w: w, in: in, recv: newReceiver(t), b: newBrowser(t, in)}
	h.b.signIn(in.adminToken, "ana.silva")
	h.createEndpoint()
	h.openEndpoint()
	h.clientCreated()
	h.testEvent()
	h.receiverFailing()
	h.recoverFailed()
	h.replay()
	h.typesAndToggle()
	h.rotate()
	h.bumpyAttempts()
	h.olderPages()
	h.deleteEndpoint()
	h.audit()
}

// hookTour is TestConsoleWebhooksInBrowser's story, a step a method: what a
// step leaves for the next ones is in its fields.
type hookTour struct {
	t    *testing.T
	w    *world
	in   *instance
	b    *browser
	recv *receiver

	secret, id                         string // the endpoint's first secret and its id
	created, test, paid, signed, bumpy string // events delivered, in order
	invoiceID                          string // paid in the sandbox
}

// createEndpoint creates an endpoint: an address that is not public is refused,
// once, in the user's words; its signing secret is shown once; it is listed.
func (h *hookTour) createEndpoint() {
	t, b, recv := h.t, h.b, h.recv
	b.open("#/company/"+coA, "#webhooks")
	b.run("private endpoint", chromedp.SetValue("#hook-url", "https://10.1.2.3/hooks"), chromedp.Click(`#hook-form button[type=submit]`))
	if msg := b.until("refusal", `document.querySelector("#webhooks > p.error").textContent || null`); msg != "url must point to a public address: 10.1.2.3 is a private address." {
		t.Errorf("the endpoint form's refusal: %q", msg)
	}
	// Create an endpoint: its signing secret is shown once; it is listed.
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
	h.secret, h.id = secret, id
}

// openEndpoint opens the endpoint's page, without the secret.
func (h *hookTour) openEndpoint() {
	t, b, secret, id := h.t, h.b, h.secret, h.id
	b.run("open endpoint", chromedp.Click(`#webhooks-table tr[data-webhook] a.url`), chromedp.WaitVisible("#deliveries"))
	if page := b.until("page", `document.getElementById("webhook")?.dataset.webhook || null`); page != id {
		t.Fatalf("opened endpoint %s, want %s", page, id)
	}
	if b.is("secret carried over", `document.body.textContent.includes(`+jsString(secret)+`)`) {
		t.Error("the secret is shown again on the endpoint's page")
	}
}

// clientCreated is a real event: an integrator's ERP creates a client with a TEST key; the
// change in the sandbox is detected and delivered as client.created, and the
// log shows it with the client's id.
func (h *hookTour) clientCreated() {
	t, in, b, recv := h.t, h.in, h.b, h.recv
	recv.at("a client created through the public API")
	key := in.key(t, coA, invoicing.Test, allScopes)
	made := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: key.Key, Company: coA, Body: `{"name":"Mukongo Comercial Lda"}`})
	if made.Status != 201 {
		t.Fatalf("create client: %d %s", made.Status, made.Body)
	}
	clientID, _ := made.json(t)["id"].(string)
	created := h.logged("client.created", clientID)
	if row := h.state(created, "delivered"); !strings.Contains(row, "client.created") || !strings.Contains(row, clientID) {
		t.Errorf("the client's delivery row: %q", row)
	}
	if n, what := recv.count(created), recv.delivered(created); n != 1 || what != "client.created "+clientID {
		t.Errorf("the receiver took %s %d times as %q, want once as client.created %s", created, n, what, clientID)
	}
	// Counted in English: one attempt, one event.
	h.health("health after one delivery", "100 % of 1 attempt\n", "1 event: 1 delivered, 0 pending, 0 failed")
	b.shotAt("w2-delivered", "#webhook")
	h.created = created
}

// testEvent sends a test event: the console's is delivered too, whatever happens in
// the sandbox.
func (h *hookTour) testEvent() {
	t, recv := h.t, h.recv
	recv.at("send a test event")
	test := h.send()
	h.state(test, "delivered")
	if recv.count(test) != 1 {
		t.Errorf("the receiver took the test event %d times, want 1", recv.count(test))
	}
	h.test = test
}

// receiverFailing fails the receiver while the platform records an
// invoice's payment in the sandbox: invoice.paid is attempted three times,
// each with its status, error and the answer's first bytes; the health says
// so; the log filters.
func (h *hookTour) receiverFailing() {
	t, w, b, recv, created := h.t, h.w, h.b, h.recv, h.created
	recv.at("receiver failing")
	recv.fail(true)
	invoiceID, err := gendata.Trigger(context.Background(), w.test, coA, "invoice.paid", time.Time{}) // at its transaction's start, as the platform records
	if err != nil {
		t.Fatalf("pay an invoice in the sandbox: %v", err)
	}
	paid := h.logged("invoice.paid", invoiceID)
	row := h.state(paid, "failed")
	for _, want := range []string{"answered 500 Internal Server Error", "boom: the ERP is down", "invoice.paid", invoiceID} {
		if !strings.Contains(row, want) {
			t.Errorf("the failed delivery's row lacks %q: %q", want, row)
		}
	}
	if why := b.text("why", `#deliveries tbody[data-event="`+paid+`"] .last-failure`); why != "last attempt: answered 500 Internal Server Error" {
		t.Errorf("the failed delivery says %q under its state", why)
	}
	if n := b.text("attempts", `#deliveries tbody[data-event="`+paid+`"] .attempt-count`); n != "3" {
		t.Errorf("attempts: %s, want 3", n)
	}
	// 2 of 5 attempts succeeded, 2 delivered, 1 failed.
	h.health("health after the failures", "40 %", "of 5 attempts", "2 delivered", "1 failed", "answered 500 Internal Server Error")
	b.shotAt("w3-retries-and-error", "#webhook")
	// Filtered: the failed one only, then the client's event only.
	b.run("filter failed", chromedp.SetValue("#filter-state", "failed"))
	b.until("filtered", `(rs => rs.length === 1 && rs[0].dataset.event === `+jsString(paid)+` ? "yes" : null)([...document.querySelectorAll("#deliveries tbody[data-event]")])`)
	b.any("#filter-state")
	b.run("by type", chromedp.SetValue("#filter-type", "client.created"))
	b.until("by type", `(rs => rs.length === 1 && rs[0].dataset.event === `+jsString(created)+` ? "yes" : null)([...document.querySelectorAll("#deliveries tbody[data-event]")])`)
	b.any("#filter-type")
	h.paid, h.invoiceID = paid, invoiceID
}

// recoverFailed recovers: the receiver answers again; every failed delivery since a
// day ago is sent once more (none waits for a retry), and arrives once.
func (h *hookTour) recoverFailed() {
	t, b, recv, created, test, paid, invoiceID := h.t, h.b, h.recv, h.created, h.test, h.paid, h.invoiceID
	recv.at("recover")
	recv.fail(false)
	// The time it recovers from is in UTC, as every time on the page: a day
	// ago by default.
	since, err := time.Parse("2006-01-02 15:04", b.until("recover since", `document.getElementById("recover-since").value || null`))
	if d := time.Since(since) - 24*time.Hour; err != nil || d < -5*time.Minute || d > 5*time.Minute {
		t.Errorf("recover since %v (%v): want a day ago in UTC", since, err)
	}
	b.run("recover", chromedp.Click(`#recover-form button[type=submit]`))
	if msg := b.until("recovered", `(t => t.includes("queued again") ? t : null)(document.getElementById("endpoint-msg").textContent)`); msg != "1 delivery queued again: 1 failed, 0 waiting for a retry." {
		t.Errorf("recover: %q", msg)
	}
	h.state(paid, "delivered")
	// Sent again, its attempts are counted afresh; the log keeps all four.
	if got := b.until("attempts", `(r => r.querySelector(".attempt-count").textContent + " " + [...r.querySelectorAll("table.attempts tbody tr")].map(a => a.className + ":" + a.cells[2].textContent).join(","))`+
		`(document.querySelector(`+jsString(`#deliveries tbody[data-event="`+paid+`"]`)+`))`); got != "1 failed:500,failed:500,failed:500,ok:204" {
		t.Errorf("attempts after the recovery: %q", got)
	}
	// The count says what it counts: "1 since it was sent again (4 in all)".
	if got := b.text("attempts since", `#deliveries tbody[data-event="`+paid+`"] td:nth-child(4)`); got != "1since it was sent again (4 in all)" && got != "1\nsince it was sent again (4 in all)" {
		t.Errorf("the attempts cell after the recovery: %q", got)
	}
	if recv.count(paid) != 1 || recv.delivered(paid) != "invoice.paid "+invoiceID || recv.count(created) != 1 || recv.count(test) != 1 {
		t.Errorf("the receiver took the payment %d times (as %q), the client %d times, the test %d times; want once each, the payment as invoice.paid %s",
			recv.count(paid), recv.delivered(paid), recv.count(created), recv.count(test), invoiceID)
	}
	b.shotAt("w4-recovered", "#deliveries")
}

// replay replays the client's event: it arrives again, with its id, and the
// page says so, its row updated, without a Refresh.
func (h *hookTour) replay() {
	t, b, recv, created := h.t, h.b, h.recv, h.created
	recv.at("replay")
	b.run("replay", chromedp.Click(`#deliveries tbody[data-event="`+created+`"] button.replay`))
	if msg := b.until("replayed", `(t => t.includes("sent again") ? t : null)(document.getElementById("endpoint-msg").textContent)`); msg != "Event "+created+" sent again: delivered (the receiver answered 204)." {
		t.Errorf("after Replay: %q", msg)
	}
	if got := b.text("replayed row", `#deliveries tbody[data-event="`+created+`"]`); !strings.Contains(got, "delivered") || strings.Contains(got, "due now") || strings.Count(got, "(an empty body)") != 2 {
		t.Errorf("the replayed delivery's row: %q, want delivered twice, each with the receiver's empty answer", got)
	}
	if recv.count(created) != 2 {
		t.Errorf("the replayed event arrived %d times, want 2", recv.count(created))
	}
	b.shotAt("w4b-replayed", "#deliveries")
}

// typesAndToggle changes its types, then disables it (since when, and why)
// and enables it again.
func (h *hookTour) typesAndToggle() {
	t, b, recv := h.t, h.b, h.recv
	recv.at("types, disable, enable")
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
}

// rotate rotates the secret, asked first, with an hour of overlap: the new
// secret is shown once, and signs the next delivery.
func (h *hookTour) rotate() {
	t, b, recv, secret := h.t, h.b, h.recv, h.secret
	recv.at("rotate")
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
	signed := h.send()
	h.state(signed, "delivered")
	h.signed = signed
}

// bumpyAttempts shows the attempts' failures: an attempt without an answer says why; one answered without a
// body says that: no cell left empty.
func (h *hookTour) bumpyAttempts() {
	t, b, recv := h.t, h.b, h.recv
	recv.at("a receiver that hangs up, then answers 503 without a body")
	recv.then("hang up", "empty 503")
	bumpy := h.send()
	h.state(bumpy, "delivered")
	got := b.until("bumpy attempts", `[...document.querySelectorAll(`+jsString(`#deliveries tbody[data-event="`+bumpy+`"] table.attempts tbody tr`)+`)]`+
		`.map(a => [2, 4, 5].map(i => a.cells[i].textContent).join(" | ")).join("\n")`)
	if want := "— | the receiver closed the connection without answering | no answer: the receiver closed the connection without answering\n" +
		"503 | answered 503 Service Unavailable | (an empty body)\n204 | delivered | (an empty body)"; got != want {
		t.Errorf("attempts:\n%s\nwant\n%s", got, want)
	}
	b.shotAt("w6a-why-attempts-failed", `#deliveries tbody[data-event="`+bumpy+`"]`)
	h.bumpy = bumpy
}

// olderPages shows the log a page of 20 at a time: the newest, then the older ones.
func (h *hookTour) olderPages() {
	t, in, b, recv, id, created, test, paid, signed, bumpy := h.t, h.in, h.b, h.recv, h.id, h.created, h.test, h.paid, h.signed, h.bumpy
	recv.at("twenty test events")
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
	if want := []string{bumpy, signed, paid, test, created}; !slices.Equal(older, want) {
		t.Errorf("pages: %q then %q, want 20 then the 5 older ones, newest first: %q", newest, older, want)
	}
	if !b.is("last page", `document.getElementById("deliveries-older").disabled`) {
		t.Error("Older is enabled on the last page")
	}
	b.shotAt("w6b-older-deliveries", "#deliveries")
	b.run("newest", chromedp.Click("#deliveries-newest"))
	b.until("back to the first page", `document.getElementById("deliveries-page").textContent === "page 1" ? "yes" : null`)
}

// deleteEndpoint deletes, asked first: cancelled, nothing; confirmed, back to
// the company, without the endpoint.
func (h *hookTour) deleteEndpoint() {
	b, recv := h.b, h.recv
	recv.at("delete")
	b.run("delete, cancel", chromedp.Click("#delete"), chromedp.WaitVisible("#ask"), chromedp.Click("#ask-cancel"), chromedp.WaitNotPresent("#ask"))
	b.run("delete", chromedp.Click("#delete"), chromedp.WaitVisible("#ask"))
	b.shotAt("w7-delete-asked", "#webhook")
	b.confirm("delete")
	b.run("back", chromedp.WaitVisible("#company"))
	b.until("gone", `document.querySelector("#webhooks-table") && !document.querySelector("#webhooks-table tr[data-webhook]") ? "yes" : null`)
}

// audit shows every change in the audit log, under the name signed in with;
// every delivery verified with the secrets the console showed.
func (h *hookTour) audit() {
	t, b, recv := h.t, h.b, h.recv
	actions := b.until("audit", `(a => a.includes("webhook.deleted") ? a.join(" ") : null)`+
		`([...document.querySelectorAll("#audit tr[data-action]")].filter(r => r.cells[1].textContent === "ana.silva").map(r => r.dataset.action).reverse())`)
	want := "webhook.created webhook.tested webhook.recovered webhook.replayed webhook.updated webhook.updated webhook.updated webhook.secret_rotated webhook.tested webhook.tested webhook.deleted"
	if actions != want {
		t.Errorf("audit actions:\n%s\nwant\n%s", actions, want)
	}
	if d := b.until("creation in the audit", `document.querySelector('#audit tr[data-action="webhook.created"] dl.diff').textContent`); !strings.Contains(d, "typesevery type") || strings.Contains(d, "none") {
		t.Errorf("the creation of an endpoint of every type in the audit log: %q", d)
	}
	if d := b.until("disable in the audit", `(r => r ? r.querySelector("dl.diff").textContent : null)(document.querySelectorAll('#audit tr[data-action="webhook.updated"]')[1])`); d != "enabledtrue → false" {
		t.Errorf("the disabling in the audit log: %q", d)
	}
	b.shotAt("w8-audit", "#audit")
	if refused := recv.refusals(); len(refused) != 0 {
		t.Errorf("deliveries that did not verify with the secrets the console showed:\n%s", strings.Join(refused, "\n"))
	}
}

// logged polls the delivery log, refreshing it, until it lists an event
// of type typ about resource, of company A in TEST (as its body says);
// it answers the event's id.
func (h *hookTour) logged(typ, resource string) string {
	t, b := h.t, h.b
	t.Helper()
	return b.until(typ+" of "+resource+" logged", `(r => r ? r.dataset.event : (document.getElementById("deliveries-refresh").click(), null))`+
		`([...document.querySelectorAll("#deliveries tbody[data-event]")].find(r => (d => d.length === 4 && d[1].textContent === `+jsString(typ)+
		` && d[2].dataset.mode === "TEST" && d[2].dataset.company === `+jsString(coA)+` && d[2].textContent.startsWith("TEST · ")`+
		` && d[3].textContent === `+jsString(resource)+`)(r.querySelectorAll("tr.delivery > td:first-child > div"))))`)
}

// state polls the delivery log, refreshing it, until the event's row is
// in the state; it answers the row's text.
func (h *hookTour) state(event, want string) string {
	t, b := h.t, h.b
	t.Helper()
	return b.until(event+" "+want, `(r => r && r.dataset.state === `+jsString(want)+` ? r.innerText : (document.getElementById("deliveries-refresh").click(), null))`+
		`(document.querySelector(`+jsString(`#deliveries tbody[data-event="`+event+`"]`)+`))`)
}

// health waits, refreshing the delivery log, until the endpoint's health
// says every one of want: a refresh reads the log and the health in two
// requests at once, so a row can say delivered while the health, read a
// moment earlier, still counts it pending.
func (h *hookTour) health(what string, want ...string) {
	t, b := h.t, h.b
	t.Helper()
	wants := make([]string, len(want))
	for i, w := range want {
		wants[i] = jsString(w)
	}
	expr := `(t => [` + strings.Join(wants, ", ") + `].every(w => t.includes(w)) ? t : (document.getElementById("deliveries-refresh").click(), null))(document.getElementById("health").innerText)`
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[string](expr, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(testenv.Patience))); err != nil {
		t.Errorf("%s: %v: the health says %q, want %q in it", what, err, b.text("health", "#health"), want)
	}
}

// queuedJS is the id of the event the page last said it queued.
const queuedJS = `(document.getElementById("endpoint-msg").textContent.match(/evt_[a-z0-9]+/) || [""])[0]`

// send sends a test event from the endpoint's page; it answers its id.
func (h *hookTour) send() string {
	t, b := h.t, h.b
	t.Helper()
	before := b.until("message", queuedJS+` + " "`)
	b.run("send test", chromedp.Click("#send-test"))
	return b.until("queued", `(id => id && id + " " !== `+jsString(before)+` ? id : null)(`+queuedJS+`)`)
}
