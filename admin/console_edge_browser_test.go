package admin_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The console's words at the admin API's edge, in a real browser: a
// refusal naming a field says the field's own message, not the API's
// title beside it; revoking the key a roll made offers to revoke the key it
// replaced (ticked), names it, and does; the audit log's header reads as a
// sentence.
func TestConsoleEdgeWordsInBrowser(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	b := newBrowser(t, in)
	old := in.key(t, coB, invoicing.Live, allScopes)
	r := in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys/" + old.ID + "/roll", Body: `{"overlapSeconds":86400}`})
	successor, _ := r.json(t)["id"].(string)
	b.signIn(in.adminToken, "ana.silva")
	b.open("#/company/"+coB, "#keys-table")

	// A key named with a webhook signing secret is refused by its field.
	b.run("secret in a name", chromedp.SendKeys("#key-name", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
		chromedp.Click(`#key-form button[type=submit]`))
	msg := b.until("refusal", `document.querySelector("#keys > p.error").textContent || null`)
	if msg != "name must not hold what looks like an API key or a webhook signing secret: the audit log records every change, and never a secret." {
		t.Errorf("the key form's refusal: %q", msg)
	}

	b.until("the successor listed", keyRowJS(successor)+` ? "yes" : null`)
	b.run("revoke the successor", chromedp.Click(`#keys-table tr[data-key="`+successor+`"] button.revoke`), chromedp.WaitVisible("#ask"))
	offer := b.until("the offer", `(l => l ? l.textContent : null)(document.getElementById("revoke-previous-label"))`)
	if !strings.Contains(offer, "Also revoke "+old.ID+", the key it replaced, which still works until ") ||
		!b.is("ticked", `document.getElementById("revoke-previous").checked`) {
		t.Errorf("the revoke dialog's offer: %q", offer)
	}
	b.shotAt("e1-revoke-rolled", "#ask")
	b.confirm("revoke")
	note := b.until("said", `document.getElementById("keys-note").textContent || null`)
	if note != "Revoked "+successor+" and "+old.ID+", the key it replaced." {
		t.Errorf("after the revocation: %q", note)
	}
	if got := b.until("old key revoked", `(r => r && r.dataset.state === "revoked" ? "revoked" : null)(`+keyRowJS(old.ID)+`)`); got != "revoked" {
		t.Errorf("the old key's row: %s", got)
	}

	// Key created, rolled (2 events), two revoked: "5 events.", as a
	// sentence (the period chosen stands in for its select).
	header := b.until("audit header", `(p => p && document.getElementById("audit-count").textContent === "5 events." ?
		[...p.childNodes].map(n => n.tagName === "SELECT" ? "[" + n.selectedOptions[0].textContent + "]" : n.textContent).join("") : null)(document.querySelector("#audit > p.muted"))`)
	if header != "Over [the last 30 days], newest first: 5 events." {
		t.Errorf("the audit log's header: %q", header)
	}
}
