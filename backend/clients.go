package backend

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// clientRow is a customers row as read; toClient is the one mapper used by
// get, list and create.
type clientRow struct {
	ID, Name                   string
	NIF, Email, Phone, Address *string
	Kind                       *string
	CreatedAt, UpdatedAt       time.Time
}

func (r *clientRow) dest(d *dialect) []any {
	return []any{&r.ID, &r.Name, &r.NIF, &r.Email, &r.Phone, &r.Address, &r.Kind, d.ts(&r.CreatedAt), d.ts(&r.UpdatedAt)}
}

func (r *clientRow) toClient() invoicing.Client {
	c := invoicing.Client{
		ID: r.ID, Name: r.Name, NIF: r.NIF, Email: r.Email, Address: r.Address,
		Type:      clientType(r.Kind),
		CreatedAt: invoicing.Timestamp{Time: r.CreatedAt.UTC()},
		UpdatedAt: invoicing.Timestamp{Time: r.UpdatedAt.UTC()},
	}
	if r.Phone != nil {
		c.Phone = r.Phone
		// Most phones are stored in the API's form already: then the
		// scanned string is answered as it is, with nothing allocated.
		if p := normalizePhone(*r.Phone); p != *r.Phone {
			c.Phone = &p
		}
	}
	return c
}

// queryClient is GetClient for canonical ids.
func (s *Store) queryClient(ctx context.Context, companyID, id string) (invoicing.Client, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var r clientRow
	// newRow: the client may have been created a moment ago, here or on
	// another instance.
	err := s.db.reader(newRow, companyID).one(ctx, s.q.client, []any{companyID, id}, r.dest(s.d)...)
	if errors.Is(err, errNoRows) {
		return invoicing.Client{}, ErrNotFound
	}
	if err != nil {
		return invoicing.Client{}, s.fail(ctx, "get client", err)
	}
	return r.toClient(), nil
}

// queryClients is ListClients for a canonical company id and a checked page.
func (s *Store) queryClients(ctx context.Context, companyID string, f invoicing.ClientFilter) (invoicing.Page[invoicing.Client], error) {
	page := emptyPage[invoicing.Client](f.Page, f.PageSize)
	var w where
	w.add("c.company_id = ?", companyID)
	w.add("c.deleted_at IS NULL")
	if f.Search != "" {
		name := "%" + escapeLike(strings.ToLower(f.Search)) + "%"
		if nif := normalizeNIF(f.Search); nif != "" {
			w.add("("+s.d.nameLike+" OR "+s.d.nifLike+")", name, "%"+escapeLike(nif)+"%")
		} else {
			w.add(s.d.nameLike, name)
		}
	}
	s.addChanges(&w, "c", f.UpdatedSince)
	o := orderOf(f.UpdatedSince != nil, clientsByChange, clientsByCreation)
	if f.After != nil {
		page.Page = 0
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	rd := s.db.reader(ownWrites, companyID) // a list right after the company's own create includes it

	if f.Search != "" && f.After == nil {
		if p, ok, err := s.searchPage(ctx, rd, w, o, f); ok || err != nil {
			return p, err
		}
	}
	total, pw, plan, done, err := s.plan(ctx, rd, listSpec{op: "count clients", from: "customers c", w: w, o: o, after: f.After, page: f.Page, size: f.PageSize,
		search: f.Search != ""})
	if err != nil {
		return invoicing.Page[invoicing.Client]{}, err
	}
	if page.Total = total; done {
		return page, nil
	}
	q, args := s.pageQuery(clientCols, "customers c", "c", pw, o, plan.pa)
	if f.Search != "" {
		args = s.d.plannedArgs(args) // its plan depends on the fragment (postgres.go)
	}
	rows, err := rd.query(ctx, q, args...)
	if err != nil {
		return invoicing.Page[invoicing.Client]{}, s.fail(ctx, "list clients", err)
	}
	defer rows.Close()
	var r clientRow
	dest := r.dest(s.d)
	for rows.Next() {
		if len(page.Data) == f.PageSize { // the row past the page: there is a next one
			page.Next = clientPosition(&page.Data[len(page.Data)-1], o)
			break
		}
		r = clientRow{}
		if err := rows.Scan(dest...); err != nil {
			return invoicing.Page[invoicing.Client]{}, s.fail(ctx, "list clients", err)
		}
		c := r.toClient()
		if plan.mark { // the row before the page
			t := c.CreatedAt.Time
			s.markFirst(&plan, &invoicing.Position{At: &t, ID: c.ID})
			continue
		}
		page.Data = append(page.Data, c)
	}
	if err := rows.Err(); err != nil {
		return invoicing.Page[invoicing.Client]{}, s.fail(ctx, "list clients", err)
	}
	return page, nil
}

// insertClient is CreateClient for a canonical company id.
func (s *Store) insertClient(ctx context.Context, companyID string, c invoicing.NewClient) (invoicing.Client, error) {
	if strings.TrimSpace(c.Name) == "" {
		return invoicing.Client{}, fmt.Errorf("%w: client name is required", ErrInvalid)
	}
	kind, err := kindOf(c.Type)
	if err != nil {
		return invoicing.Client{}, err
	}
	id := c.ID
	if id == "" {
		if id, err = newUUID(); err != nil {
			return invoicing.Client{}, fmt.Errorf("backend: create client: %w", err)
		}
	} else if cid, ok := invoicing.CanonicalUUID(id); !ok || cid != id {
		return invoicing.Client{}, fmt.Errorf("%w: client id must be a lower-case UUID", ErrInvalid)
	}
	var nif *string
	if c.NIF != nil {
		if n := normalizeNIF(*c.NIF); n != "" {
			nif = &n
		}
	}
	var phone *string
	if c.Phone != nil {
		p := normalizePhone(*c.Phone)
		phone = &p
	}
	// Microseconds: what both engines store, so the returned client equals a
	// later GetClient.
	now := s.now().UTC().Truncate(time.Microsecond)
	r := clientRow{ID: id, Name: c.Name, NIF: nif, Email: c.Email, Phone: phone,
		Address: c.Address, Kind: kind, CreatedAt: now, UpdatedAt: now}

	ctx, cancel := s.deadline(ctx)
	defer cancel()
	defer s.writing.begin(now)() // in flight, at the time it records, until it ends
	n, err := s.db.primary.exec(ctx, s.q.insertClient,
		id, companyID, c.Name, nif, c.Email, phone, c.Address, kind, s.d.tsArg(now), s.d.tsArg(now),
		nif, companyID, nif)
	if err == nil && n == 0 {
		err = ErrNIFConflict // an existing NIF in another typed form
	}
	if err != nil {
		err = s.fail(ctx, "create client", err)
		if c.ID != "" && (errors.Is(err, errIDTaken) || errors.Is(err, ErrNIFConflict)) {
			// An earlier attempt of the same create (same id) may have
			// made the row: it, not the NIF, is then the conflict.
			err = s.existingClient(ctx, companyID, id, err)
		}
		if errors.Is(err, ErrNIFConflict) && nif != nil {
			err = s.nifHolder(ctx, companyID, *nif)
		}
		return invoicing.Client{}, err
	}
	s.db.wrote(companyID)
	return r.toClient(), nil
}

// existingClient is the ClientExistsError of the company's client with id,
// deleted or not, or cause when the company has no client with it.
func (s *Store) existingClient(ctx context.Context, companyID, id string, cause error) error {
	var r clientRow
	// written: the primary refused the id; the replica may not have the row.
	err := s.db.reader(written, companyID).one(ctx, s.q.clientAny, []any{companyID, id}, r.dest(s.d)...)
	switch {
	case errors.Is(err, errNoRows):
		if errors.Is(cause, errIDTaken) { // another company's id: cannot be derived alike
			return fmt.Errorf("backend: create client: id %s taken outside the company", id)
		}
		return cause
	case err != nil:
		return s.fail(ctx, "create client: read existing", err)
	}
	s.db.wrote(companyID) // a retry's read of its own row must see it
	return &ClientExistsError{Client: r.toClient()}
}

// nifHolder is the NIFConflictError naming the company's live client with
// the (normalized) nif. The conflict stands without the name when it cannot
// be read (the client deleted since, the database failing now): the create
// was refused either way.
func (s *Store) nifHolder(ctx context.Context, companyID, nif string) error {
	var id string
	// written: the primary refused the NIF; the replica may not have the row.
	if err := s.db.reader(written, companyID).one(ctx, s.q.clientByNIF, []any{companyID, nif}, &id); err != nil {
		return ErrNIFConflict
	}
	return &NIFConflictError{ClientID: id}
}

// newUUID returns a random (version 4) UUID in canonical lower-case form.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
