package shape

import (
	"slices"
	"testing"
	"time"
)

func TestHours(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 10, 13, 59, 58, 0, time.UTC)
	counts := make([]uint32, 2+3600+5)
	counts[0], counts[1] = 7, 3 // the end of 13:00
	for i := range 100 {        // 14:00: 100 busy seconds, 1 to 100
		counts[2+i*30] = uint32(i + 1)
	}
	got := Series{Start: start, Counts: counts}.Hours()
	want := []Rates{
		{Start: start.Truncate(time.Hour), Requests: 10, BusySeconds: 2, P50: 3, P99: 7, Max: 7},
		{Start: start.Truncate(time.Hour).Add(time.Hour), Requests: 5050, BusySeconds: 100, P50: 50, P99: 99, Max: 100},
		{Start: start.Truncate(time.Hour).Add(2 * time.Hour)}, // idle, partial
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// The whole: 102 busy seconds, 3 of them from 7 to 100.
	whole := Series{Start: start, Counts: counts}.Rates()
	if whole != (Rates{Start: start, Requests: 5060, BusySeconds: 102, P50: 49, P99: 99, Max: 100}) {
		t.Errorf("whole: %+v", whole)
	}
}
