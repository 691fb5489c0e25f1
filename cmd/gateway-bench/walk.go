package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// A walk copies a whole list as an integrator's sync does: one connection,
// every page of the first --company's invoices (or clients) at --page-size,
// by cursor and by page number side by side. It reports each walk's time and
// the p99 of its first and last 1,000 pages (docs/performance.md's targets:
// the last pages within 1.5 times the first, the whole cursor walk under 3
// minutes),
// then the first page of the changes of the last --changes-since, repeated
// for --duration at one connection.

// walkResult is one walk's pages' latencies, in order.
type walkResult struct {
	by    string
	pages []time.Duration
	items int
	took  time.Duration
}

// walk measures the walks of list ("invoices" or "clients").
func (b *bencher) walk(ctx context.Context, list string) error {
	c := b.companies[0]
	size := b.o.pageSize
	for _, by := range []string{"cursor", "page"} {
		if b.o.walkBy != "both" && b.o.walkBy != by {
			continue
		}
		r, err := b.walkOnce(ctx, c, list, by, size)
		if err != nil {
			return err
		}
		first, last := p99(r.pages[:min(1000, len(r.pages))]), p99(r.pages[max(0, len(r.pages)-1000):])
		fmt.Fprintf(b.out, "walk %s by %s, %d per page: %d items in %d pages in %s; p99 first 1,000 pages %s, last 1,000 %s (%.2fx)\n",
			list, by, size, r.items, len(r.pages), r.took.Round(time.Millisecond), first, last, float64(last)/float64(max(first, 1)))
	}
	if b.o.changesSince <= 0 {
		return nil
	}
	since := time.Now().Add(-b.o.changesSince).UTC().Format(time.RFC3339)
	path := "/" + list + "?pageSize=" + strconv.Itoa(size) + "&updatedSince=" + url.QueryEscape(since)
	var lat []time.Duration
	for end := time.Now().Add(b.o.duration); time.Now().Before(end); {
		start := time.Now()
		var p struct{ Data []struct{ ID string } }
		if err := b.api(ctx, c, path, &p); err != nil {
			return err
		}
		lat = append(lat, time.Since(start))
	}
	fmt.Fprintf(b.out, "changes of %s since %s ago, first page, one connection: %d requests, p50 %s, p99 %s\n",
		list, b.o.changesSince, len(lat), pct(lat, 0.50), p99(lat))
	return nil
}

// walkOnce walks every page of list by cursor or by page number.
func (b *bencher) walkOnce(ctx context.Context, c *benchCompany, list, by string, size int) (walkResult, error) {
	r := walkResult{by: by}
	base := "/" + list + "?pageSize=" + strconv.Itoa(size)
	path := base
	began := time.Now()
	for page := 1; ; page++ {
		var p struct {
			Data       []struct{ ID string }
			NextCursor *string
		}
		start := time.Now()
		if err := b.api(ctx, c, path, &p); err != nil {
			return r, fmt.Errorf("walk by %s, page %d: %w", by, page, err)
		}
		r.pages = append(r.pages, time.Since(start))
		r.items += len(p.Data)
		if by == "cursor" {
			if p.NextCursor == nil {
				break
			}
			path = base + "&cursor=" + url.QueryEscape(*p.NextCursor)
		} else {
			if len(p.Data) < size {
				break
			}
			path = base + "&page=" + strconv.Itoa(page+1)
		}
		if b.o.walkPages > 0 && page >= b.o.walkPages {
			break
		}
	}
	r.took = time.Since(began)
	return r, ctx.Err()
}

func p99(d []time.Duration) time.Duration { return pct(d, 0.99) }

// pct is the q-quantile of d (nearest rank), rounded for printing.
func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))].Round(10 * time.Microsecond)
}

// walkClient is the HTTP client of a walk: one connection, kept alive.
func walkClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1}}
}
