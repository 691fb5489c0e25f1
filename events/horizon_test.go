package events

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// advance reads one stream from its watermark up to to, as the first tick
// of a detector that has just started does.
func (d *detector) advance(ctx context.Context, src Source, m invoicing.Mode, st stream, t *targets, dbNow, to time.Time) error {
	raw, err := d.mark(ctx, d.l.watermark(m, st.name))
	if err != nil {
		return err
	}
	hz := newHorizon()
	hz.streams[st.name] = d.restart(m, st.name, raw, dbNow)
	return d.readAhead(ctx, src, m, st, t, hz, hz.streams[st.name], to)
}

// What a detector follows between readings: a transaction open behind the
// horizon from its start, and its rows read once it ends (each stream);
// without pg_monitor, a writer from the reading before it was first listed
// (less Settle), or from the earliest watermark when there is no such
// reading; a stream whose watermark another detector moved starts again
// from it.
func TestObserveFollowsWhatIsInFlight(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	s, err := New(Config{Redis: rdb, Margin: 50 * time.Millisecond, Settle: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	d, hz := s.det, newHorizon()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mark := encodeMark(position(t0.Add(-time.Minute), ""))
	raws := []string{mark, mark, mark}
	long, young := t0.Add(-10*time.Second), t0.Add(-10*time.Millisecond)
	h := invoicing.Horizon{Now: t0, Sight: invoicing.SightAll, Open: []invoicing.OpenTransaction{{ID: "1@long", Start: long}, {ID: "2@young", Start: young}}}
	if to := d.observe(invoicing.Test, hz, h, raws, t0); !to.Equal(t0.Add(-50 * time.Millisecond)) {
		t.Fatalf("horizon %v, want the clock less the margin", to)
	}
	if want := (map[string]span{"1@long": {long, long.Add(time.Microsecond)}}); !maps.Equal(hz.open, want) {
		t.Fatalf("followed %v, want the transaction begun before the horizon alone: %v", hz.open, want)
	}
	if w := hz.hold(position(t0.Add(-50*time.Millisecond), "")); !w.At.Equal(long) || w.ID != "" {
		t.Errorf("watermark %v, want held at the open transaction's start %v", w, long)
	}

	// The long one ended; the young one is now behind the horizon.
	h = invoicing.Horizon{Now: t0.Add(100 * time.Millisecond), Sight: invoicing.SightAll, Open: h.Open[1:]}
	d.observe(invoicing.Test, hz, h, raws, t0)
	for name, a := range hz.streams {
		if !slices.Equal(a.pending, []span{{long, long.Add(time.Microsecond)}}) {
			t.Errorf("%s: to read %v, want the ended transaction's start", name, a.pending)
		}
	}
	if _, ok := hz.open["2@young"]; !ok || len(hz.open) != 1 {
		t.Errorf("followed %v, want the young transaction alone", hz.open)
	}

	// Without pg_monitor: a writer first listed now began at most Settle
	// before the last reading.
	last := h.Now
	h = invoicing.Horizon{Now: t0.Add(200 * time.Millisecond), Sight: invoicing.SightWriters, Open: []invoicing.OpenTransaction{h.Open[0], {ID: "xid 7"}}}
	if to := d.observe(invoicing.Test, hz, h, raws, t0); !to.Equal(h.Now.Add(-time.Second)) {
		t.Errorf("horizon %v without pg_monitor, want the clock less Settle", to)
	}
	if got, want := hz.open["xid 7"], (span{last.Add(-time.Second), h.Now.Add(time.Microsecond)}); got != want {
		t.Errorf("writer followed from %v, want %v", got, want)
	}

	// Another detector moved the clients' watermark: that stream starts
	// again from it, with nothing left to read; a writer first listed then
	// is read from the earliest position.
	moved := encodeMark(position(t0.Add(-30*time.Second), "c"))
	h.Open = append(h.Open, invoicing.OpenTransaction{ID: "xid 9"})
	d.observe(invoicing.Test, hz, h, []string{mark, moved, mark}, t0)
	if a := hz.streams["clients"]; a.raw != moved || a.pos.ID != "c" || len(a.pending) != 0 {
		t.Errorf("clients after the move: %+v", a)
	}
	if got := hz.open["xid 9"]; !got.lo.Equal(t0.Add(-time.Minute)) {
		t.Errorf("a writer first listed after a restart followed from %v, want the earliest watermark", got.lo)
	}
}

// Spans that overlap, or are no further apart than the slack, are read as
// one.
func TestMergeSpans(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	got := merge([]span{{at(5), at(6)}, {at(1), at(3)}, {at(2), at(4)}, {at(4), at(5)}, {at(8), at(9)}, {at(10), at(11)}, {at(13), at(14)}}, time.Second)
	if want := []span{{at(1), at(6)}, {at(8), at(11)}, {at(13), at(14)}}; !slices.Equal(got, want) {
		t.Errorf("merged %v, want %v", got, want)
	}
}
