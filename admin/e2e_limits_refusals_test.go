package admin_test

import (
	"encoding/json"
	"testing"
)

// A limit with several values at fault names every one in one answer; a
// company the platform does not know gets no override (nor a what-if).
func TestLimitsRefusalsNameEveryFieldAndTheCompany(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	m := expectProblem(t, in.adminCall(t, req{Method: "PUT", Path: "/admin/v1/companies/" + coA + "/limits", Body: `{"mode":"PROD","rate":-1,"burst":0}`}), 400, "invalid_body")
	b, _ := json.Marshal(m)
	var p struct {
		Errors []struct{ Field, Message string }
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range p.Errors {
		got[e.Field] = e.Message
	}
	if len(p.Errors) != 3 || got["mode"] != "must be LIVE or TEST" || got["rate"] != "must be from 0.001 to 100000 requests per second" ||
		got["burst"] != "must be a whole number of requests from 1 to 100000" {
		t.Errorf("errors %+v, want mode, rate and burst", p.Errors)
	}
	unknown := "0a5e7c1e-0000-4000-8000-0000000000ff"
	expectProblem(t, in.adminCall(t, req{Method: "PUT", Path: "/admin/v1/companies/" + unknown + "/limits", Body: `{"rate":5,"burst":10}`}), 422, "unknown_company")
	if l, err := in.limiter.Limits(t.Context(), unknown); err != nil || l.LiveCustom || l.TestCustom {
		t.Errorf("the unknown company's limits: %+v, %v", l, err)
	}
	expectProblem(t, in.adminCall(t, req{Path: "/admin/v1/companies/" + unknown + "/limits/whatif?mode=LIVE&rate=5&burst=10"}), 422, "unknown_company")
}
