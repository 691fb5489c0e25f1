package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const otherCompany = "b0000000-0000-4000-8000-00000000000b"

// feedItem is an event as the feed answers it.
type feedItem struct {
	ID         string          `json:"id"`
	RecordedAt string          `json:"recordedAt"`
	Type       Type            `json:"type"`
	Timestamp  string          `json:"timestamp"`
	Data       json.RawMessage `json:"data"`
}

func readFeed(t *testing.T, s *Service, q invoicing.FeedQuery) (invoicing.FeedPage, []feedItem) {
	t.Helper()
	if q.Limit == 0 {
		q.Limit = 100
	}
	p, err := s.ReadFeed(context.Background(), q)
	if err != nil {
		t.Fatalf("ReadFeed(%+v): %v", q, err)
	}
	items := make([]feedItem, len(p.Events))
	for i, raw := range p.Events {
		if err := json.Unmarshal(raw, &items[i]); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
	return p, items
}

// synthetic makes the n-th event of a company in a mode, as detection would.
func synthetic(m invoicing.Mode, company string, t Type, n int) Event {
	res := fmt.Sprintf("41000000-0000-4000-8000-%012d", n)
	return Event{ID: eventID(m, company, t, res, strconv.Itoa(n)), Type: t, Mode: m, CompanyID: company, ResourceID: res,
		Time: time.UnixMilli(1_772_000_000_000 + int64(n)).UTC(), Data: json.RawMessage(`{"id":"` + res + `"}`)}
}

func record(t *testing.T, s *Service, evs ...Event) {
	t.Helper()
	if err := recordErr(s, evs...); err != nil {
		t.Fatal(err)
	}
}

// recordErr records events as detection would, without endpoints.
func recordErr(s *Service, evs ...Event) error {
	q := make([]queued, len(evs))
	for i := range evs {
		q[i] = queued{ev: evs[i]}
	}
	_, _, err := s.q.enqueue(context.Background(), nil, move{}, q)
	return err
}

// Real changes of a company with no endpoint are in its feed, with the ids
// and bodies webhooks carry; a company with an endpoint gets in its feed
// exactly what its endpoint received.
func TestFeedHasTheWebhooksEvents(t *testing.T) {
	t.Parallel()
	redises(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		e := newEnvOn(t, rdb, prefix)
		s := e.service(e.config())
		e.run(s)
		e.insertClient(cli1, "Cliente Um")
		e.insertDoc(docA, "FT", 1, "issued", "")
		items := waitFeed(t, s, e.company, 2)
		if items[0].Type != ClientCreated && items[1].Type != ClientCreated {
			t.Errorf("no client.created among %+v", items)
		}
		// Now with an endpoint: what it receives is what the feed holds.
		e.endpoint(s)
		e.setState(docA, "paid")
		got := e.recv.waitFor(key{InvoicePaid, docA})
		items = waitFeed(t, s, e.company, 3)
		paid := items[2]
		if paid.Type != InvoicePaid || paid.ID != got[0].header.Get("webhook-id") {
			t.Fatalf("feed %+v, delivered %s", paid, got[0].header.Get("webhook-id"))
		}
		p, _ := readFeed(t, s, invoicing.FeedQuery{CompanyID: e.company, Mode: invoicing.Test})
		var body map[string]json.RawMessage
		if err := json.Unmarshal(p.Events[2], &body); err != nil {
			t.Fatal(err)
		}
		delete(body, "id")
		delete(body, "recordedAt")
		var sent map[string]json.RawMessage
		if err := json.Unmarshal(got[0].body, &sent); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(body) != fmt.Sprint(sent) {
			t.Errorf("the feed's event:\n%s\nthe webhook's body:\n%s", p.Events[2], got[0].body)
		}
	})
}

// waitFeed waits for a company's TEST feed to hold n events, and returns
// them oldest first.
func waitFeed(t *testing.T, s *Service, company string, n int) []feedItem {
	t.Helper()
	var items []feedItem
	testenv.Eventually(t, "the feed's events", func() error {
		_, items = readFeed(t, s, invoicing.FeedQuery{CompanyID: company, Mode: invoicing.Test})
		return atLeast(len(items), n, "events in the feed")
	})
	if len(items) != n {
		t.Fatalf("the feed holds %d events, want %d: %+v", len(items), n, items)
	}
	return items
}

// A poller walking oldest first with its cursor while events are recorded
// sees each once, in the order they were recorded; nothing of another
// company or mode.
func TestFeedPollerSeesEachEventOnce(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	s, err := New(Config{Redis: rdb, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	const total = 3000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < total; i += 10 {
			var batch []Event
			for j := i; j < i+10; j++ {
				batch = append(batch, synthetic(invoicing.Test, testCompany, Types[j%len(Types)], j))
				batch = append(batch, synthetic(invoicing.Live, testCompany, InvoicePaid, j), synthetic(invoicing.Test, otherCompany, InvoicePaid, j))
			}
			if err := recordErr(s, batch...); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var seen []string
	var cursor *invoicing.FeedPosition
	deadline := time.Now().Add(2 * time.Minute)
	for len(seen) < total && time.Now().Before(deadline) {
		p, items := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test, After: cursor, Limit: 37})
		if p.Next == nil {
			t.Fatal("an oldest-first page without a cursor to poll from")
		}
		cursor = p.Next
		for _, it := range items {
			seen = append(seen, it.ID)
		}
	}
	wg.Wait()
	_, rest := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test, After: cursor})
	if len(seen) != total || len(rest) != 0 {
		t.Fatalf("the poller saw %d events (then %d more), want %d", len(seen), len(rest), total)
	}
	for i, id := range seen {
		if want := synthetic(invoicing.Test, testCompany, Types[i%len(Types)], i).ID; id != want {
			t.Fatalf("event %d is %s, want %s (recording order)", i, id, want)
		}
	}
	// Recorded again (a sweep, a later change): not in the feed twice.
	record(t, s, synthetic(invoicing.Test, testCompany, Types[0], 0))
	if _, again := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test, After: cursor}); len(again) != 0 {
		t.Errorf("an event recorded again came back: %+v", again)
	}
}

// Newest first, the type filter (several types), the recording-time range,
// and short filtered pages that continue by cursor.
func TestFeedFiltersAndOrders(t *testing.T) {
	t.Parallel()
	redises(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		s, err := New(Config{Redis: rdb, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		var all []Event
		for i := range 250 {
			all = append(all, synthetic(invoicing.Live, testCompany, Types[i%len(Types)], i))
		}
		record(t, s, all[:125]...)
		record(t, s, all[125:]...)
		q := invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, Newest: true, Limit: 100}
		var ids []string
		for {
			p, items := readFeed(t, s, q)
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if p.Next == nil {
				break
			}
			q.After = p.Next
		}
		if len(ids) != 250 || ids[0] != all[249].ID || ids[249] != all[0].ID {
			t.Fatalf("newest first: %d events, first %s, last %s", len(ids), ids[0], ids[len(ids)-1])
		}
		// Two types, walked in pages of 10.
		q = invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, Types: []string{string(InvoicePaid), string(ClientUpdated)}, Limit: 10}
		n := 0
		for {
			p, items := readFeed(t, s, q)
			for _, it := range items {
				if it.Type != InvoicePaid && it.Type != ClientUpdated {
					t.Fatalf("type %s passed the filter", it.Type)
				}
				n++
			}
			if !p.HasMore {
				break
			}
			q.After = p.Next
		}
		if want := 2 * 250 / len(Types); n < want || n > want+2 {
			t.Errorf("%d events of the two types, want about %d", n, want)
		}
		// The range: every event was recorded within it, none before it.
		_, items := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, Limit: 1})
		at, _ := time.Parse(time.RFC3339, items[0].RecordedAt)
		past := at.Add(-time.Hour)
		if _, in := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, Since: &past, Limit: 5}); len(in) != 5 {
			t.Errorf("since an hour before: %d", len(in))
		}
		if _, none := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, Until: &past}); len(none) != 0 {
			t.Errorf("until an hour before: %d", len(none))
		}
		if _, err := s.ReadFeed(context.Background(), invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, Types: []string{"invoice.lost"}, Limit: 1}); !errors.Is(err, ErrInvalidFeedQuery) {
			t.Errorf("an unknown type: %v", err)
		}
	})
}

// What was recorded before the window is dropped, and an oldest-first
// cursor from before it is refused, naming the cursor, never walked on
// past the gap.
func TestFeedWindowAndExpiredCursors(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	s, err := New(Config{Redis: rdb, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := s.l.feed(invoicing.Test, testCompany)
	// Two events recorded 8 and 7.5 days ago, by their entries' ids.
	old := time.Now().Add(-8 * 24 * time.Hour).UnixMilli()
	for i, ms := range []int64{old, old + 12*3600*1000} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: strconv.FormatInt(ms, 10) + "-0", Values: []any{"i", "evt_old" + strconv.Itoa(i), "t", "client.created", "b", `{"type":"client.created"}`}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.SAdd(ctx, s.l.feeds(invoicing.Test), testCompany)
	first, items := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test, Limit: 1})
	if len(items) != 1 || items[0].ID != "evt_old0" {
		t.Fatalf("before trimming: %+v", items)
	}
	if err := s.trimFeeds(ctx, invoicing.Test); err != nil {
		t.Fatal(err)
	}
	if _, rest := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test}); len(rest) != 0 {
		t.Fatalf("past the window: %+v", rest)
	}
	_, err = s.ReadFeed(ctx, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test, After: first.Next, Limit: 10})
	var fe *invoicing.FieldError
	if !errors.As(err, &fe) || fe.Field != "cursor" {
		t.Fatalf("a cursor from before the window's start: %v", err)
	}
	// A first read of the empty feed gives a cursor from which what comes
	// next is read.
	p, _ := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test})
	record(t, s, synthetic(invoicing.Test, testCompany, InvoicePaid, 1))
	if _, next := readFeed(t, s, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Test, After: p.Next}); len(next) != 1 {
		t.Fatalf("after an empty first read: %+v", next)
	}
}
