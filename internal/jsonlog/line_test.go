package jsonlog

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A Line writes what slog.JSONHandler writes for the same record.
func TestLineSameAsSlog(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	floats := []float64{0, 0.042, 1.5, -2, 1e-7, 1e21, math.NaN(), math.Inf(1), math.Inf(-1)}
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2}
	for i := range 2000 {
		var got, want bytes.Buffer
		h := New(&got, &slog.HandlerOptions{Level: slog.LevelDebug})
		std := slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
		at := time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("X", 3600*(r.IntN(5)-2)))
		level, msg := levels[r.IntN(len(levels))], randString(r)
		rec := slog.NewRecord(at, level, msg, 0)
		l := h.Begin(at, level, msg)
		if l == nil {
			t.Fatalf("record %d: no fast line", i)
		}
		for range r.IntN(12) {
			k := randString(r)
			switch r.IntN(3) {
			case 0:
				v := randString(r)
				rec.AddAttrs(slog.String(k, v))
				l.Str(k, v)
			case 1:
				v := r.IntN(2000) - 1000
				rec.AddAttrs(slog.Int(k, v))
				l.Int(k, v)
			default:
				v := floats[r.IntN(len(floats))]
				rec.AddAttrs(slog.Float64(k, v))
				l.Float(k, v)
			}
		}
		if err := l.End(); err != nil {
			t.Fatal(err)
		}
		if err := std.Handle(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
	}
}

// Options the fast path does not follow, and years slog writes its own
// way, leave the line to slog.
func TestLineFallsBack(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	replace := New(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr { return a }})
	if replace.Begin(time.Now(), slog.LevelInfo, "m") != nil {
		t.Error("a line with ReplaceAttr set")
	}
	if New(&buf, nil).Begin(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "m") != nil {
		t.Error("a line for the year 10000")
	}
}

func BenchmarkLine(b *testing.B) {
	h := New(discard{}, nil)
	at := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		l := h.Begin(at, slog.LevelInfo, "request")
		l.Str("requestId", "60d71d1acf83c1baa05773ad")
		l.Str("method", "GET")
		l.Str("route", "GET /api/v1/v1/clients/:id")
		l.Int("status", 200)
		l.Int("bytes", 271)
		l.Float("latencyMs", 1.234)
		l.Str("company", "b1600000-0000-4000-8000-000000000001")
		_ = l.End()
	}
}
