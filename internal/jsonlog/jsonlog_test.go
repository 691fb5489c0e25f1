package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// pieces of strings that need every kind of escaping, and none.
var pieces = []string{"", "a", "request", "GET /api/v1/v1/clients/:id", `"`, `\`, "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
	"<&>", "ção", "日本", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀", " ", "igw_live_x", "{}", "'"}

func randString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(5) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func randAttr(r *rand.Rand) slog.Attr {
	k := randString(r)
	switch r.IntN(12) {
	case 0:
		return slog.Int(k, r.IntN(2000)-1000)
	case 1:
		return slog.Uint64(k, r.Uint64())
	case 2:
		return slog.Bool(k, r.IntN(2) == 0)
	case 3:
		return slog.Duration(k, time.Duration(r.Int64N(1e12)))
	case 4:
		floats := []float64{0, 1.234, -0.5, 1e-7, 1e21, 1e20, 123456789.125, 3e-300, math.MaxFloat64, math.Copysign(0, -1), float64(r.IntN(1e6)) / 1000}
		return slog.Float64(k, floats[r.IntN(len(floats))])
	case 5:
		return slog.Time(k, time.Unix(r.Int64N(4e9), r.Int64N(1e9)).In(time.FixedZone("X", 3600*(r.IntN(5)-2))))
	case 6: // the fallbacks
		return slog.Any(k, errors.New(randString(r)))
	case 7:
		return slog.Group(k, slog.String("in", randString(r)))
	case 8:
		return slog.Float64(k, math.NaN())
	case 9:
		return slog.Attr{}
	default:
		return slog.String(k, randString(r))
	}
}

// Every record, on the fast path or not, is written as slog.JSONHandler
// writes it.
func TestSameLinesAsSlog(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var got, want bytes.Buffer
	h := New(&got, &slog.HandlerOptions{Level: slog.LevelDebug})
	std := slog.NewJSONHandler(&want, &slog.HandlerOptions{Level: slog.LevelDebug})
	ctx := context.Background()
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2}
	for i := range 20_000 {
		at := time.Date(2026, 3, 1, 12, 0, 0, r.IntN(1e9), time.UTC)
		if i%50 == 0 {
			at = time.Time{}
		}
		rec := slog.NewRecord(at, levels[r.IntN(len(levels))], randString(r), 0)
		for range r.IntN(8) {
			rec.AddAttrs(randAttr(r))
		}
		got.Reset()
		want.Reset()
		if err := h.Handle(ctx, rec); err != nil {
			t.Fatal(err)
		}
		_ = std.Handle(ctx, rec)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got.Bytes(), want.Bytes())
		}
	}
}

func TestLevelsAndOptions(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	h := New(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})
	if h.Enabled(context.Background(), slog.LevelInfo) || !h.Enabled(context.Background(), slog.LevelWarn) {
		t.Error("Enabled does not follow the level")
	}
	// ReplaceAttr and groups are slog's: the same output as slog's.
	replace := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "secret" {
			a.Value = slog.StringValue("x")
		}
		return a
	}
	var want bytes.Buffer
	slog.New(slog.NewJSONHandler(&want, &slog.HandlerOptions{ReplaceAttr: replace})).WithGroup("g").Info("m", "secret", "s", "n", 1)
	buf.Reset()
	slog.New(New(&buf, &slog.HandlerOptions{ReplaceAttr: replace})).WithGroup("g").Info("m", "secret", "s", "n", 1)
	strip := func(s string) string { return s[strings.Index(s, `"level"`):] } // the times differ
	if strip(buf.String()) != strip(want.String()) {
		t.Errorf("with ReplaceAttr and a group:\n got %s\nwant %s", buf.String(), want.String())
	}
}

// The access log's line: what the fast path saves.
func BenchmarkAccessLine(b *testing.B) {
	for _, c := range []struct {
		name string
		h    slog.Handler
	}{{"jsonlog", New(discard{}, nil)}, {"slog", slog.NewJSONHandler(discard{}, nil)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(slog.String("requestId", "9f86d081884c7d659a2feaa0"), slog.String("method", "GET"),
					slog.String("route", "GET /api/v1/v1/clients/:id"), slog.Int("status", 200), slog.Int("bytes", 312),
					slog.Float64("latencyMs", 1.234), slog.String("company", "b1600000-0000-4000-8000-000000000001"),
					slog.String("keyId", "k_0123456789abcdef"), slog.String("mode", "LIVE"))
				_ = c.h.Handle(context.Background(), r)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// wholeBuffer keeps each Write whole under concurrent use, and says so.
type wholeBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (w *wholeBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Buffer.Write(p)
}

func (w *wholeBuffer) WritesWhole() {}

// A writer that keeps its writes whole is written to as it is; any other is
// locked, so that both paths (Line and slog's) never interleave on it.
func TestLocksOnlyWritersThatNeedIt(t *testing.T) {
	t.Parallel()
	var wb wholeBuffer
	if h := New(&wb, nil); h.w != io.Writer(&wb) {
		t.Errorf("a whole-writes writer was wrapped: %T", h.w)
	}
	var b bytes.Buffer
	if h := New(&b, nil); h.w == io.Writer(&b) {
		t.Error("a plain writer was written to without a lock")
	}
	// Both paths, from many goroutines, through the unlocked writer: every
	// line whole.
	h := New(&wb, nil)
	lg := slog.New(h)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if i%2 == 0 {
					lg.Info("m", "g", g, "i", i)
				} else if l := h.Begin(time.Now(), slog.LevelInfo, "m"); l != nil {
					l.Int("g", g)
					l.Int("i", i)
					_ = l.End()
				}
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(wb.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for _, ln := range lines {
		if !strings.HasPrefix(ln, `{"time":`) || !strings.HasSuffix(ln, "}") || strings.Count(ln, `"msg"`) != 1 {
			t.Fatalf("line not whole: %q", ln)
		}
	}
}
