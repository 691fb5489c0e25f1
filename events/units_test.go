package events

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Pure logic of the rooms, table by table: no Redis, no database.

func TestWatermarkEncoding(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 9, 15, 2, 123456000, time.UTC)
	p := position(at, "21000000-0000-4000-8000-000000000001")
	back, ok := decodeMark(encodeMark(p))
	if !ok || !back.At.Equal(at) || back.ID != p.ID {
		t.Errorf("round trip of %v: %v %v", p, back, ok)
	}
	for _, raw := range []string{"", markRewind, "|x", "abc|x", "123", "12.5|x"} {
		if _, ok := decodeMark(raw); ok {
			t.Errorf("decodeMark(%q) read a position", raw)
		}
	}
	if p, ok := decodeMark("0|"); !ok || !p.At.Equal(time.UnixMicro(0)) || p.ID != "" {
		t.Errorf(`decodeMark("0|") = %v %v, want the epoch and no id`, p, ok)
	}
}

func TestMarkTime(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		stream, raw string
		want        time.Time
		ok          bool
	}{
		{"clients", encodeMark(position(at, "c")), at, true},
		{"clients", "", time.Time{}, false},
		{"clients", markRewind, time.Time{}, false},
		{"overdue", "2026-03-01||", time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC), true}, // Luanda's midnight of the 2nd
		{"overdue", "2026-03-01|2026-03-04|x", time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC), true},
		{"overdue", markRewind, time.Time{}, false},
	}
	for _, c := range cases {
		got, ok := markTime(c.stream, c.raw)
		if ok != c.ok || !got.Equal(c.want) {
			t.Errorf("markTime(%s, %q) = %v %v, want %v %v", c.stream, c.raw, got, ok, c.want, c.ok)
		}
	}
}

func TestOverdueAt(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"2026-03-01": "2026-03-01T23:00:00Z", // the next day's start in Luanda (UTC+1)
		"2026-12-31": "2026-12-31T23:00:00Z",
		"2026-02-29": "", // no such date
		"01/03/2026": "",
		"":           "",
	}
	for date, want := range cases {
		got, ok := overdueAt(date)
		if (want == "") == ok || ok && got.UTC().Format(time.RFC3339) != want {
			t.Errorf("overdueAt(%q) = %v %v, want %q", date, got, ok, want)
		}
	}
}

func TestRecentFrom(t *testing.T) {
	t.Parallel()
	d := &detector{recovery: 24 * time.Hour}
	at := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if got := d.recentFrom(at); !got.Equal(at.Add(-24 * time.Hour)) {
		t.Errorf("recentFrom = %v, want Recovery before the position", got)
	}
}

// route sends an event to its company's endpoints that want its type,
// were created by the change's time and had not expired by then.
func TestRoute(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	later, earlier := t0.Add(time.Minute), t0.Add(-time.Minute)
	tg := &targets{byCompany: map[string][]Webhook{
		"A": {
			{ID: "all", CreatedAt: earlier, Types: []Type{}},
			{ID: "paid-only", CreatedAt: earlier, Types: []Type{InvoicePaid}},
			{ID: "newer", CreatedAt: later},
			{ID: "expired", CreatedAt: earlier, ExpiresAt: &t0},
			{ID: "expires-later", CreatedAt: earlier, ExpiresAt: &later},
			{ID: "same-instant", CreatedAt: t0},
		},
		"B": {{ID: "other-company", CreatedAt: earlier}},
	}}
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{CompanyID: "A", Type: InvoicePaid, Time: t0}, "all paid-only expires-later same-instant"},
		{Event{CompanyID: "A", Type: ClientCreated, Time: t0}, "all expires-later same-instant"},
		{Event{CompanyID: "A", Type: ClientCreated, Time: earlier.Add(-time.Second)}, ""},
		{Event{CompanyID: "C", Type: ClientCreated, Time: t0}, ""},
	}
	for _, c := range cases {
		if got := strings.Join(tg.route(&c.ev), " "); got != c.want {
			t.Errorf("route(%s of %s at %v) = %q, want %q", c.ev.Type, c.ev.CompanyID, c.ev.Time, got, c.want)
		}
	}
	all := tg.routeAll([]Event{cases[0].ev, cases[2].ev, cases[1].ev}, false)
	if len(all) != 2 || len(all[0].eps) != 4 || len(all[1].eps) != 3 {
		t.Errorf("routeAll kept %+v, want the two events an endpoint wants, in order", all)
	}
	// With the feed, every event is kept, those no endpoint wants with none.
	if fed := tg.routeAll([]Event{cases[0].ev, cases[2].ev}, true); len(fed) != 2 || len(fed[1].eps) != 0 {
		t.Errorf("routeAll for the feed kept %+v, want both events", fed)
	}
}

// An event's marker is the same wherever it is computed, in range, and
// generations give Remember plus at most a period of memory.
func TestMarkersAndGenerations(t *testing.T) {
	t.Parallel()
	shard, member := marker("evt_aaaaaaaaaaaaaaaaaaaaaaaaaa")
	if s2, m2 := marker("evt_aaaaaaaaaaaaaaaaaaaaaaaaaa"); s2 != shard || m2 != member {
		t.Error("the same id has two markers")
	}
	if s2, m2 := marker("evt_aaaaaaaaaaaaaaaaaaaaaaaaab"); s2 == shard && m2 == member {
		t.Error("two ids share a marker")
	}
	n, err := strconv.Atoi(shard)
	m, err2 := strconv.ParseInt(member, 10, 64)
	if err != nil || n < 0 || n >= markerShards || err2 != nil || m < 0 {
		t.Errorf("marker = %s %s, want a shard below %d and a positive int64", shard, member, markerShards)
	}
	q := &queue{remember: 8 * time.Hour}
	if q.markerPeriod() != 2*time.Hour {
		t.Errorf("period %v, want Remember/4", q.markerPeriod())
	}
	for _, now := range []time.Time{time.UnixMilli(0).Add(20 * time.Hour), time.UnixMilli(0).Add(21*time.Hour + 59*time.Minute)} {
		oldest, current, keep := q.generations(now)
		if current != 10 || oldest != 6 {
			t.Errorf("at %v: generations %d..%d, want 6..10", now, oldest, current)
		}
		// Kept Remember past the generation's end: 22h + 8h.
		if end := now.Add(keep); !end.Equal(time.UnixMilli(0).Add(30 * time.Hour)) {
			t.Errorf("at %v: kept until %v, want Remember past the generation's end", now, end)
		}
	}
}

// A retry is delayed by its schedule and up to 10 % more, the same for an
// event whoever computes it; attempts past the schedule are not retried.
func TestRetryJitterAndSchedule(t *testing.T) {
	t.Parallel()
	d := time.Minute
	spread := map[time.Duration]bool{}
	for i := range 50 {
		ev := "evt_" + strconv.Itoa(i)
		j := jitter(d, ev)
		if j < d || j >= d+d/10 {
			t.Errorf("jitter(%v, %s) = %v, want within [d, 1.1 d)", d, ev, j)
		}
		if jitter(d, ev) != j {
			t.Errorf("jitter of %s differs between two calls", ev)
		}
		spread[j] = true
	}
	if len(spread) < 25 {
		t.Errorf("50 events got %d distinct delays: retries are not spread", len(spread))
	}
	q := &queue{schedule: []time.Duration{time.Second, time.Minute}, timeout: 10 * time.Second, leaseMargin: 20 * time.Second}
	for attempts, want := range []bool{true, true, false} {
		if got := q.willRetry(claim{attempts: attempts}); got != want {
			t.Errorf("willRetry after %d attempts = %v, want %v", attempts, got, want)
		}
	}
	if q.leaseFor() != 30*time.Second {
		t.Errorf("lease %v, want the timeout and the margin", q.leaseFor())
	}
}

func TestThrottle(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	th := throttle{every: time.Minute}
	steps := []struct {
		after time.Duration
		want  bool
	}{{0, true}, {time.Second, false}, {time.Minute, false}, {time.Minute + time.Millisecond, true}, {time.Minute + 2*time.Millisecond, false}, {3 * time.Minute, true}}
	for _, s := range steps {
		if got := th.due(t0.Add(s.after)); got != s.want {
			t.Errorf("due at +%v = %v, want %v", s.after, got, s.want)
		}
	}
}

func TestIDsAndCursors(t *testing.T) {
	t.Parallel()
	id := newEndpointID()
	cases := []struct {
		name string
		ok   func(string) bool
		in   string
		want bool
	}{
		{"endpoint", validEndpointID, id, true},
		{"endpoint", validEndpointID, "ep_", false},
		{"endpoint", validEndpointID, "ep_" + strings.Repeat("A", 26), false}, // upper case is not ours
		{"endpoint", validEndpointID, "xx_" + id[3:], false},
		{"event", validEventID, eventID(invoicing.Test, "c", ClientCreated, "r", ""), true},
		{"event", validEventID, "evt_" + strings.Repeat("1", 26), false},
		{"event", validEventID, "evt_abc", false},
		{"cursor", ValidDeliveryCursor, "1700000000000:evt_aaaaaaaaaaaaaaaaaaaaaaaaaa", true},
		{"cursor", ValidDeliveryCursor, "-1:evt_aaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"cursor", ValidDeliveryCursor, "1700000000000", false},
		{"cursor", ValidDeliveryCursor, "x:evt_aaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, c := range cases {
		if got := c.ok(c.in); got != c.want {
			t.Errorf("valid %s %q = %v, want %v", c.name, c.in, got, c.want)
		}
	}
}

func TestParseTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []string
		want string // the types, or the error's field message
	}{
		{nil, ""},
		{[]string{"invoice.paid", " client.created "}, "invoice.paid client.created"},
		{[]string{"invoice.payed"}, `must be among`},
		{[]string{"invoice.paid", "invoice.paid"}, "given twice"},
		{[]string{string(TestType)}, "must be among"}, // a test delivery is not subscribed to
	}
	for _, c := range cases {
		got, err := ParseTypes(c.in)
		var s string
		if err != nil {
			if !errors.Is(err, ErrInvalidWebhook) {
				t.Errorf("ParseTypes(%q): %v is not ErrInvalidWebhook", c.in, err)
			}
			s = err.Error()
		} else {
			s = strings.Join(typeNames(got), " ")
		}
		if !strings.Contains(s, c.want) || c.want == "" && s != "" {
			t.Errorf("ParseTypes(%q) = %q, want %q", c.in, s, c.want)
		}
	}
}

func TestCheckDescription(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"Produção, ERP de Luanda":             true,
		"":                                    true,
		strings.Repeat("a", MaxDescription):   true,
		strings.Repeat("a", MaxDescription+1): false,
		"line\nbreak":                         false,
		"bidi \u202e trick":                   false,
		"zero\u200bwidth":                     false,
		string([]byte{0xff, 0xfe}):            false,
	}
	for in, ok := range cases {
		if err := checkDescription(in); (err == nil) != ok || err != nil && !errors.Is(err, ErrInvalidWebhook) {
			t.Errorf("checkDescription(%q) = %v, want ok %v", invoicing.Clip(in), err, ok)
		}
	}
}

// An endpoint's record decodes as it was written: its health from the
// hash's fields, its previous secret's end, and nothing from garbage.
func TestDecodeEndpoint(t *testing.T) {
	t.Parallel()
	until := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	raw, _ := json.Marshal(config{CompanyID: "c", Mode: invoicing.Test, URL: "https://x.example/h", CreatedAt: until.Add(-24 * time.Hour),
		Secrets: []secret{{Secret: "s2"}, {Secret: "s1", Until: until}}})
	e, ok, err := decodeEndpoint("ep_x", map[string]string{"cfg": string(raw), "enabled": "1", "ok": "1772323200000", "failing": "garbage", "err": "answered 500"})
	if err != nil || !ok {
		t.Fatalf("decode: %v %v", ok, err)
	}
	if !e.Enabled || e.CompanyID != "c" || e.current() != "s2" || e.Types == nil || len(e.Types) != 0 || e.PreviousSecretUntil == nil || !e.PreviousSecretUntil.Equal(until) {
		t.Errorf("decoded %+v", e)
	}
	if e.Health.LastSuccessAt == nil || e.Health.LastSuccessAt.UnixMilli() != 1772323200000 || e.Health.FailingSince != nil || e.Health.LastError != "answered 500" {
		t.Errorf("health %+v", e.Health)
	}
	if _, ok, err := decodeEndpoint("ep_x", map[string]string{}); ok || err != nil {
		t.Errorf("no record: %v %v, want not found", ok, err)
	}
	if _, _, err := decodeEndpoint("ep_x", map[string]string{"cfg": "{"}); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("a corrupt record: %v", err)
	}
	for in, want := range map[string]bool{"": false, "0": false, "-5": false, "x": false, "1772323200000": true} {
		if got := msTime(in); (got != nil) != want {
			t.Errorf("msTime(%q) = %v", in, got)
		}
	}
}

// An import refuses, with ErrInvalidState naming the endpoint, a record the
// service could not have written, and reads back one it could.
func TestWebhookRecordCheck(t *testing.T) {
	t.Parallel()
	good := func() WebhookRecord {
		c := config{CompanyID: testCompany, Mode: invoicing.Live, URL: "https://x.example/h", CreatedAt: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
			Types: []Type{InvoicePaid}, Secrets: []secret{{Secret: newSecret()}}}
		raw, _ := json.Marshal(c)
		return WebhookRecord{ID: newEndpointID(), Fields: map[string]string{"cfg": string(raw), "enabled": "1"}}
	}
	edit := func(f func(*config)) WebhookRecord {
		r := good()
		var c config
		_ = json.Unmarshal([]byte(r.Fields["cfg"]), &c)
		f(&c)
		raw, _ := json.Marshal(c)
		r.Fields["cfg"] = string(raw)
		return r
	}
	set := func(k, v string) WebhookRecord {
		r := good()
		r.Fields[k] = v
		return r
	}
	cases := []struct {
		name string
		r    WebhookRecord
		want string // "" for accepted
	}{
		{"good", good(), ""},
		{"id", WebhookRecord{ID: "ep_1", Fields: good().Fields}, "not an endpoint id"},
		{"field", set("secret", "x"), `unknown field "secret"`},
		{"cfg", set("cfg", "{"), "cfg:"},
		{"company", edit(func(c *config) { c.CompanyID = "A0000000-0000-4000-8000-00000000000A" }), "company, mode or creation time"},
		{"mode", edit(func(c *config) { c.Mode = "PROD" }), "company, mode or creation time"},
		{"url holding a secret", edit(func(c *config) { c.URL = "https://x.example/?k=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }), "url: must not hold"},
		{"description", edit(func(c *config) { c.Description = "a\u202Eb" }), "description"},
		{"types", edit(func(c *config) { c.Types = []Type{"invoice.payed"} }), "types"},
		{"no secret", edit(func(c *config) { c.Secrets = nil }), "no signing secret"},
		{"sealed secret", edit(func(c *config) { c.Secrets = []secret{{Secret: "age1..."}} }), "not one"},
		{"enabled", set("enabled", "yes"), "enabled"},
	}
	for _, c := range cases {
		_, err := c.r.check()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrInvalidState) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want ErrInvalidState saying %q", c.name, err, c.want)
		}
	}
}
