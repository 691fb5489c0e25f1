package main

import "testing"

// Counts and articles read as English: "1 failed delivery", "an
// invoice.paid change".
func TestWording(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 failed deliveries"}, {1, "1 failed delivery"}, {2, "2 failed deliveries"}, {12345, "12,345 failed deliveries"}} {
		if got := plural(c.n, "failed delivery", "failed deliveries"); got != c.want {
			t.Errorf("plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for word, want := range map[string]string{"invoice.paid": "an", "invoice.transmission.updated": "an", "client.created": "a", "": "a"} {
		if got := article(word); got != want {
			t.Errorf("article(%q) = %q, want %q", word, got, want)
		}
	}
}
