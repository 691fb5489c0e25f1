package gendata

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// gen makes rows that depend only on the seed, the company number and the
// row number: the small loader collects them, the large one streams them
// without holding a million documents in memory.
type gen struct {
	seed  uint64
	label string // appended to names, e.g. " (teste)" in the sandbox
}

// rng is the random stream of one row.
func (g gen) rng(co, kind, i int) *rand.Rand {
	return rand.New(rand.NewPCG(g.seed, uint64(co)<<40|uint64(kind)<<36|uint64(i)))
}

// rowID is a deterministic, valid version-4 UUID for row i of a kind in a company.
func (g gen) rowID(kind, co, i int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(g.seed), kind, co>>12&0xfff, co&0xfff, i)
}

const (
	kindCustomer = iota + 1
	kindDocument
	kindSubmission
	kindShape // a shape's own draws, so that the mixed shape's data stays as it was
	kindName  // a shape's own draws of customers' names
)

var (
	firstNames = []string{"João", "Maria", "Ana", "Manuel", "Domingos", "Teresa", "António", "Luísa", "Paulo", "Isabel", "Francisco", "Esperança", "Carlos", "Joana", "Pedro", "Helena"}
	lastNames  = []string{"Santos", "Fernandes", "da Silva", "Neto", "Kiala", "Mbala", "Tchissola", "Cardoso", "Dos Santos", "Lourenço", "Sebastião", "Miguel", "Cassoma", "Ngola"}
	bizWords   = []string{"Kianda", "Kwanza", "Muxima", "Benguela", "Lobito", "Huambo", "Namibe", "Cuanza", "Palanca", "Mulemba", "Imbondeiro", "Welwitschia"}
	bizKinds   = []string{"Comércio Geral", "Serviços", "Construções", "Transportes", "Tecnologia", "Distribuição", "Pescas", "Agro"}
	bizSuffix  = []string{"Lda", "SA", "Lda", "Lda"}
	streets    = []string{"Rua Rainha Ginga", "Avenida 4 de Fevereiro", "Rua Major Kanhangulo", "Avenida Deolinda Rodrigues", "Rua Amílcar Cabral", "Estrada de Catete"}
	cities     = []string{"Luanda", "Benguela", "Huambo", "Lubango", "Cabinda", "Lobito"}
	products   = []string{"Consultoria", "Manutenção mensal", "Cimento 50kg", "Gasóleo (litro)", "Licença de software", "Transporte Luanda-Benguela", "Parafusos inox", "Formação", "Água 1,5L (pack)", "Cabo eléctrico (metro)"}
	agtErrors  = []string{
		`[{"idError": "E11", "descriptionError": "NIF do adquirente inválido"}]`,
		`[{"idError": "E20", "descriptionError": "Data de emissão fora do período permitido"}, {"idError": "E31", "descriptionError": "Soma das linhas diferente do total"}]`,
		`[{"idError": "E04", "descriptionError": "Série não comunicada"}]`,
	}
)

// customerAt is customer i of company co. Kinds, NIF spellings and all the
// platform's phone forms occur in turn.
func (g gen) customerAt(coID string, co, i int, created time.Time) Customer {
	r := g.rng(co, kindCustomer, i)
	c := Customer{ID: g.rowID(kindCustomer, co, i), CompanyID: coID, CreatedAt: created}
	switch i % 10 {
	case 9:
		c.Kind = nil // not recorded
	default:
		if i%2 == 0 {
			c.Kind = Ptr("C")
		} else {
			c.Kind = Ptr("I")
		}
	}
	if c.Kind != nil && *c.Kind == "I" || c.Kind == nil && r.IntN(2) == 0 {
		c.Name = firstNames[r.IntN(len(firstNames))] + " " + lastNames[r.IntN(len(lastNames))]
		if i%7 != 3 {
			// identity card: 9 digits, 2 letters, 3 digits; unique by i
			nif := fmt.Sprintf("%09d%c%c%03d", 100000000+i, 'A'+rune(co%26), 'A'+rune(i%26), i%1000)
			if i%11 == 0 {
				nif = strings.ToLower(nif) // typed in lower case
			}
			c.NIF = &nif
		}
	} else {
		c.Name = fmt.Sprintf("%s %s %s", bizWords[r.IntN(len(bizWords))], bizKinds[r.IntN(len(bizKinds))], bizSuffix[r.IntN(len(bizSuffix))])
		nif := fmt.Sprintf("54%08d", i)
		if i%13 == 0 {
			nif = nif[:3] + " " + nif[3:6] + " " + nif[6:] // typed with spaces
		}
		c.NIF = &nif
	}
	c.Name += g.label
	digits := fmt.Sprintf("9%d%07d", 1+r.IntN(9), r.IntN(10_000_000))
	switch i % 6 {
	case 0:
		c.Phone = Ptr("+244" + digits)
	case 1:
		c.Phone = Ptr(digits)
	case 2:
		c.Phone = Ptr(digits[:3] + " " + digits[3:6] + " " + digits[6:])
	case 3:
		c.Phone = Ptr("+244 " + digits[:3] + " " + digits[3:6] + " " + digits[6:])
	case 4:
		if i%12 == 4 {
			c.Phone = Ptr(fmt.Sprintf("+351 91%d %03d %03d", r.IntN(10), r.IntN(1000), r.IntN(1000))) // Portugal
		}
	case 5:
		c.Phone = Ptr("+244" + digits)
	}
	if r.IntN(4) != 0 {
		slug := strings.ToLower(strings.Fields(c.Name)[0])
		c.Email = Ptr(fmt.Sprintf("%s%d@exemplo.co.ao", asciiFold(slug), i))
	}
	if r.IntN(3) != 0 {
		c.Address = Ptr(fmt.Sprintf("%s, n.º %d, %s", streets[r.IntN(len(streets))], 1+r.IntN(300), cities[r.IntN(len(cities))]))
	}
	return c
}

func asciiFold(s string) string {
	return strings.NewReplacer("ã", "a", "á", "a", "â", "a", "é", "e", "ê", "e", "í", "i", "ó", "o", "ô", "o", "õ", "o", "ú", "u", "ç", "c").Replace(s)
}

var (
	docTypes  = []string{"FT", "FR", "FS", "NC", "ND", "PF"}
	docStates = []string{"issued", "paid", "draft", "cancelled"}
)

// docPlan says what documentAt needs from its company.
type docPlan struct {
	coID      string
	co        int
	customers int       // customers 0..customers-1 exist
	start     time.Time // first issue instant
	span      time.Duration
	shape     Shape     // "" is ShapeMixed
	today     time.Time // the load's day (midnight UTC): what is past due
}

// documentAt is document i of a company. Every type meets every state in the
// first 24 documents; due dates make some issued documents overdue and leave
// others open (no due date); amounts are exact decimals computed in integers.
func (g gen) documentAt(p docPlan, i int, seqs map[string]int) Document {
	r := g.rng(p.co, kindDocument, i)
	typ := docTypes[i%6]
	state := docStates[(i/6)%4]
	if i >= 24 { // after the full grid, a realistic mix
		switch x := r.IntN(100); {
		case x < 45:
			state = "paid"
		case x < 85:
			state = "issued"
		case x < 93:
			state = "draft"
		default:
			state = "cancelled"
		}
	}
	issued := p.start.Add(time.Duration(r.Int64N(int64(p.span)))).Truncate(time.Microsecond)
	if i >= 24 && p.shape == ShapeAging {
		state = agingState(g.rng(p.co, kindShape, i), p.today.Sub(issued))
	}
	d := Document{ID: g.rowID(kindDocument, p.co, i), CompanyID: p.coID, DocType: typ, Series: "2026",
		State: state, Currency: "AOA"}
	d.CreatedAt = issued
	if state == "paid" { // the payment changed it later (no draw: the data stays the same)
		d.UpdatedAt = issued.Add(time.Duration(1+i%30) * 24 * time.Hour)
	}
	if state != "draft" {
		d.IssuedAt = &issued
		d.Series = fmt.Sprint(issued.Year())
	}
	if seqs != nil {
		key := typ + " " + d.Series
		seqs[key]++
		d.Seq = seqs[key]
	} else {
		d.Seq = i + 1 // large loads: one numbering across types is still unique
	}
	if typ == "FT" || typ == "ND" || typ == "PF" {
		switch r.IntN(4) {
		case 0: // no due date
		case 1:
			d.DueDate = Ptr(issued.AddDate(0, 0, 15).Format("2006-01-02"))
		default:
			d.DueDate = Ptr(issued.AddDate(0, 0, 30+30*r.IntN(3)).Format("2006-01-02"))
		}
		if due := p.shape.due(g.rng(p.co, kindShape, i), issued, p.today); !due.IsZero() {
			d.DueDate = Ptr(due.Format("2006-01-02"))
		}
	}
	if typ == "FS" && r.IntN(2) == 0 || p.customers == 0 {
		d.CustomerName, d.CustomerNIF = "Consumidor final", Ptr("999999999")
	} else {
		ci := r.IntN(p.customers)
		c := g.customerIn(p.shape, p.coID, p.co, ci, time.Time{})
		d.CustomerID, d.CustomerName, d.CustomerNIF = &c.ID, c.Name, c.NIF
	}
	if typ == "NC" || typ == "ND" {
		rel := g.rowID(kindDocument, p.co, i-i%6) // the FT of the same six
		d.RelatedID = &rel
	}
	nLines := 3
	if seqs != nil {
		nLines = 1 + r.IntN(4)
	}
	addLines(r, &d, nLines)
	return d
}

// addLines draws d's n lines and sets its totals from them; its draws come
// after every other of the document's, so the data stays the same for a seed.
func addLines(r *rand.Rand, d *Document, nLines int) {
	var net, tax int64 // cents
	for l := 1; l <= nLines; l++ {
		qty := int64(1+r.IntN(20)) * 1000 // thousandths
		if r.IntN(4) == 0 {
			qty = int64(1 + r.IntN(20_000)) // fractional
		}
		price := int64(100+r.IntN(5_000_000)) * 100 // ten-thousandths
		if r.IntN(5) == 0 {
			price += int64(r.IntN(100)) // 4 significant decimals
		}
		total := (qty*price + 50_000) / 100_000 // 1e-7 -> cents, half up
		rate := []int64{1400, 1400, 700, 0}[r.IntN(4)]
		tax += (total*rate + 5000) / 10_000
		net += total
		d.Lines = append(d.Lines, Line{LineNo: l, Description: products[r.IntN(len(products))],
			Quantity: fixed(qty, 3), UnitPrice: fixed(price, 4), TaxRate: fixed(rate, 2), LineTotal: fixed(total, 2)})
	}
	d.NetTotal, d.TaxTotal, d.GrossTotal = fixed(net, 2), fixed(tax, 2), fixed(net+tax, 2)
}

// fixed renders v / 10^scale as exact decimal text.
func fixed(v int64, scale int) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := fmt.Sprintf("%0*d", scale+1, v)
	out := s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		out = "-" + out
	}
	return out
}

// submissionsFor sends the company's fiscal documents (never PF or drafts) to
// AGT in batches: most valid, some invalid with AGT's errors (and later
// corrected and sent again), some still pending.
func (g gen) submissionsFor(coID string, co int, docs []Document, firstSub int) []Submission {
	var subs []Submission
	var batch []SubmissionDocument
	var resend []string
	n := firstSub
	flush := func(at time.Time) {
		if len(batch) == 0 {
			return
		}
		r := g.rng(co, kindSubmission, n)
		s := Submission{ID: g.rowID(kindSubmission, co, n), CompanyID: coID, SubmittedAt: at.Add(time.Hour).Truncate(time.Microsecond)}
		n++
		switch x := r.IntN(10); {
		case x == 0: // not accepted yet: no request id, nothing checked
			for i := range batch {
				batch[i].Status, batch[i].Errors = nil, nil
			}
		case x == 1: // accepted, not validated yet
			s.RequestID = Ptr(fmt.Sprintf("AGT-%d-%06d", at.Year(), r.IntN(1_000_000)))
			for i := range batch {
				batch[i].Status, batch[i].Errors = nil, nil
			}
		default:
			s.RequestID = Ptr(fmt.Sprintf("AGT-%d-%06d", at.Year(), r.IntN(1_000_000)))
			s.ResultCode = Ptr[int16](0)
			checked := s.SubmittedAt.Add(time.Duration(5+r.IntN(120)) * time.Minute)
			s.CheckedAt = &checked
		}
		s.Documents = batch
		subs = append(subs, s)
		batch = nil
	}
	var last time.Time
	for i := range docs {
		d := &docs[i]
		if d.DocType == "PF" || d.IssuedAt == nil {
			continue
		}
		r := g.rng(co, kindSubmission+1, i)
		if r.IntN(8) == 0 {
			continue // not sent yet
		}
		sd := SubmissionDocument{DocumentID: d.ID, Status: Ptr("V")}
		if r.IntN(6) == 0 {
			sd.Status = Ptr("I")
			sd.Errors = Ptr(agtErrors[r.IntN(len(agtErrors))])
			if r.IntN(2) == 0 {
				resend = append(resend, d.ID)
			}
		}
		batch = append(batch, sd)
		last = *d.IssuedAt
		if len(batch) == 5 {
			flush(last)
		}
	}
	flush(last)
	// Some rejected documents, corrected and sent again a day later.
	for _, id := range resend {
		batch = append(batch, SubmissionDocument{DocumentID: id, Status: Ptr("V")})
	}
	flush(last.Add(24 * time.Hour))
	return subs
}
