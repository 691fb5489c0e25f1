package jsonstr

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func samples() []string {
	out := []string{"", "plain", `q"b\s`, "<a>&b", "\b\f\n\r\t\x00\x1f\x7f", "ã é ç", "\u2028\u2029", "\xff\xfe", "a\xc3", "😀"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(24))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		out = append(out, string(b))
	}
	return out
}

// Both styles write exactly what their model writes.
func TestAppendEqualsTheModels(t *testing.T) {
	t.Parallel()
	for _, s := range samples() {
		want, _ := json.Marshal(s)
		if got := Append(nil, s, JSON); !bytes.Equal(got, want) {
			t.Fatalf("JSON %q: got %s want %s", s, got, want)
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})).Info("", "v", s)
		line := strings.TrimSuffix(buf.String(), "\n")
		wantSlog := strings.TrimSuffix(strings.TrimPrefix(line, `{"v":`), "}")
		if got := Append(nil, s, Slog); string(got) != wantSlog {
			t.Fatalf("slog %q: got %s want %s", s, got, wantSlog)
		}
		if !utf8.Valid(Append(nil, s, JSON)) {
			t.Fatalf("invalid UTF-8 out for %q", s)
		}
	}
}
