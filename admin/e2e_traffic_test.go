package admin_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The console's data through the admin API: every company's traffic, one
// company's by the minute beside its limits, and who is near a limit.
func TestTrafficViews(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start(func(c *instanceConfig) {
		c.liveLimit.Rate, c.liveLimit.Burst = 0.05, 3 // 3 a minute: the 4th is a 429
	})
	in.clock.Set(time.Date(2026, 3, 1, 9, 0, 10, 0, time.UTC))
	k := in.key(t, coA, invoicing.Live, allScopes)
	for range 4 {
		do(t, in.pub.URL, req{Path: "/api/v1/v1/clients?pageSize=1", Key: k.Key, Company: coA})
	}
	in.clock.Add(time.Minute) // the minute is complete
	if err := in.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	admin := func(path string, into any) {
		t.Helper()
		r := do(t, in.admin.URL, req{Path: path, Header: map[string]string{"Authorization": "Bearer " + in.adminToken}})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		if err := json.Unmarshal(r.Body, into); err != nil {
			t.Fatal(err)
		}
	}
	var o struct {
		ActiveToday, ActiveLastHour int
		TopLastHour                 []struct {
			CompanyID string
			Requests  int
		}
		NearLimit []struct {
			CompanyID        string
			Rate             struct{ Live float64 }
			RateLimitedToday int
		}
		Minutes []struct{ Total int }
	}
	admin("/admin/v1/overview?top=5", &o)
	if o.ActiveToday != 1 || o.ActiveLastHour != 1 || len(o.TopLastHour) != 1 || o.TopLastHour[0].CompanyID != coA || o.TopLastHour[0].Requests != 4 {
		t.Fatalf("overview: %+v", o)
	}
	if len(o.NearLimit) != 1 || o.NearLimit[0].CompanyID != coA || o.NearLimit[0].RateLimitedToday != 1 || o.NearLimit[0].Rate.Live < 0.066 {
		t.Fatalf("near limit: %+v, want company A at 4/60 rps with one 429", o.NearLimit)
	}
	var m struct {
		CompanyID string
		Minutes   []struct {
			Time        string
			Total       int
			RateLimited struct{ Live int }
		}
		Limits struct{ Live struct{ Rate float64 } }
		Rate   struct{ Live float64 }
	}
	admin("/admin/v1/companies/"+coA+"/usage/minutes?minutes=3", &m)
	if len(m.Minutes) != 3 || m.Minutes[1].Time != "2026-03-01T10:00" || m.Minutes[1].Total != 4 || m.Minutes[1].RateLimited.Live != 1 ||
		m.Limits.Live.Rate != 0.05 || m.Rate.Live != 4.0/60 {
		t.Fatalf("minutes: %+v", m)
	}
	r := do(t, in.admin.URL, req{Path: "/admin/v1/companies/" + coA + "/usage/minutes?minutes=1", Header: map[string]string{"Authorization": "Bearer " + in.adminToken}})
	expectProblem(t, r, 400, "invalid_parameter")
}
