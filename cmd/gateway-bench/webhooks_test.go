package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// N changes split by the measurement's shares; what the companies lack is
// created instead.
func TestPlanChanges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n, issued, clients int
		want               changeCounts
	}{
		{100000, 1 << 30, 1 << 30, changeCounts{36603, 20000, 43397}}, // docs/performance.md's run
		{30, 100, 100, changeCounts{11, 6, 13}},
		{30, 4, 100, changeCounts{4, 6, 20}},
		{30, 100, 0, changeCounts{11, 0, 19}},
		{1, 100, 100, changeCounts{0, 0, 1}},
		{3, 100, 100, changeCounts{1, 1, 1}},
		{0, 100, 100, changeCounts{0, 0, 0}},
	} {
		if got := planChanges(c.n, c.issued, c.clients); got != c.want || got.total() != c.n {
			t.Errorf("planChanges(%d, %d, %d) = %v, want %v", c.n, c.issued, c.clients, got, c.want)
		}
	}
}

// Batches of at most the size, the kinds in turn, covering every row once.
func TestChangeBatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		counts changeCounts
		size   int
		want   []changeBatch
	}{
		{changeCounts{}, 10, nil},
		{changeCounts{2, 1, 3}, 10, []changeBatch{{payInvoice, 0, 2}, {changeClient, 0, 1}, {createClient, 0, 3}}},
		{changeCounts{3, 0, 5}, 2, []changeBatch{{payInvoice, 0, 2}, {createClient, 0, 2}, {payInvoice, 2, 3},
			{createClient, 2, 4}, {createClient, 4, 5}}},
		{changeCounts{0, 2, 0}, 0, []changeBatch{{changeClient, 0, 1}, {changeClient, 1, 2}}}, // a size below 1 means 1
	} {
		got := changeBatches(c.counts, c.size)
		if len(got) != len(c.want) {
			t.Errorf("changeBatches(%v, %d) = %v, want %v", c.counts, c.size, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("changeBatches(%v, %d) = %v, want %v", c.counts, c.size, got, c.want)
				break
			}
		}
	}
}

// The drain ends when every expected event arrived, when nothing arrived
// for the quiet time, or at the timeout.
func TestDrainVerdict(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	sec := func(n int) time.Time { return from.Add(time.Duration(n) * time.Second) }
	for _, c := range []struct {
		distinct, expected int
		now, last          time.Time
		want               string
	}{
		{10, 10, sec(1), sec(0), "all"},
		{12, 10, sec(1), sec(0), "all"}, // others' events too
		{0, 0, sec(0), time.Time{}, "all"},
		{5, 10, sec(10), sec(9), ""},
		{5, 10, sec(40), sec(9), "quiet"},
		{0, 10, sec(29), time.Time{}, ""}, // the quiet time counts from the drain's start
		{0, 10, sec(30), time.Time{}, "quiet"},
		{5, 10, sec(-5), sec(-40), ""}, // the last one came before the drain
		{5, 10, sec(600), sec(599), "timeout"},
	} {
		if got := drainVerdict(c.distinct, c.expected, c.now, from, c.last, 30*time.Second, 10*time.Minute); got != c.want {
			t.Errorf("%d of %d at %s, last %s: %q, want %q", c.distinct, c.expected, c.now.Sub(from), c.last.Sub(from), got, c.want)
		}
	}
}

// The receiver counts every delivery, each event once, and its types; one
// that did not verify is counted apart, with why.
func TestReceiverTally(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		got  [][3]string // id, type, why
		want string
	}{
		{"none", nil, "0 deliveries of 0 distinct events, none twice, signatures all verified ()"},
		{"each once", [][3]string{{"e1", "invoice.paid", ""}, {"e2", "client.created", ""}, {"e3", "client.created", ""}},
			"3 deliveries of 3 distinct events, none twice, signatures all verified (client.created 2, invoice.paid 1)"},
		{"one again", [][3]string{{"e1", "invoice.paid", ""}, {"e1", "invoice.paid", ""}},
			"2 deliveries of 1 distinct events, 1 sent again, signatures all verified (invoice.paid 1)"},
		{"unverified", [][3]string{{"e1", "", "no webhook signature matches"}, {"e2", "client.updated", ""}},
			"2 deliveries of 2 distinct events, none twice, signatures 1 NOT verified (last: no webhook signature matches) ((unverified) 1, client.updated 1)"},
	} {
		r := &receiver{seen: map[string]bool{}, byType: map[string]int{}}
		for _, d := range c.got {
			r.record(d[0], d[1], d[2], time.Now())
		}
		if got := r.tally().String(); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// A refused endpoint says what the gateway needs.
func TestEndpointRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{&apiError{"POST /admin/v1/companies/x/webhooks", 400, "400 Bad Request", `{"code":"invalid_body","detail":"url must use https"}`}, "eventsAllowedNetworks: 127.0.0.0/8"},
		{&apiError{"POST /admin/v1/companies/x/webhooks", 409, "409 Conflict", `{"code":"webhook_endpoint_limit_reached"}`}, "most LIVE endpoints already"},
		{&apiError{"POST /admin/v1/companies/x/webhooks", 503, "503 Service Unavailable", `{"code":"events_unavailable"}`}, "503 Service Unavailable"},
		{errors.New("connection refused"), "connection refused"},
	} {
		if got := endpointRefused(c.err).Error(); !strings.Contains(got, c.want) {
			t.Errorf("%v: %q, want %q in it", c.err, got, c.want)
		}
	}
}

// loopbackEvents are events as `gateway serve` runs them with
// eventsAllowHTTP and eventsAllowedNetworks=127.0.0.0/8, with a short tick
// and a settle long enough for a busy machine's commits.
func loopbackEvents() *events.Config {
	return &events.Config{AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Tick: 100 * time.Millisecond, Settle: 3 * time.Second, Sweep: 30 * time.Second, Timeout: 5 * time.Second}
}

// gateway-bench --webhooks --changes against an in-process gateway running
// its events: an endpoint per company, 30 changes committed during the
// load, every event delivered once and verified, counted by type, and the
// endpoints and keys gone at the end.
func TestWebhooksAndChanges(t *testing.T) {
	t.Parallel()
	g := startGatewayEvents(t, loopbackEvents())
	ctx := context.Background()
	var out, errb strings.Builder
	code := run(ctx, []string{"--url", g.pub, "--admin-url", g.admin, "--admin-token", g.adminToken,
		"--companies", "2", "--database", g.liveURL, "--raise-limits", "--duration", "1s", "--warmup", "0s",
		"--connections", "4", "--rate", "50", "--webhooks", "--changes", "30", "--changes-batch", "4",
		"--drain-timeout", "3m", "--drain-quiet", "90s", "--pid", strconv.Itoa(os.Getpid())}, &out, &errb, noEnv)
	report := out.String()
	t.Log(report)
	if code != 0 {
		t.Fatalf("bench: %d %s", code, errb.String())
	}
	if !regexp.MustCompile(`webhooks: 2 LIVE endpoints to http://127\.0\.0\.1:\d+/hooks/COMPANY`).MatchString(report) {
		t.Errorf("no endpoints line")
	}
	if !regexp.MustCompile(`changes: 30 committed in \S+, 9 transactions of up to 4 rows: 11 invoices paid, 6 clients changed, 13 clients created`).MatchString(report) {
		t.Errorf("no changes line, or other counts")
	}
	m := regexp.MustCompile(`drain: all (\d+) expected events arrived \(30 changes \+ (\d+) clients created by the load\)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no drain line")
	}
	expected, _ := strconv.Atoi(m[1])
	byLoad, _ := strconv.Atoi(m[2])
	want := "webhooks: " + strconv.Itoa(expected) + " deliveries of " + strconv.Itoa(expected) + " distinct events, none twice, signatures all verified (client.created " +
		strconv.Itoa(13+byLoad) + ", client.updated 6, invoice.paid 11)"
	if expected != 30+byLoad || !strings.Contains(report, want) {
		t.Errorf("want %q", want)
	}
	if !regexp.MustCompile(`pid \d+ VmHWM: \d+ kB`).MatchString(report) {
		t.Errorf("no peak memory")
	}

	// The changes are in the database; the endpoints and keys are gone.
	conn, err := pgx.Connect(ctx, g.liveURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var created int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM customers WHERE name LIKE 'Cliente de mudança %'`).Scan(&created); err != nil || created != 13 {
		t.Errorf("clients created by the changes: %d %v, want 13", created, err)
	}
	assertUndone(t, g, gendata.DemoCompanyA, gendata.DemoCompanyB)
}

// A gateway that accepts https endpoints on public addresses only refuses
// the receiver: the run fails saying what the gateway needs, and undoes
// what it made.
func TestWebhooksRefused(t *testing.T) {
	t.Parallel()
	g := startGatewayEvents(t, &events.Config{})
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--url", g.pub, "--admin-url", g.admin, "--admin-token", g.adminToken,
		"--company", gendata.DemoCompanyA, "--webhooks", "--duration", "1s"}, &out, &errb, noEnv)
	if code != 1 || !strings.Contains(errb.String(), "url must use https") || !strings.Contains(errb.String(), "eventsAllowHTTP: true and eventsAllowedNetworks: 127.0.0.0/8") {
		t.Fatalf("exit %d, stderr %q; want 1 and the refusal with what the gateway needs", code, errb.String())
	}
	assertUndone(t, g, gendata.DemoCompanyA)
}

// Interrupted (Ctrl-C cancels the run's context), the run deletes its
// endpoints and revokes its keys.
func TestWebhooksInterrupted(t *testing.T) {
	t.Parallel()
	g := startGatewayEvents(t, loopbackEvents())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errb strings.Builder
	go func() {
		done <- run(ctx, []string{"--url", g.pub, "--admin-url", g.admin, "--admin-token", g.adminToken,
			"--company", gendata.DemoCompanyA + "," + gendata.DemoCompanyB, "--webhooks", "--duration", "10m", "--rate", "5"}, &out, &errb, noEnv)
	}()
	testenv.Eventually(t, "the run's endpoints", func() error {
		a, errA := g.events.ListWebhooks(context.Background(), gendata.DemoCompanyA)
		b, errB := g.events.ListWebhooks(context.Background(), gendata.DemoCompanyB)
		if errA != nil || errB != nil || len(a) != 1 || len(b) != 1 {
			return fmt.Errorf("A %v %v, B %v %v", a, errA, b, errB)
		}
		return nil
	})
	cancel()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errb.String(), "context canceled") {
			t.Errorf("exit %d, stderr %q; want 1 and context canceled", code, errb.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end within 2 minutes of its cancellation")
	}
	assertUndone(t, g, gendata.DemoCompanyA, gendata.DemoCompanyB)
}

// assertUndone checks that the companies have no endpoint and no key left
// active.
func assertUndone(t *testing.T, g *target, companies ...string) {
	t.Helper()
	ctx := context.Background()
	for _, co := range companies {
		if eps, err := g.events.ListWebhooks(ctx, co); err != nil || len(eps) != 0 {
			t.Errorf("endpoints of %s left: %+v %v", co, eps, err)
		}
		assertKeysRevoked(t, g, co)
	}
}
