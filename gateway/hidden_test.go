package gateway_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The document's patterns for a client's name and address refuse exactly
// the characters the gateway refuses in them, in the Basic Multilingual
// Plane: the controls (line breaks and tabs allowed in an address) and what
// invoicing.HiddenRune finds; its description names those beyond. Both are unions of ranges of characters, so
// they agree everywhere when they agree at every range's ends and just past
// them, which is what is checked. A Unicode version that adds a format
// character to Go's tables fails here until the document lists it.
func TestHiddenPattern(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(apidocs.YAML())
	if err != nil {
		t.Fatal(err)
	}
	props := doc.Components.Schemas["ClientInput"].Value.Properties
	for _, field := range []string{"name", "address"} {
		pattern := props[field].Value.Pattern
		re := regexp.MustCompile(pattern)
		refused := func(r rune) bool {
			if field == "address" && strings.ContainsRune("\t\n\r", r) {
				return false
			}
			return unicode.IsControl(r) || invoicing.Hidden(r)
		}
		for _, r := range edges(t, pattern) {
			if r <= 0xFFFF && re.MatchString("a"+string(r)+"a") == refused(r) {
				t.Errorf("%s: %U is refused by the gateway: %v, by the document's pattern: %v", field, r, refused(r), !refused(r))
			}
		}
	}
	// Beyond U+FFFF, the schema's description names each range the gateway
	// refuses: engines without Unicode mode read such characters in a
	// pattern as pairs of surrogates.
	desc := strings.Join(strings.Fields(doc.Components.Schemas["ClientInput"].Value.Description), " ")
	for _, r := range edges(t, "") {
		if r <= 0xFFFF || !invoicing.Hidden(r) || invoicing.Hidden(r-1) {
			continue
		}
		hi := r
		for invoicing.Hidden(hi + 1) {
			hi++
		}
		name := fmt.Sprintf("U+%X", r)
		if hi != r {
			name += fmt.Sprintf(" to U+%X", hi)
		}
		if !strings.Contains(desc, name) {
			t.Errorf("ClientInput's description does not name %s", name)
		}
	}
}

// edges are the characters where the pattern's classes or refused change:
// the first of each range and the first after it.
func edges(t *testing.T, pattern string) []rune {
	t.Helper()
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	var out []rune
	var walk func(*syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		if re.Op == syntax.OpCharClass {
			for i := 0; i < len(re.Rune); i += 2 {
				out = append(out, re.Rune[i], re.Rune[i+1]+1)
			}
		}
		for _, s := range re.Sub {
			walk(s)
		}
	}
	walk(parsed)
	// The ends of the ranges of Unicode's tables refused is made of: it
	// changes nowhere else.
	for _, tab := range []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Other_Default_Ignorable_Code_Point} {
		add := func(lo, hi, stride rune) {
			if stride == 1 {
				out = append(out, lo, hi+1)
				return
			}
			for r := lo; r <= hi; r += stride {
				out = append(out, r, r+1)
			}
		}
		for _, rg := range tab.R16 {
			add(rune(rg.Lo), rune(rg.Hi), rune(rg.Stride))
		}
		for _, rg := range tab.R32 {
			add(rune(rg.Lo), rune(rg.Hi), rune(rg.Stride))
		}
	}
	out = append(out, '\t', '\t'+1, '\n', '\n'+1, '\r', '\r'+1)
	out = slices.DeleteFunc(out, func(r rune) bool { return !utf8.ValidRune(r) })
	slices.Sort(out)
	return slices.Compact(out)
}

// A client whose name or address holds a character that hides or reverses
// text is refused, naming the field and the character, and nothing is
// created; the same name without it is a client.
func TestClientNameHiddenCharacters(t *testing.T) {
	t.Parallel()
	in := newWorld(t).start()
	key := in.key(t, coA, invoicing.Live, "clients:write")
	for _, c := range []struct{ field, value string }{
		{"name", "Kianda\u202E adL"}, // shown as "Kianda Lda"
		{"name", "Kian\u200Dda Lda"},
		{"name", "\uFEFFKianda Lda"},
		{"name", "Kianda Lda\u2028"},
		{"address", "Rua 1\u202E, Luanda"},
	} {
		body, _ := json.Marshal(map[string]string{"name": "Kianda Lda", c.field: c.value})
		r := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: key.Key, Company: coA, Body: string(body)})
		p := expectProblem(t, r, 400, "invalid_body")
		errs, _ := p["errors"].([]any)
		first, _ := errs[0].(map[string]any)
		if len(errs) != 1 || first["field"] != c.field || !strings.Contains(first["message"].(string), "invisible or direction-changing characters (U+") {
			t.Errorf("%s %+q: %s", c.field, c.value, r.Body)
		}
	}
	r := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: key.Key, Company: coA, Body: `{"name":"Kianda Lda"}`})
	if r.Status != 201 {
		t.Fatalf("the plain name: %d %s", r.Status, r.Body)
	}
}
