package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The console on a real Redis master and replica whose link the test holds
// back, every change waiting for the replica: a revocation the replica does
// not confirm is said plainly in the key's row (it may or may not have
// applied; repeat it once Redis is healthy), and repeating it from the same
// row once the replica is back succeeds and shows the key revoked.
func TestConsoleSaysChangeNotConfirmed(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	w := newWorldOn(t, r.Client(), "console-durable:")
	in := w.start(withReplicas(1, time.Second))
	k := in.key(t, coA, invoicing.Live, allScopes)
	b := newBrowser(t, in)
	b.signIn(in.adminToken, "ana.silva")
	b.open("#/company/"+coA, `tr[data-key="`+k.ID+`"] button.revoke`)

	r.Link.Pause()
	b.run("revoke", chromedp.Click(`tr[data-key="`+k.ID+`"] button.revoke`))
	b.confirm("revoke")
	msg := b.until("the row's message", `(e => e && e.textContent ? e.textContent : null)(`+keyRowJS(k.ID)+`?.querySelector(".error"))`)
	for _, want := range []string{"may or may not have applied", "Repeat it once Redis is healthy", "revoke it again"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the unconfirmed revocation's message %q does not say %q", msg, want)
		}
	}
	b.shotAt("durable-1-revocation-not-confirmed", `#keys-table tr[data-key="`+k.ID+`"]`)
	// In effect on the master all the same.
	if res := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: k.Key, Company: coA}); res.Status != 401 {
		t.Errorf("the key whose revocation is unconfirmed: %d, want 401", res.Status)
	}

	r.Link.Resume()
	b.run("revoke again", chromedp.Click(`tr[data-key="`+k.ID+`"] button.revoke`))
	b.confirm("revoke again")
	b.until("revoked", keyRowJS(k.ID)+`?.dataset.state === "revoked" ? "yes" : null`)
}
