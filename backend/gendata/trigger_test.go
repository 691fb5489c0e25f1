package gendata_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
)

// Each trigger makes the change of its kind in a sandbox, on both engines,
// as the adapter then reads it.
func TestTrigger(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(t *testing.T) string{
		"postgres": pgURL,
		"sqlite":   func(t *testing.T) string { return sqliteURL(t, "sandbox.db") },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			live, sandbox := mk(t), mk(t)
			if _, err := gendata.LoadSmall(ctx, live, sandbox, 1); err != nil {
				t.Fatal(err)
			}
			base := time.Now().UTC().Truncate(time.Millisecond)
			now := base
			s, err := backend.Open(ctx, backend.Config{URL: sandbox, Now: func() time.Time { return base.Add(time.Hour) }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			co := gendata.DemoCompanyA
			for i, typ := range gendata.Triggers {
				now = base.Add(time.Duration(i) * time.Second) // each change at its own time, as people make them
				id, err := gendata.Trigger(ctx, sandbox, co, typ, now)
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				if typ == "client.created" || typ == "client.updated" {
					c, err := s.GetClient(ctx, co, id)
					if err != nil || !c.UpdatedAt.Equal(now) || (typ == "client.updated") == c.CreatedAt.Equal(now) {
						t.Errorf("%s: %+v %v", typ, c, err)
					}
					continue
				}
				inv, err := s.GetInvoice(ctx, co, id)
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				want := map[string]string{"invoice.issued": "ISSUED", "invoice.paid": "PAID", "invoice.cancelled": "CANCELLED",
					"invoice.overdue": "OVERDUE", "invoice.transmission.updated": ""}[typ]
				switch {
				case want != "" && (inv.Status != want || !inv.UpdatedAt.Equal(now)):
					t.Errorf("%s: %s updated %v", typ, inv.Status, inv.UpdatedAt)
				case want == "" && (inv.Transmission == nil || inv.Transmission.Status != "PENDING" || !inv.Transmission.SubmittedAt.Equal(now)):
					t.Errorf("%s: %+v", typ, inv.Transmission)
				}
			}
			// No time given: the transaction's own start, as the platform's.
			before := time.Now()
			id, err := gendata.Trigger(ctx, sandbox, co, "client.created", time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if c, err := s.GetClient(ctx, co, id); err != nil || c.UpdatedAt.Before(before.Add(-time.Second)) || c.UpdatedAt.After(time.Now().Add(time.Second)) {
				t.Errorf("a change at the transaction's start made at %v (%v), want between %v and now", c.UpdatedAt, err, before)
			}
			if _, err := gendata.Trigger(ctx, sandbox, co, "invoice.refunded", now); err == nil {
				t.Error("an unknown trigger was accepted")
			}
			if _, err := gendata.Trigger(ctx, sandbox, "0a5e7c1e-0000-4000-8000-0000000000ff", "client.updated", now); !errors.Is(err, gendata.ErrNothingToChange) {
				t.Errorf("a company without clients: %v", err)
			}
		})
	}
}
