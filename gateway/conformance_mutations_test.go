package gateway_test

import (
	"encoding/json"
	"strings"
)

// mutation makes a valid request invalid in one way, and says what the
// gateway must answer and whether the document's schemas alone forbid it
// (otherwise a description does: unknown or repeated parameters, dates that
// do not exist, to before from, 999999999, duplicate members, media type and
// size).
type mutation struct {
	name     string
	want     []int
	inSchema bool
	apply    func(g valueGen, p *probe)
}

func pick[T any](g valueGen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// mutations are those that apply to the operation.
func (c *conformance) mutations() []mutation {
	bad := []int{400}
	ms := []mutation{
		{"no X-Company-Id", bad, false, func(_ valueGen, p *probe) { p.noCompany = true }},
		{"no key", []int{401}, false, func(_ valueGen, p *probe) { p.noKey = true }},
	}
	query := map[string]bool{}
	for _, ref := range c.op.Parameters {
		query[ref.Value.Name] = ref.Value.In == "query"
	}
	if !query["page"] && !query["pageSize"] {
		ms = append(ms, mutation{"a query string where none is accepted", bad, false, func(g valueGen, p *probe) {
			p.query = append(p.query, [2]string{pick(g, "x", "page", "pageSize"), "1"})
		}})
	}
	if query["pageSize"] && !query["page"] { // the events feed: by cursor only
		ms = append(ms,
			mutation{"an unknown parameter", bad, false, func(g valueGen, p *probe) {
				setQuery(&p.query, pick(g, "x", "page", "updatedSince"), "1")
			}},
			mutation{"pageSize out of range or not an integer", bad, true, func(g valueGen, p *probe) {
				setQuery(&p.query, "pageSize", pick(g, "0", "101", "1000", "x", "20.0"))
			}},
			mutation{"an unknown event type", bad, true, func(g valueGen, p *probe) {
				setQuery(&p.query, "type", pick(g, "invoice.lost", "invoice.paid,", "INVOICE.PAID", "client"))
			}})
	}
	if query["page"] {
		ms = append(ms, pagedListMutations()...)
	}
	if query["status"] {
		ms = append(ms,
			mutation{"status or type not in the enum", bad, true, func(g valueGen, p *probe) {
				setQuery(&p.query, pick(g, "status", "type"), pick(g, "overdue", "LATE", "Paid", "ISSUED ", "ft", "XX", "FT,FR"))
			}},
			mutation{"not a date", bad, true, func(g valueGen, p *probe) {
				setQuery(&p.query, pick(g, "from", "to"), pick(g, "2026-1-01", "20260101", "2026/01/01", "01-02-2026", "2026-13-01", "2026-00-10", "2026-01-32", "today"))
			}},
			mutation{"a date that does not exist", bad, false, func(g valueGen, p *probe) {
				setQuery(&p.query, pick(g, "from", "to"), pick(g, "2026-02-30", "2025-02-29", "2026-04-31"))
			}},
			mutation{"to before from", bad, false, func(g valueGen, p *probe) {
				setQuery(&p.query, "from", "2026-03-02")
				setQuery(&p.query, "to", "2026-03-01")
			}},
		)
	}
	if query["search"] {
		ms = append(ms,
			mutation{"search over 100 characters", bad, true, func(g valueGen, p *probe) {
				setQuery(&p.query, "search", g.fromSet("abcxyzÁÇ", 101+g.r.IntN(40)))
			}},
			mutation{"search with a control character", bad, true, func(g valueGen, p *probe) {
				setQuery(&p.query, "search", "ab"+pick(g, "\x01", "\x1b[31m", "\x7f", "\u0085", "\u009b")+"cd")
			}},
		)
	}
	if _, ok := query["id"]; ok {
		// Not inSchema: format is an annotation in OpenAPI 3.1 (JSON Schema
		// 2020-12), and the document promises 404 not_found for any id.
		ms = append(ms, mutation{"an id that is not a UUID", []int{404}, false, func(g valueGen, p *probe) {
			p.id = pick(g, "..", ".", "%", "a/b", "/", "x?y", "#", "not-a-uuid", g.anyText(1+g.r.IntN(20)),
				randomUUID(g.r)+"0", randomUUID(g.r)[1:], strings.ReplaceAll(randomUUID(g.r), "-", ""))
			p.want = []int{404}
		}})
	}
	if c.op.RequestBody != nil {
		ms = append(ms, bodyMutations()...)
		ms = append(ms, mutation{"Idempotency-Key not 1 to 255 printable ASCII characters", bad, true, func(g valueGen, p *probe) {
			p.header["Idempotency-Key"] = pick(g, strings.Repeat("k", 256), "clé-1", "a\tb", "\u00a0x")
		}})
	}
	return ms
}

// pagedListMutations make a request of a list by page (or by cursor)
// invalid.
func pagedListMutations() []mutation {
	bad := []int{400}
	return []mutation{
		{"page out of range or not an integer", bad, true, func(g valueGen, p *probe) {
			setQuery(&p.query, "page", pick(g, "0", "-1", "1000001", "abc", "1.5", "1e3", "99999999999999999999"))
		}},
		{"pageSize out of range or not an integer", bad, true, func(g valueGen, p *probe) {
			setQuery(&p.query, "pageSize", pick(g, "0", "101", "1000", "x", "20.0"))
		}},
		{"unknown parameter", bad, false, func(g valueGen, p *probe) {
			p.query = append(p.query, [2]string{pick(g, "pagesize", "q", "limit", "offset", "Page", "sort"), "1"})
		}},
		{"a cursor the API did not give", bad, false, func(g valueGen, p *probe) {
			p.follow = false
			setQuery(&p.query, "cursor", pick(g, "x", "AQGx1KjQlwcAAAAACgAAAAAAAEAAgAAAAAAAAAoI7y8vjIrPyb8I2QEW2l3B", g.fromSet("ABCDEFabcdef0123456789-_", 40)))
			p.query = withoutQuery(p.query, "page")
		}},
		{"a cursor with page", bad, false, func(g valueGen, p *probe) {
			// The API's next cursor (one item a page of the whole list, so
			// there is one), sent with a page number.
			p.follow, p.query = true, [][2]string{{"pageSize", "1"}, {"page", "1"}}
		}},
		{"updatedSince not an RFC 3339 instant", bad, true, func(g valueGen, p *probe) {
			setQuery(&p.query, "updatedSince", pick(g, "2026-03-01", "yesterday", "2026-03-01T09:00:00", "2026-03-01 09:00:00Z", "1700000000"))
		}},
		{"repeated parameter", bad, false, func(g valueGen, p *probe) {
			name := pick(g, "page", "pageSize")
			v := queryValue(p.query, name)
			if v == "" {
				v = "2"
			}
			p.query = append(p.query, [2]string{name, v}, [2]string{name, v})
		}},
	}
}

// bodyMutations make a create's body invalid.
func bodyMutations() []mutation {
	bad := []int{400}
	member := func(name string, values ...any) func(valueGen, *probe) {
		return func(g valueGen, p *probe) {
			var m map[string]any
			if err := json.Unmarshal([]byte(p.body), &m); err != nil {
				panic(err)
			}
			m[name] = pick(g, values...)
			b, _ := json.Marshal(m)
			p.body = string(b)
		}
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	return []mutation{
		{"no name", bad, true, func(_ valueGen, p *probe) {
			var m map[string]any
			_ = json.Unmarshal([]byte(p.body), &m)
			delete(m, "name")
			b, _ := json.Marshal(m)
			p.body = string(b)
		}},
		{"name of another type", bad, true, member("name", 42, true, []any{"x"}, map[string]any{"x": 1}, nil)},
		{"name too long, blank or with a control character", bad, true, member("name", long(201), long(300), "", "   ", "\u3000\u00a0\t", "Ana\x01Lda", "Ana\u009bLda")},
		{"malformed NIF", bad, true, member("nif", "12", "ABCDEFGHI", "1234567890123", "12345678A", "123456789AB12", "12345678-9", 123456789)},
		{"the anonymous consumer's NIF", bad, false, member("nif", "999999999", "999 999 999")},
		{"malformed phone", bad, true, member("phone", "923456789", "+351912345678", "+244 92345678", "+2449234567890", "")},
		{"malformed e-mail", bad, false, member("email", "not-an-email", "a@b", "A <a@b.ao>", "a@@b.ao", "")},
		{"address too long, blank or with a control character", bad, true, member("address", long(501), "", "  ", "Rua\x07 1")},
		{"name or address with an invisible or direction-changing character", bad, true, func(g valueGen, p *probe) {
			member(pick(g, "name", "address"), "Ana\u202ELda", "Ki\u200Dnda", "\ufeffAna", "Ana\u2028", "Rua\u200B1")(g, p)
		}},
		{"name or address with an invisible character beyond U+FFFF", bad, false, func(g valueGen, p *probe) {
			member(pick(g, "name", "address"), "Ana\U000E0041", "Rua\U000F0001 1", "Ki\U0001D173nda")(g, p)
		}},
		{"type not in the enum", bad, true, member("type", "company", "PERSON", 1, "")},
		{"unknown member (id)", bad, true, member("id", "00000000-0000-4000-8000-000000000000", 1)},
		{"unknown member (createdAt)", bad, true, member("createdAt", "2026-01-01T00:00:00.000Z")},
		{"not an object", bad, true, func(g valueGen, p *probe) { p.body = pick(g, `[]`, `"x"`, `42`, `null`, `[{"name":"x"}]`) }},
		{"not JSON", bad, true, func(g valueGen, p *probe) { p.body = pick(g, `{"name":`, `{name:"x"}`, `{"name":"x",}`, "\xff") }},
		{"more after the object", bad, false, func(g valueGen, p *probe) { p.body += pick(g, ` {}`, ` 1`, `x`) }},
		{"a member twice", bad, false, func(_ valueGen, p *probe) { p.body = `{"name":"Ana","name":"Bela"}` }},
		{"not application/json", []int{415}, false, func(g valueGen, p *probe) {
			p.contentType = pick(g, "text/plain", "application/json; charset=latin1", "application/xml", "multipart/form-data")
		}},
		{"over 64 KiB", []int{413}, false, func(_ valueGen, p *probe) {
			p.body = `{"name":"x","address":"` + long(70_000) + `"}`
		}},
	}
}
