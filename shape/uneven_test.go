package shape

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// fullSource gives one second's counts with its refusals and sixteenths.
type fullSource struct {
	at         time.Time
	n, refused int
	slots      []uint16
}

func (f *fullSource) TakeOffered(yield func(string, invoicing.Mode, int64, int, int, []uint16)) {
	if f.n > 0 {
		yield(companyA, invoicing.Live, f.at.Unix(), f.n, f.refused, f.slots)
		f.n = 0
	}
}

// Instances' refusals and sixteenths add up in Redis, and are read back
// with the seconds, raw and from the 48-hour record. On the real Redis and
// on miniredis (AddByScript).
func TestRefusalsAndSixteenthsRecorded(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		_, mini := rdb.BitField(context.Background(), prefix+"probe", "GET", "u8", "0").Result()
		ctx := context.Background()
		t0 := recent()
		clk := testenv.NewClock(t0.Add(time.Minute))
		at := t0.Add(30 * time.Second)
		burst := func(a, b uint16) []uint16 { s := make([]uint16, Slots); s[3], s[4] = a, b; return s }
		var stores []*Store
		for _, src := range []*fullSource{{at, 65, 10, burst(30, 35)}, {at, 65, 15, burst(30, 35)}, {at, 10, 0, nil}} {
			s := New(Config{Redis: rdb, Prefix: prefix, Now: clk.Now, Logger: quiet(), AddByScript: mini != nil})
			if err := s.Flush(ctx, src); err != nil {
				t.Fatal(err)
			}
			stores = append(stores, s)
		}
		check := func(what string) {
			sr := mustSeries(t, stores[0], companyA, invoicing.Live, at, 2)
			// The third instance's 10 requests came without their sixteenths:
			// the second's do not add up, and it reads as even.
			if sr.Counts[0] != 140 || len(sr.Refused) != 1 || sr.Refused[0] != (Refused{0, 25}) || len(sr.Uneven) != 0 {
				t.Errorf("%s: %v, refused %v, uneven %v", what, sr.Counts, sr.Refused, sr.Uneven)
			}
		}
		check("raw, with a second counted without sixteenths")
		// A second counted in full by both: uneven.
		at2 := at.Add(time.Second)
		for _, src := range []*fullSource{{at2, 65, 10, burst(30, 35)}, {at2, 65, 15, burst(30, 35)}} {
			if err := stores[1].Flush(ctx, src); err != nil {
				t.Fatal(err)
			}
		}
		clk.Set(t0.Add(blockSeconds*time.Second + summarizeAfter + time.Second))
		if err := stores[2].Flush(ctx, nil); err != nil {
			t.Fatal(err)
		}
		rdb.Del(ctx, stores[0].rawKey(companyA, invoicing.Live, blockOf(at.Unix())))
		sr := mustSeries(t, stores[0], companyA, invoicing.Live, at, 2)
		if want := (Uneven{Index: 1, Slots: [Slots]uint16{3: 60, 4: 70}}); len(sr.Uneven) != 1 || sr.Uneven[0] != want ||
			len(sr.Refused) != 2 || sr.Refused[1] != (Refused{1, 25}) || sr.RefusedTotal() != 50 {
			t.Errorf("from the 48-hour record: %v, uneven %v, refused %v", sr.Counts, sr.Uneven, sr.Refused)
		}
	})
}
