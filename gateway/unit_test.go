package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The lists' own parameters: dates, and free text trimmed and without
// control characters.
func TestFilterParams(t *testing.T) {
	t.Parallel()
	q := web.ParseQuery("from=2026-01-31&to=2026-13-01", "from", "to")
	if dateParam(q, "from") != "2026-01-31" || dateParam(q, "to") != "" || q.Err() == nil {
		t.Errorf("dates: %v", q.Err())
	}
	q = web.ParseQuery("search=+%20Kianda%20", "search")
	if s := searchParam(q, "search"); s != "Kianda" {
		t.Errorf("search trimmed to %q", s)
	}
	q = web.ParseQuery("search=a%00b", "search")
	if searchParam(q, "search"); q.Err() == nil {
		t.Error("control character accepted in search")
	}
}

func TestDecodeNewClient(t *testing.T) {
	t.Parallel()
	post := func(body string) (invoicing.NewClient, error) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json; charset=utf-8")
		return decodeRequest(r)
	}
	nc, err := post(`{"name":" Ana ","nif":"000238553ca017","phone":"+244 923 456 789","email":null,"type":"INDIVIDUAL"}`)
	if err != nil {
		t.Fatal(err)
	}
	if nc.Name != "Ana" || *nc.NIF != "000238553CA017" || *nc.Phone != "+244923456789" || nc.Email != nil || *nc.Type != "INDIVIDUAL" {
		t.Fatalf("normalized: %+v", nc)
	}
	for _, ok := range []string{"123456789", "5417000001", " 541 700 0001", "000238553CA017"} {
		if _, err := post(`{"name":"x","nif":"` + ok + `"}`); err != nil {
			t.Errorf("nif %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"999999999", "99999999", "12345678901", "000238553C017", "ABCDEFGHI", ""} {
		if _, err := post(`{"name":"x","nif":"` + bad + `"}`); err == nil {
			t.Errorf("nif %q accepted", bad)
		}
	}
	for _, bad := range []string{"a@b", "@b.ao", "a@.ao", "a@b.ao.", "a b@c.ao", "<a@b.ao>"} {
		if _, err := post(`{"name":"x","email":"` + bad + `"}`); err == nil {
			t.Errorf("email %q accepted", bad)
		}
	}
}

// decodeRequest is what createClient does with a request's body.
func decodeRequest(r *http.Request) (invoicing.NewClient, error) {
	body, err := web.ReadBody(r)
	if err != nil {
		return invoicing.NewClient{}, err
	}
	return decodeNewClient(body)
}

func TestIdempotencyKeyHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vals []string
		ok   bool
	}{
		{nil, false}, {[]string{"a"}, true}, {[]string{strings.Repeat("k", 255)}, true}, {[]string{" ~!{}"}, true},
		{[]string{""}, false}, {[]string{strings.Repeat("k", 256)}, false}, {[]string{"chave-é"}, false},
		{[]string{"tab\there"}, false}, {[]string{"\x7f"}, false}, {[]string{"nl\n"}, false}, {[]string{"a", "b"}, false},
	} {
		h := http.Header{}
		for _, v := range tc.vals {
			h.Add("Idempotency-Key", v)
		}
		key, given, err := idempotencyKey(h)
		switch {
		case tc.vals == nil:
			if given || err != nil {
				t.Errorf("no header: given %v, %v", given, err)
			}
		case tc.ok != (err == nil) || tc.ok && (!given || key != tc.vals[0]):
			t.Errorf("%q: key %q, given %v, err %v; want ok %v", tc.vals, key, given, err, tc.ok)
		case err != nil:
			asProblem(t, err, "invalid_parameter")
		}
	}
}
