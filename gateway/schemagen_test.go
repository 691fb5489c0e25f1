package gateway_test

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/invoicing-ao/gateway/invoicing"
)

// valueGen makes random values that a schema of the OpenAPI document
// accepts, from the schema itself: enums, bounds, lengths, formats and
// patterns (through their regular expression's syntax tree), nullable and
// optional members. Each candidate is checked with the schema (kin-openapi)
// and drawn again until it passes, so that what it returns is valid by the
// document's own validator, not by this generator's reading of it.
type valueGen struct{ r *rand.Rand }

func (g valueGen) value(s *openapi3.Schema) any {
	for range 200 {
		v := g.candidate(s)
		if s.VisitJSON(v, openapi3.EnableJSONSchema2020()) == nil {
			return v
		}
	}
	panic(fmt.Sprintf("no valid value drawn for %+v", s))
}

func (g valueGen) candidate(s *openapi3.Schema) any {
	if len(s.AnyOf) > 0 {
		return g.candidate(s.AnyOf[g.r.IntN(len(s.AnyOf))].Value)
	}
	if len(s.Enum) > 0 {
		return s.Enum[g.r.IntN(len(s.Enum))]
	}
	types := s.Type.Slice()
	if len(types) == 0 {
		return nil
	}
	switch types[g.r.IntN(len(types))] {
	case "null":
		return nil
	case "integer":
		return float64(g.integer(s))
	case "boolean":
		return g.r.IntN(2) == 0
	case "object":
		return g.object(s)
	case "string":
		return g.str(s)
	}
	panic("valueGen: unsupported schema type " + strings.Join(types, ","))
}

// integer is mostly small (where pages and sizes are interesting), and
// sometimes anywhere in [min, max], bounds included.
func (g valueGen) integer(s *openapi3.Schema) int {
	lo, hi := 0, 1_000_000
	if s.Min != nil {
		lo = int(*s.Min)
	}
	if s.Max != nil {
		hi = int(*s.Max)
	}
	switch g.r.IntN(6) {
	case 0:
		return lo
	case 1:
		return hi
	case 2:
		return lo + g.r.IntN(hi-lo+1)
	}
	return lo + g.r.IntN(min(hi-lo+1, 5))
}

func (g valueGen) object(s *openapi3.Schema) map[string]any {
	out := map[string]any{}
	for name, p := range s.Properties {
		if g.r.IntN(3) == 0 && !contains(s.Required, name) {
			continue
		}
		out[name] = g.value(p.Value)
	}
	return out
}

func (g valueGen) str(s *openapi3.Schema) string {
	return strings.Map(visibleBeyondBMP, g.drawStr(s))
}

// visibleBeyondBMP keeps r, but for an invisible character beyond U+FFFF,
// which the document refuses in a description rather than its patterns
// (see ClientInput): an "x" then, and the schema's check redraws what that
// makes invalid.
func visibleBeyondBMP(r rune) rune {
	if r > 0xFFFF && invoicing.Hidden(r) {
		return 'x'
	}
	return r
}

func (g valueGen) drawStr(s *openapi3.Schema) string {
	switch s.Format {
	case "uuid":
		return randomUUID(g.r)
	case "date":
		return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, g.r.IntN(8*365)).Format("2006-01-02")
	case "date-time":
		t := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(g.r.Int64N(int64(8 * 365 * 24 * time.Hour))))
		zone := time.FixedZone("", pick(g, 0, 3600, -5*3600, 5*3600+1800))
		return t.In(zone).Format(pick(g, time.RFC3339, time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00"))
	case "email":
		return g.email()
	}
	maxLen := 40
	if s.MaxLength != nil && int(*s.MaxLength) < maxLen {
		maxLen = int(*s.MaxLength)
	}
	if g.r.IntN(8) == 0 && s.MaxLength != nil {
		maxLen = int(*s.MaxLength) // now and then, up to the bound
	}
	if s.Pattern != "" {
		return g.matching(s.Pattern, maxLen)
	}
	return g.anyText(g.r.IntN(maxLen + 1))
}

// headerText is a value for a header parameter: HTTP carries visible ASCII
// and spaces, so a string without a pattern is drawn from those.
func (g valueGen) headerText(s *openapi3.Schema) string {
	if s.Pattern != "" || len(s.Enum) > 0 || s.Format != "" {
		return g.value(s).(string)
	}
	var b strings.Builder
	for range 1 + g.r.IntN(40) {
		b.WriteByte(byte('!' + g.r.IntN('~'-'!'+1)))
	}
	return b.String()
}

// email is a plain address (the document's format: email).
func (g valueGen) email() string {
	return g.fromSet("abcdefghijklmnopqrstuvwxyz0123456789", 1+g.r.IntN(12)) + "." + g.fromSet("abcdefghijklmnopqrstuvwxyz", 1+g.r.IntN(6)) +
		"@" + g.fromSet("abcdefghijklmnopqrstuvwxyz0123456789", 1+g.r.IntN(10)) + []string{".ao", ".co.ao", ".com", ".pt"}[g.r.IntN(4)]
}

func (g valueGen) fromSet(set string, n int) string {
	runes := []rune(set)
	var b strings.Builder
	for range n {
		b.WriteRune(runes[g.r.IntN(len(runes))])
	}
	return b.String()
}

// sampleRunes is where most drawn characters come from: what names,
// addresses and searches hold, and some that often break parsers.
var sampleRunes = []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-'&/()%_+\"\\?#" +
	"áàâãçéêíóôõúÁÃÇÉÍÓÕÚ\u00a0\u3000\u2028\ufeff€–—“”…中文😀\u0301")

// anyText is n characters of any kind but surrogates, mostly sampleRunes.
func (g valueGen) anyText(n int) string {
	var b strings.Builder
	for range n {
		if g.r.IntN(5) > 0 {
			b.WriteRune(sampleRunes[g.r.IntN(len(sampleRunes))])
			continue
		}
		r := rune(g.r.IntN(utf8.MaxRune + 1))
		if !utf8.ValidRune(r) {
			r = 'x'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// matching returns a string the pattern matches, of at most maxLen
// characters where the pattern allows.
func (g valueGen) matching(pattern string, maxLen int) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		panic(err)
	}
	re = re.Simplify()
	whole := regexp.MustCompile(pattern)
	for range 100 {
		var b strings.Builder
		g.walk(re, &b, max(maxLen/3, 1))
		if s := b.String(); whole.MatchString(s) && utf8.RuneCountInString(s) <= maxLen {
			return s
		}
	}
	panic("no string drawn for " + pattern)
}

func (g valueGen) walk(re *syntax.Regexp, b *strings.Builder, rep int) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(g.inClass(re.Rune))
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteRune(sampleRunes[g.r.IntN(len(sampleRunes))])
	case syntax.OpCapture:
		g.walk(re.Sub[0], b, rep)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			g.walk(s, b, rep)
		}
	case syntax.OpAlternate:
		g.walk(re.Sub[g.r.IntN(len(re.Sub))], b, rep)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, rep
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + rep
			}
		}
		if g.r.IntN(5) > 0 {
			hi = min(hi, lo+2) // mostly a few, now and then up to rep
		}
		for range lo + g.r.IntN(hi-lo+1) {
			g.walk(re.Sub[0], b, rep)
		}
	}
	// Anchors and empty matches write nothing.
}

// inClass draws a rune of a character class (pairs of inclusive ranges):
// mostly one of sampleRunes it holds, else any of its runes.
func (g valueGen) inClass(ranges []rune) rune {
	in := func(r rune) bool {
		for i := 0; i < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	if g.r.IntN(5) > 0 {
		for range 20 {
			if r := sampleRunes[g.r.IntN(len(sampleRunes))]; in(r) {
				return r
			}
		}
	}
	for {
		i := 2 * g.r.IntN(len(ranges)/2)
		r := ranges[i] + rune(g.r.IntN(int(ranges[i+1]-ranges[i]+1)))
		if utf8.ValidRune(r) {
			return r
		}
	}
}

func randomUUID(r *rand.Rand) string {
	var b [16]byte
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
