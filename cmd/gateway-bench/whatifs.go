package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// --whatifs N: during the measured load, N clients of the admin API ask
// what-ifs over --whatif-since (30 days by default) of the first loaded
// company, each asking again as soon as answered (after Retry-After when
// refused), so that the report shows what the admin's expensive reads
// cost the public API beside them.

// whatIfs is the what-ifs asked beside a load, by their answers.
type whatIfs struct {
	mu       sync.Mutex
	statuses map[int]int
	took     []time.Duration // of the 200s
}

// startWhatIfs starts the clients; stop ends them and returns what they got.
func (b *bencher) startWhatIfs(ctx context.Context) (stop func() *whatIfs) {
	w := &whatIfs{statuses: map[int]int{}}
	if b.o.whatIfs <= 0 || len(b.companies) == 0 {
		return func() *whatIfs { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	path := b.o.adminURL + "/admin/v1/companies/" + b.companies[0].id + "/limits/whatif?mode=LIVE&rate=20&burst=40&since=" + b.o.whatIfSince
	client := &http.Client{Timeout: 2 * time.Minute}
	var wg sync.WaitGroup
	for range b.o.whatIfs {
		wg.Go(func() {
			for ctx.Err() == nil {
				wait := w.ask(ctx, client, path, b.o.adminToken)
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		})
	}
	return func() *whatIfs {
		cancel()
		wg.Wait()
		return w
	}
}

// ask asks one what-if; it returns how long to wait before the next.
func (w *whatIfs) ask(ctx context.Context, client *http.Client, url, token string) time.Duration {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return time.Second
	}
	req.Header.Set("Authorization", "Bearer "+token)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return time.Second
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil {
		return 0 // cut short by the end of the load: not counted
	}
	w.statuses[resp.StatusCode]++
	if resp.StatusCode == http.StatusOK {
		w.took = append(w.took, time.Since(start))
		return 0
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return time.Second
}

// print writes the what-ifs' answers.
func (w *whatIfs) print(out io.Writer, n int, since string) {
	if w == nil {
		return
	}
	slices.Sort(w.took)
	p := func(q float64) time.Duration {
		if len(w.took) == 0 {
			return 0
		}
		return w.took[min(len(w.took)-1, int(q*float64(len(w.took))))]
	}
	fmt.Fprintf(out, "what-ifs beside the load (%d clients, since=%s): answers %v; the 200s took p50 %s, p99 %s\n",
		n, since, w.statuses, p(0.5).Round(time.Millisecond), p(0.99).Round(time.Millisecond))
}
