package events

import (
	"context"
	"fmt"
	"testing"
)

// The metrics' reading of the queue's state (readStats) with 1,000
// endpoints, each with 5 deliveries queued: what one reading costs, Redis
// busy with nothing else meanwhile. Every instance's scrapes within
// statsKeep share one reading.
func BenchmarkQueueStats1000Endpoints(b *testing.B) {
	be := newBenchEnv(b)
	for i, ep := range be.endpoints(b, 1000) {
		be.queue(b, ep, 5, fmt.Sprint("s", i))
	}
	be.s.statsKeep = 0
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		st, err := be.s.stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st[1].Healthy != 1000 || st[1].Due != 5000 {
			b.Fatalf("TEST: %d healthy endpoints, %d due; want 1000 and 5000", st[1].Healthy, st[1].Due)
		}
	}
}
