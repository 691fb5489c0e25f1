package gendata

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Shape is how the large set's documents are spread over states and dates.
// Lists filtered by status cost what the distribution makes them cost (an
// OVERDUE page is found quickly when overdue documents are many and among
// the newest, slowly when the newest documents are not yet due), so the
// benchmarks run on each shape.
type Shape string

const (
	// ShapeMixed: issue dates over 2023-2025; at every age 45 % paid,
	// 40 % issued, 8 % draft, 7 % cancelled; three in four FT, ND and PF have
	// a due date 15 to 90 days after issue, so every one of those is past due
	// by now. The default, and the set the performance figures were first
	// taken on.
	ShapeMixed Shape = "mixed"
	// The calendar shapes (ShapeEven, ShapeAging) also give customers
	// names of a long tail (customerIn): a search then meets fragments
	// of every frequency, from thousands of matches to one, where the
	// mixed shape's names are 54 words, each in thousands of names.

	// ShapeEven: issue dates over the three years up to the load's day, the
	// same states, and every FT, ND and PF due on a day drawn between its
	// issue and twice its age later: about half of them are past due
	// whatever their age (a few days' old ones less often), so overdue
	// documents are spread evenly through the list.
	ShapeEven Shape = "even"
	// ShapeAging: issue dates over the three years up to the load's day, due
	// 30 days after issue, and documents paid as they age (80 % of the last
	// 30 days' still issued, 50 % up to 120 days, 5 % of older ones): the
	// newest issued documents are not yet due, so an OVERDUE page starts
	// after thousands of them in the API's order, as on a real company's
	// books.
	ShapeAging Shape = "aging"
)

// Shapes are the shapes LoadLarge knows.
var Shapes = []Shape{ShapeMixed, ShapeEven, ShapeAging}

// ParseShape reads a shape's name.
func ParseShape(s string) (Shape, error) {
	for _, sh := range Shapes {
		if string(sh) == s {
			return sh, nil
		}
	}
	return "", fmt.Errorf("gendata: unknown shape %q (mixed, even or aging)", s)
}

// span is the shape's issue dates: from start for span.
func (s Shape) span(today time.Time) (start time.Time, span time.Duration) {
	if s == ShapeMixed || s == "" {
		return time.Date(2023, 1, 1, 8, 0, 0, 0, time.UTC), 3 * 365 * 24 * time.Hour
	}
	span = 3 * 365 * 24 * time.Hour
	return today.Add(-span), span
}

// due is a document's due date in the shape (r its own draws), or zero to
// keep the mixed shape's.
func (s Shape) due(r *rand.Rand, issued, today time.Time) time.Time {
	day := issued.Truncate(24 * time.Hour)
	switch s {
	case ShapeEven:
		age := int(today.Sub(day).Hours() / 24)
		return day.AddDate(0, 0, r.IntN(2*age+2))
	case ShapeAging:
		return day.AddDate(0, 0, 30)
	}
	return time.Time{}
}

// agingState is the state of a document of the given age in ShapeAging.
func agingState(r *rand.Rand, age time.Duration) string {
	issued := 5
	switch days := age.Hours() / 24; {
	case days < 30:
		issued = 80
	case days < 120:
		issued = 50
	}
	switch x := r.IntN(100); {
	case x < issued:
		return "issued"
	case x < 93:
		return "paid"
	default:
		return "cancelled"
	}
}

// syllables make the long tail's words: three or four of twenty give 168,000
// words, so that a word's first four letters name about one customer in a
// few hundred, and a whole word one in tens of thousands.
var syllables = []string{"ka", "lu", "ndi", "mba", "zi", "to", "ngo", "la", "mu", "se", "ki", "wa", "ba", "te", "no", "ri", "ju", "so", "ko", "ma"}

// word is a long-tail word of r's draws, capitalised.
func word(r *rand.Rand) string {
	n := 3 + r.IntN(2)
	w := ""
	for range n {
		w += syllables[r.IntN(len(syllables))]
	}
	return strings.ToUpper(w[:1]) + w[1:]
}

// customerIn is customer i of company co in shape s: the mixed shape's
// customer, with, in the calendar shapes, a name of the long tail: a
// person's second surname or a business's first word drawn from it (r its
// own draws).
func (g gen) customerIn(s Shape, coID string, co, i int, created time.Time) Customer {
	c := g.customerAt(coID, co, i, created)
	if s == ShapeMixed || s == "" {
		return c
	}
	r := g.rng(co, kindName, i)
	if c.NIF != nil && strings.HasPrefix(*c.NIF, "54") { // a business (customerAt)
		_, rest, _ := strings.Cut(c.Name, " ")
		c.Name = word(r) + " " + rest
	} else {
		c.Name += " " + word(r)
	}
	return c
}
