package backend

import (
	"sort"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Deep pages of large lists. OFFSET n walks n index entries: page 2,000 of the
// million-document company (OFFSET 39,980) costs ~25 ms where page 1 costs
// ~1 ms. For lists whose total is not exact anyway (at least ExactTotalBelow
// matches, counts.go), the Store remembers where a deep page began, as the
// position of the row before it (a bookmark), and the next request for that
// page, or for one after it, continues from that position (order.go's keyset
// condition): OFFSET then skips only the rows between the bookmark and the
// page.
//
// A bookmark is served until it is TotalMaxAge old, measured from the OFFSET
// walk it came from (one made from an older bookmark keeps the older's age).
// Rows inserted or deleted ahead of it within that time shift where such a
// page starts, by as many rows as were written: like the total, the page
// boundaries of a large list may lag writes by at most TotalMaxAge. The rows
// of a page are always live. Lists below ExactTotalBelow matches, pages within
// the first BookmarkFrom rows, and lists by position or by change are read as
// before.

const (
	defaultBookmarkFrom = 1000
	maxBookmarkLists    = 1000 // lists remembered; past it the memory starts over (~2.4 MB at most)
	maxBookmarksPerList = 16   // per list; past it the oldest goes
)

type bookmark struct {
	offset int                // the rows before the bookmarked page
	pos    invoicing.Position // the row just before it
	asOf   time.Time          // when the OFFSET walk it comes from began
}

type bookmarks struct {
	maxAge time.Duration
	from   int
	now    func() time.Time

	mu    sync.Mutex
	lists map[countKey][]bookmark // sorted by offset
}

func newBookmarks(maxAge time.Duration, from int, now func() time.Time) *bookmarks {
	return &bookmarks{maxAge: maxAge, from: from, now: now, lists: make(map[countKey][]bookmark)}
}

// nearest is the list's freshest usable bookmark at or before offset: the
// one with the largest offset among those younger than maxAge.
func (b *bookmarks) nearest(k countKey, offset int, now time.Time) (bookmark, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lists[k]
	for i := sort.Search(len(l), func(i int) bool { return l[i].offset > offset }) - 1; i >= 0; i-- {
		if now.Sub(l[i].asOf) < b.maxAge {
			return l[i], true
		}
	}
	return bookmark{}, false
}

// put remembers bm for the list, replacing one at the same offset.
func (b *bookmarks) put(k countKey, bm bookmark) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.lists[k]
	if !ok && len(b.lists) >= maxBookmarkLists {
		b.lists = make(map[countKey][]bookmark)
	}
	i := sort.Search(len(l), func(i int) bool { return l[i].offset >= bm.offset })
	switch {
	case i < len(l) && l[i].offset == bm.offset:
		l[i] = bm
	case len(l) >= maxBookmarksPerList:
		oldest := 0
		for j := range l {
			if l[j].asOf.Before(l[oldest].asOf) {
				oldest = j
			}
		}
		l = append(l[:oldest], l[oldest+1:]...)
		i = sort.Search(len(l), func(i int) bool { return l[i].offset >= bm.offset })
		fallthrough
	default:
		l = append(l, bookmark{})
		copy(l[i+1:], l[i:])
		l[i] = bm
	}
	b.lists[k] = l
}

// deepPage is how one page of a list is read: its where (pw, with the
// bookmark's position when one is used) and its cut (pa); mark is set when
// the query reads one row before the page to bookmark it (see markFirst).
type deepPage struct {
	pa   pageArgs
	mark bool
	key  countKey
	at   int       // the page's offset in the list
	asOf time.Time // the age the new bookmark inherits
	// wide is set when pw continues from a draft with the drafts only: the
	// order's own condition after a draft ("the drafts after it, or any
	// issued one") is an OR that PostgreSQL filters row by row from the
	// first draft (79,783 of them in the large company), while "the drafts
	// after it" is a range of the index. Should the query give fewer rows
	// than it asked for, the drafts ran out within the page: it is read again
	// with wide, the order's own condition.
	wide *where
}

// planPage plans a page of a list of total matches in order o: pw is the
// page's where (w and any position already added), pa its cut by number.
func (s *Store) planPage(w where, pw *where, o listOrder, total int64, pa pageArgs) (deepPage, error) {
	p := deepPage{pa: pa}
	if s.marks == nil || pa.after || o.changes || total < s.counts.exactBelow || pa.offset < s.marks.from {
		return p, nil
	}
	now := s.now()
	p.key, p.at, p.asOf = listKey(o.by, w), pa.offset, now
	if bm, ok := s.marks.nearest(p.key, pa.offset, now); ok {
		wide, err := s.continueAfter(pw, o, &bm.pos)
		if err != nil {
			return p, err
		}
		p.wide = wide
		p.pa.offset -= bm.offset
		p.asOf = bm.asOf
	}
	if p.pa.offset > 0 { // read the row before the page, to bookmark it
		p.pa.offset--
		p.pa.limit++
		p.mark = true
	}
	return p, nil
}

// markFirst bookmarks the page at the position of the row read before it.
func (s *Store) markFirst(p *deepPage, pos *invoicing.Position) {
	p.mark = false
	s.marks.put(p.key, bookmark{offset: p.at, pos: *pos, asOf: p.asOf})
}

// listKey names a list for the bookmarks: its order, SQL and arguments, as
// listTotal names it for the counts.
func listKey(by string, w where) countKey {
	return countKeyOf(by+"\x00"+w.sql(), w)
}
