package client_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/invoicing-ao/gateway/client"
)

// A receiver of the API's events: verify the delivery on its raw body,
// answer 2xx at once, then process each event once (deliveries may repeat
// and arrive out of order).
func ExampleWebhookVerifier() {
	verifier, err := client.NewWebhookVerifier(client.WebhookConfig{
		Secrets: []string{os.Getenv("INVOICING_WEBHOOK_SECRET")}, // whsec_…, from the dashboard
	})
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("POST /webhooks/invoicing", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 10<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		event, err := verifier.Verify(r.Header, body)
		if err != nil {
			http.Error(w, "invalid delivery", http.StatusBadRequest) // the gateway retries it
			return
		}
		w.WriteHeader(http.StatusNoContent)
		// In production: store event.ID under a unique key (a repeat is a
		// duplicate) and the event, and process it from your queue.
		switch event.Type {
		case string(client.InvoicePaid):
			inv, err := event.Invoice()
			if err == nil {
				log.Printf("%s paid: %s %s", inv.Number, inv.TotalAmount, inv.Currency)
			}
		case string(client.ClientCreated), string(client.ClientUpdated):
			c, err := event.Client()
			if err == nil {
				log.Printf("client %s as of %s", c.Name, c.UpdatedAt)
			}
		}
	})
	log.Fatal(http.ListenAndServe(":8000", nil))
}

// A receiver serving several companies, LIVE and TEST, from one URL: each
// company's endpoint of each mode has its own secret, so the delivery's
// body says whose verifier to use, and only once that verifier has
// verified it are its company and mode trusted.
func ExampleWebhookOwner() {
	type owner struct{ company, mode string }
	verifiers := map[owner]*client.WebhookVerifier{} // one per endpoint, made with its secret at start
	http.HandleFunc("POST /webhooks/invoicing", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 10<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		company, mode, err := client.WebhookOwner(body) // a claim until verified
		v := verifiers[owner{company, mode}]
		if err != nil || v == nil {
			http.Error(w, "no such endpoint", http.StatusBadRequest) // the gateway retries it
			return
		}
		event, err := v.Verify(r.Header, body)
		if err != nil {
			http.Error(w, "invalid delivery", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		// Verified: file it under its company's books, live or sandbox.
		log.Printf("%s %s: %s %s", event.CompanyID, event.Mode, event.Type, event.ID)
	})
	log.Fatal(http.ListenAndServe(":8000", nil))
}

// The Webhooks guide's example delivery, verified with its secret at the
// time it was sent.
func ExampleWebhookVerifier_Verify() {
	verifier, err := client.NewWebhookVerifier(client.WebhookConfig{
		Secrets: []string{"whsec_01YEJNq0fJoe3BJKEjpgvV16iodqLR/0JcLixTkhvTc="},
		Now:     func() time.Time { return time.Unix(1772356503, 0) }, // the delivery's time; omitted, the clock
	})
	if err != nil {
		log.Fatal(err)
	}
	h := http.Header{}
	h.Set("webhook-id", "evt_tpq676v2wyuzrl3tacitgepsv3")
	h.Set("webhook-timestamp", "1772356503")
	h.Set("webhook-signature", "v1,vPX9g3MT7Aetp2nTnjqQ4CYFG9c3dvzuAioKcO1/nfE=")
	body := `{"type":"client.created","timestamp":"2026-03-01T09:15:02.120Z","companyId":"0a5e7c1e-0000-4000-8000-00000000000a","mode":"LIVE","data":{"id":"3b9a8f51-2c4d-4e6f-8a1b-2c3d4e5f6a7b","name":"Kianda Comércio Lda","nif":"5417000001","email":"contas@kianda.co.ao","phone":"+244923456789","address":"Rua Amílcar Cabral 35, Luanda","type":"COMPANY","createdAt":"2026-03-01T09:15:02.120Z","updatedAt":"2026-03-01T09:15:02.120Z"}}`
	event, err := verifier.Verify(h, []byte(body))
	if err != nil {
		log.Fatal(err)
	}
	c, err := event.Client()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(event.ID, event.Type, event.Timestamp.Format(time.RFC3339Nano), event.CompanyID, event.Mode, c.Name, *c.Nif)
	// Output: evt_tpq676v2wyuzrl3tacitgepsv3 client.created 2026-03-01T09:15:02.12Z 0a5e7c1e-0000-4000-8000-00000000000a LIVE Kianda Comércio Lda 5417000001
}
