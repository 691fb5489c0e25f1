package backend

import (
	"fmt"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The bookmark memory: nearest is the largest offset at or before the page
// among fresh bookmarks, and the memory stays bounded per list and in lists.
func TestBookmarkMemory(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	b := newBookmarks(10*time.Second, 1000, nil)
	k := countKey{company: "c", query: "q"}
	for i := range maxBookmarksPerList + 4 { // offsets 1000, 2000, ...; the first ones oldest
		b.put(k, bookmark{offset: 1000 * (i + 1), pos: invoicing.Position{ID: fmt.Sprint(i)}, asOf: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	l := b.lists[k]
	if len(l) != maxBookmarksPerList || l[0].offset != 5000 {
		t.Fatalf("%d bookmarks from offset %d; want %d, the oldest four dropped", len(l), l[0].offset, maxBookmarksPerList)
	}
	for i := 1; i < len(l); i++ {
		if l[i-1].offset >= l[i].offset {
			t.Fatalf("not sorted at %d: %d, %d", i, l[i-1].offset, l[i].offset)
		}
	}
	now := t0.Add(time.Second)
	if bm, ok := b.nearest(k, 7999, now); !ok || bm.offset != 7000 {
		t.Errorf("nearest to 7999: %+v %v, want 7000", bm, ok)
	}
	if _, ok := b.nearest(k, 4999, now); ok {
		t.Error("a bookmark before the first kept")
	}
	b.put(k, bookmark{offset: 7000, pos: invoicing.Position{ID: "new"}, asOf: now})
	if bm, _ := b.nearest(k, 7000, now); bm.pos.ID != "new" || len(b.lists[k]) != maxBookmarksPerList {
		t.Errorf("a bookmark at the same offset replaces it: %+v, %d kept", bm, len(b.lists[k]))
	}
	// Too old: the next younger one at or before the offset, else none.
	if bm, ok := b.nearest(k, 8000, t0.Add(10*time.Second+7*time.Millisecond)); !ok || bm.offset != 7000 {
		t.Errorf("with the older ones aged out: %+v %v, want the replaced 7000", bm, ok)
	}
	for i := range maxBookmarkLists {
		b.put(countKey{company: fmt.Sprint(i)}, bookmark{offset: 1000, asOf: now})
	}
	if n := len(b.lists); n > maxBookmarkLists {
		t.Errorf("%d lists kept, want at most %d", n, maxBookmarkLists)
	}
}
