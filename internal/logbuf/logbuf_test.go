package logbuf

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// out records each write to the underlying writer.
type out struct {
	mu     sync.Mutex
	writes []string
}

func (o *out) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writes = append(o.writes, string(p))
	return len(p), nil
}

func (o *out) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.writes...)
}

// An interval no test reaches: flushes happen only when the test asks.
const never = time.Hour

func TestBatchesUntilFlush(t *testing.T) {
	t.Parallel()
	var o out
	w := New(&o, Config{Interval: never})
	defer w.Close()
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got := o.get(); len(got) != 0 {
		t.Fatalf("written before a flush: %q", got)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := o.get(); len(got) != 1 || got[0] != "line 0\nline 1\nline 2\n" {
		t.Fatalf("after flush: %q, want the three lines in one write", got)
	}
	if err := w.Flush(); err != nil || len(o.get()) != 1 {
		t.Fatalf("an empty flush wrote: %q %v", o.get(), err)
	}
}

func TestSizeBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		writes []string
		want   []string // the underlying writes, before any flush
	}{
		{"fits", []string{"aaaa", "bbbb"}, nil},
		{"overflow flushes first", []string{"aaaaaa", "bbbbbb"}, []string{"aaaaaa"}},
		{"exactly full stays", []string{"aaaaa", "bbbbb"}, nil},
		{"too large goes direct, after the buffer", []string{"aa", "bbbbbbbbbbbb"}, []string{"aa", "bbbbbbbbbbbb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o out
			w := New(&o, Config{Interval: never, Size: 10})
			defer w.Close()
			for _, s := range c.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := o.get(); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Fatalf("writes %q, want %q", got, c.want)
			}
			_ = w.Flush()
			if got := strings.Join(o.get(), ""); got != strings.Join(c.writes, "") {
				t.Fatalf("after flush %q, want everything in order", got)
			}
		})
	}
}

func TestFlushesByItself(t *testing.T) {
	t.Parallel()
	var o out
	w := New(&o, Config{Interval: 5 * time.Millisecond})
	defer w.Close()
	_, _ = w.Write([]byte("line\n"))
	testenv.Eventually(t, "the line to be written out", func() error {
		return testenv.Want(strings.Join(o.get(), ""), "line\n", "written")
	})
}

func TestCloseWritesOutAndLaterLinesGoDirect(t *testing.T) {
	t.Parallel()
	var o out
	w := New(&o, Config{Interval: never})
	_, _ = w.Write([]byte("before\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := o.get(); len(got) != 1 || got[0] != "before\n" {
		t.Fatalf("after Close: %q", got)
	}
	_, _ = w.Write([]byte("after\n"))
	if got := o.get(); len(got) != 2 || got[1] != "after\n" {
		t.Fatalf("a line after Close: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

// Concurrent loggers: every line arrives whole and exactly once.
func TestConcurrentLinesStayWhole(t *testing.T) {
	t.Parallel()
	var o out
	w := New(&o, Config{Interval: time.Millisecond, Size: 256})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				fmt.Fprintf(w, "g%d-%d %s\n", g, i, strings.Repeat("x", i%40))
			}
		})
	}
	wg.Wait()
	_ = w.Close()
	all := strings.Join(o.get(), "")
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines, want %d", len(lines), 8*500)
	}
	want := map[string]bool{}
	for g := range 8 {
		for i := range 500 {
			want[fmt.Sprintf("g%d-%d %s", g, i, strings.Repeat("x", i%40))] = true
		}
	}
	for _, l := range lines {
		if !want[l] {
			t.Fatalf("torn or repeated line %q", l)
		}
		delete(want, l)
	}
}

func BenchmarkWrite(b *testing.B) {
	w := New(discard{}, Config{})
	defer w.Close()
	line := bytes.Repeat([]byte("x"), 250)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_, _ = w.Write(line)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
