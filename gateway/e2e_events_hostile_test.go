package gateway_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// feedForger makes feed cursors as the gateway does (gateway/eventscursor.go:
// version 2, milliseconds, sequence, a truncated HMAC-SHA256 over them and
// the walk), with a key: the one an attacker would need.
type feedForger struct {
	key     []byte
	company string
	mode    invoicing.Mode
}

// filter is a walk's canonical form, as gateway.feedFilterKey writes it.
func feedFilter(newest bool, types string, since, until *time.Time) string {
	k := "order=oldest"
	if newest {
		k = "order=newest"
	}
	k += "&type=" + types
	if since != nil {
		k += "&since=" + strconv.FormatInt(since.UnixMilli(), 10)
	}
	if until != nil {
		k += "&until=" + strconv.FormatInt(until.UnixMilli(), 10)
	}
	return k
}

func (f feedForger) cursor(ms, seq uint64, filter string) string {
	b := []byte{2}
	b = binary.BigEndian.AppendUint64(b, ms)
	b = binary.BigEndian.AppendUint64(b, seq)
	m := hmac.New(sha256.New, f.key)
	m.Write(b)
	m.Write([]byte(f.company + "\x00" + string(f.mode) + "\x00GET /api/v1/v1/events\x00" + filter))
	return base64.RawURLEncoding.EncodeToString(append(b, m.Sum(nil)[:16]...))
}

// No query of GET /events, however hostile, is answered 5xx or logged as
// an error: instants at or before 1970 (Redis refuses "(0-0" as a bound),
// and cursors, which the deployment's key makes unforgeable, that a holder
// of the key would place at the ends of the id space (0-0 newest first,
// 2^64-1 oldest first) are empty pages; malformed ones are 400s naming
// their parameter. A cursor made with the key once built into the source
// is refused.
func TestEventsFeedHostileInputNever5xx(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	key := in.key(t, coA, invoicing.Test, "events:read").Key
	_, first := feedGet(t, in, key, coA, "", nil)
	if first.NextCursor == nil {
		t.Fatal("an oldest-first page without nextCursor")
	}
	// The deployment's key, made in Redis by the first list read.
	hexKey, err := w.rdb.Get(context.Background(), w.prefix+"cursor:key").Result()
	if err != nil {
		t.Fatalf("no cursor key in Redis: %v", err)
	}
	raw, _ := hex.DecodeString(hexKey)
	f := feedForger{key: raw, company: coA, mode: invoicing.Test}
	// The forger makes what the gateway makes: its copy of the layout is right.
	genuine, _ := base64.RawURLEncoding.DecodeString(*first.NextCursor)
	if len(genuine) != 33 || f.cursor(binary.BigEndian.Uint64(genuine[1:9]), binary.BigEndian.Uint64(genuine[9:17]), feedFilter(false, "", nil, nil)) != *first.NextCursor {
		t.Fatalf("the test's cursors are not the gateway's: %s", *first.NextCursor)
	}
	builtIn := feedForger{key: []byte("invoicing-gateway cursor v1"), company: coA, mode: invoicing.Test}
	r := do(t, in.pub.URL, req{Path: "/api/v1/v1/events?cursor=" + builtIn.cursor(0, 0, feedFilter(false, "", nil, nil)), Key: key, Company: coA})
	expectProblem(t, r, 400, "invalid_parameter")

	epoch, before := time.Unix(0, 0).UTC(), time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)
	const max = math.MaxUint64
	queries := []string{
		"until=1970-01-01T00:00:00Z",
		"since=1960-01-01T00:00:00Z&until=1970-01-01T00:00:00Z",
		"until=1969-12-31T23:59:59.999Z",
		"until=0001-01-01T00:00:00Z",
		"since=0000-01-01T00:00:00Z",
		"since=9999-12-31T23:59:59.999Z",
		"order=newest&until=1970-01-01T00:00:00Z",
		"order=newest&type=invoice.paid&until=1970-01-01T00:00:00Z",
		"since=1970-01-01T00:00:00Z&until=1970-01-01T00:00:00.001Z",
		"until=1970-01-01T00:00:00%2B14:00",
		"cursor=" + f.cursor(max, max, feedFilter(false, "", nil, nil)),
		"cursor=" + f.cursor(max, 0, feedFilter(false, "", nil, nil)),
		"cursor=" + f.cursor(0, max, feedFilter(false, "", nil, nil)),
		"cursor=" + f.cursor(0, 0, feedFilter(false, "", nil, nil)),
		"order=newest&cursor=" + f.cursor(0, 0, feedFilter(true, "", nil, nil)),
		"order=newest&cursor=" + f.cursor(max, max, feedFilter(true, "", nil, nil)),
		"order=newest&cursor=" + f.cursor(0, 1, feedFilter(true, "", nil, nil)),
		"until=1970-01-01T00:00:00Z&cursor=" + f.cursor(max, max, feedFilter(false, "", nil, &epoch)),
		"order=newest&until=1970-01-01T00:00:00Z&cursor=" + f.cursor(0, 0, feedFilter(true, "", nil, &epoch)),
		"since=1960-01-01T00:00:00Z&until=1970-01-01T00:00:00Z&cursor=" + f.cursor(max, max, feedFilter(false, "", &before, &epoch)),
		"type=client.created&cursor=" + f.cursor(max, max, feedFilter(false, "client.created", nil, nil)),
		"order=newest&type=client.created&cursor=" + f.cursor(0, 0, feedFilter(true, "client.created", nil, nil)),
		"cursor=" + strings.Repeat("A", 44), "cursor=" + strings.Repeat("_", 200), "cursor=%00", "cursor=",
		"since=1970-01-01T00:00:00Z&until=1970-01-01T00:00:00Z", "since=-0001-01-01T00:00:00Z", "until=10000-01-01T00:00:00Z",
		"pageSize=0", "pageSize=-1", "pageSize=18446744073709551616", "pageSize=1e2",
		"type=" + strings.Repeat("client.created,", 21) + "client.created", "type=%E2%80%AE", "order=",
	}
	// And cursors anywhere, at the ends or not, of every walk.
	rng := rand.New(rand.NewPCG(1, 2))
	ends := []uint64{0, 1, max, max - 1, uint64(time.Now().UnixMilli())}
	pick := func() uint64 {
		if rng.IntN(2) == 0 {
			return ends[rng.IntN(len(ends))]
		}
		return rng.Uint64()
	}
	for range 150 {
		newest := rng.IntN(2) == 0
		q, order := "", ""
		if newest {
			q, order = "order=newest&", "order=newest&"
		}
		var until *time.Time
		if rng.IntN(3) == 0 {
			u := time.UnixMilli(int64(rng.IntN(3)) - 1).UTC()
			until = &u
			q += "until=" + url.QueryEscape(u.Format(time.RFC3339Nano)) + "&"
		}
		queries = append(queries, q+"cursor="+f.cursor(pick(), pick(), feedFilter(newest, "", nil, until)), order+"cursor="+f.cursor(pick(), pick(), feedFilter(!newest, "", nil, until)))
	}
	for _, q := range queries {
		r, p := feedGet(t, in, key, coA, q, nil)
		switch {
		case r.Status >= 500:
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
		case r.Status == 400:
			var pr struct{ Errors []struct{ Field string } }
			if err := json.Unmarshal(r.Body, &pr); err != nil || len(pr.Errors) == 0 || pr.Errors[0].Field == "" {
				t.Errorf("%s: a 400 naming no parameter: %s", q, r.Body)
			}
		case r.Status != 200:
			t.Errorf("%s: %d %s", q, r.Status, r.Body)
		case !strings.Contains(q, "order=newest") && p.NextCursor == nil:
			t.Errorf("%s: an oldest-first page without nextCursor: %s", q, r.Body)
		}
	}
	if logs := in.logs.String(); strings.Contains(logs, `"level":"ERROR"`) {
		t.Errorf("hostile queries were logged as errors:\n%s", errorLines(logs))
	}
}

// errorLines are the ERROR lines of a JSON log, for a failure's message.
func errorLines(logs string) string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"level":"ERROR"`) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(len(out), " lines, the first: ", out[0])
}
