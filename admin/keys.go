package admin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Keyring creates, lists, rolls and revokes API keys (authz.Keyring).
type Keyring interface {
	Create(ctx context.Context, nk authz.NewKey) (authz.Key, string, error)
	List(ctx context.Context, companyID string) ([]authz.Key, error)
	Get(ctx context.Context, keyID string) (authz.Key, error)
	Revoke(ctx context.Context, keyID string) (key authz.Key, revoked bool, err error)
	Roll(ctx context.Context, keyID string, overlap time.Duration) (authz.Rolled, error)
}

// Keys administers API keys: creates, rolls, revokes (revoke.go) and lists
// them, for the admin API and "gateway keys".
type Keys struct {
	*base
	keys Keyring
}

// KeyView is a key as the admin API and the CLI show it: never the secret.
type KeyView struct {
	ID         string     `json:"id"`
	CompanyID  string     `json:"companyId"`
	Mode       string     `json:"mode"`
	Scopes     []string   `json:"scopes"`
	Name       string     `json:"name"`
	Hint       string     `json:"hint"`
	State      string     `json:"state"` // active, expired or revoked, now
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	Replaces   *string    `json:"replaces"`   // the key this one was rolled from
	ReplacedBy *string    `json:"replacedBy"` // the key this one was rolled to
	// AllowedCIDRs are the networks the key is accepted from; empty: any.
	AllowedCIDRs []string `json:"allowedCidrs"`
	// Key is the secret, set only in the answer to a creation or a roll.
	Key string `json:"key,omitempty"`
}

// viewKey renders k for the admin API, the CLI and the audit log.
func (s *base) viewKey(k authz.Key) KeyView {
	scopes := make([]string, 0, 3)
	for _, sc := range k.Scopes.List() {
		scopes = append(scopes, string(sc))
	}
	nets := make([]string, 0, len(k.AllowedCIDRs))
	for _, p := range k.AllowedCIDRs {
		nets = append(nets, p.String())
	}
	return KeyView{ID: k.ID, CompanyID: k.CompanyID, Mode: string(k.Mode), Scopes: scopes, Name: k.Name,
		Hint: k.Hint, State: k.Status(s.now()), CreatedAt: k.CreatedAt, LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt,
		ExpiresAt: k.ExpiresAt, Replaces: optional(k.Replaces), ReplacedBy: optional(k.ReplacedBy), AllowedCIDRs: nets}
}

// recordKey records a change of a key at, its time: its view before (nil
// for a creation) and after. Views never hold the secret.
func (s *Keys) recordKey(ctx context.Context, actor, action string, at time.Time, before *authz.Key, after authz.Key) error {
	var b any
	if before != nil {
		b = s.viewKey(*before)
	}
	return s.record(ctx, audit.Entry{Time: at, Actor: actor, CompanyID: after.CompanyID, Action: action, KeyID: after.ID}, b, s.viewKey(after))
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// KeySpec is what a new key is made of.
type KeySpec struct {
	CompanyID string
	Mode      invoicing.Mode
	Scopes    authz.ScopeSet
	Name      string
	ExpiresAt *time.Time // nil: never
	// AllowedCIDRs are CIDRs or addresses (authz.ParseCIDRs); none: any.
	AllowedCIDRs []string
}

// CreateKey creates a key for an existing company and records who did; it
// is the one path used by the admin API and by "gateway keys create".
func (s *Keys) CreateKey(ctx context.Context, actor string, spec KeySpec) (KeyView, error) {
	var secret string
	k, err := apply(ctx, change[none, authz.Key]{actor: actor, audited: s.auditReady, what: "The key", texts: []textField{{"name", spec.Name}},
		make: func(ctx context.Context, _ none) (authz.Key, bool, error) {
			nets, err := authz.ParseCIDRs(spec.AllowedCIDRs)
			if err != nil {
				return authz.Key{}, false, err
			}
			companyID, err := s.knownCompany(ctx, spec.CompanyID)
			if err != nil {
				return authz.Key{}, false, err
			}
			k, sec, err := s.keys.Create(ctx, authz.NewKey{CompanyID: companyID, Mode: spec.Mode, Scopes: spec.Scopes,
				Name: spec.Name, ExpiresAt: spec.ExpiresAt, AllowedCIDRs: nets})
			secret = sec
			return k, err == nil, err
		},
		record: func(ctx context.Context, _ none, k authz.Key) error {
			return s.recordKey(ctx, actor, audit.ActionKeyCreated, k.CreatedAt, nil, k)
		}})
	if err != nil {
		return KeyView{}, err
	}
	v := s.viewKey(k)
	v.Key = secret
	return v, nil
}

// RolledView is the answer to a roll: the new key, with its secret shown
// this once and what it replaces, and the old key as it now is.
type RolledView struct {
	KeyView
	Previous KeyView `json:"previous"`
}

// RollKey replaces a key by a new secret with the same grants; the old key
// keeps working for overlap (authz.Keyring.Roll). The one path of the admin
// API and "gateway keys roll".
func (s *Keys) RollKey(ctx context.Context, actor, keyID string, overlap time.Duration) (RolledView, error) {
	r, err := apply(ctx, change[authz.Key, authz.Rolled]{actor: actor, audited: s.auditReady,
		read: func(ctx context.Context) (authz.Key, error) {
			k, err := s.keys.Get(ctx, keyID)
			return k, namedKey(keyID, err)
		},
		make: func(ctx context.Context, _ authz.Key) (authz.Rolled, bool, error) {
			r, err := s.keys.Roll(ctx, keyID, overlap)
			return r, err == nil, namedKey(keyID, err)
		},
		// Either event unrecorded fails the roll's answer, and its new
		// secret is not shown: the successor is to be revoked (notAudited).
		record: func(ctx context.Context, old authz.Key, r authz.Rolled) error {
			if err := errors.Join(s.recordKey(ctx, actor, audit.ActionKeyRolled, r.New.CreatedAt, &old, r.Old),
				s.recordKey(ctx, actor, audit.ActionKeyCreated, r.New.CreatedAt, nil, r.New)); err != nil {
				return notAudited(audit.Entry{Action: audit.ActionKeyCreated, KeyID: r.New.ID}, err)
			}
			return nil
		}})
	if err != nil {
		return RolledView{}, err
	}
	v := RolledView{KeyView: s.viewKey(r.New), Previous: s.viewKey(r.Old)}
	v.Key = r.Secret
	return v, nil
}

// ListKeys lists a company's keys, newest first, never with secrets.
func (s *Keys) ListKeys(ctx context.Context, companyID string) ([]KeyView, error) {
	companyID, err := parseCompany(companyID)
	if err != nil {
		return nil, err
	}
	keys, err := s.keys.List(ctx, companyID)
	if err != nil {
		return nil, err
	}
	out := make([]KeyView, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.viewKey(k))
	}
	return out, nil
}

func (s *Keys) adminCreateKey(r *http.Request, _ web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"companyId", "mode", "scopes", "name", "expiresAt", "allowedCidrs"})
	if err != nil {
		return web.Answer{}, err
	}
	var spec KeySpec
	spec.CompanyID, _ = web.StringMember(m, "companyId", &fe)
	modeS, _ := web.StringMember(m, "mode", &fe)
	spec.Name, _ = web.StringMember(m, "name", &fe)
	fe = append(fe, checkTexts(textField{"name", spec.Name})...)
	if spec.Mode, err = invoicing.ParseMode(modeS); err != nil {
		fe = append(fe, web.FieldError{Field: "mode", Message: "must be LIVE or TEST"})
	}
	var scopeList []string
	if raw, ok := m["scopes"]; !ok || json.Unmarshal(raw, &scopeList) != nil {
		fe = append(fe, web.FieldError{Field: "scopes", Message: "must be an array of scopes"})
	} else if spec.Scopes, err = authz.ParseScopes(strings.Join(scopeList, ",")); err != nil {
		fe = append(fe, fieldError("scopes", err))
	}
	if spec.CompanyID == "" {
		fe = append(fe, web.FieldError{Field: "companyId", Message: "is required"})
	}
	if v, ok := web.StringMember(m, "expiresAt", &fe); ok {
		if t, err := time.Parse(time.RFC3339Nano, v); err != nil {
			fe = append(fe, web.FieldError{Field: "expiresAt", Message: "must be an RFC 3339 time such as 2027-01-31T00:00:00Z"})
		} else if !t.After(s.now()) {
			fe = append(fe, web.FieldError{Field: "expiresAt", Message: "must be in the future"})
		} else {
			spec.ExpiresAt = &t
		}
	}
	if raw, ok := m["allowedCidrs"]; ok && string(raw) != "null" && json.Unmarshal(raw, &spec.AllowedCIDRs) != nil {
		fe = append(fe, web.FieldError{Field: "allowedCidrs", Message: "must be an array of CIDRs such as 203.0.113.0/24"})
	}
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The key request is invalid.", Fields: fe}
	}
	v, err := s.CreateKey(r.Context(), actor(r), spec)
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: v, Location: "/admin/v1/keys/" + v.ID}, nil
}

// adminRollKey rolls a key: {"overlapSeconds": N}, or no body for the
// default overlap.
func (s *Keys) adminRollKey(r *http.Request, p web.Params) (web.Answer, error) {
	overlap, err := readOverlap(r, authz.DefaultOverlap, authz.MaxOverlap)
	if err != nil {
		return web.Answer{}, err
	}
	v, err := s.RollKey(r.Context(), actor(r), p.ByName("id"), overlap)
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: v, Location: "/admin/v1/keys/" + v.ID}, nil
}

// readOverlap reads an optional body {"overlapSeconds": N}, 0 to most in
// seconds (a roll's, a secret rotation's); no body means def. Every error of
// the body is answered at once.
func readOverlap(r *http.Request, def, most time.Duration) (time.Duration, error) {
	if r.ContentLength == 0 {
		return def, nil
	}
	m, fe, err := web.ReadJSONBody(r, []string{"overlapSeconds"})
	if err != nil {
		return 0, err
	}
	overlap := def
	if raw, ok := m["overlapSeconds"]; ok {
		limit := int64(most / time.Second)
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n < 0 || n > limit {
			fe = append(fe, web.FieldError{Field: "overlapSeconds", Message: "must be an integer from 0 to " + strconv.FormatInt(limit, 10)})
		}
		overlap = time.Duration(n) * time.Second
	}
	if len(fe) > 0 {
		return 0, &web.Error{Code: "invalid_body", Detail: "The body is invalid.", Fields: fe}
	}
	return overlap, nil
}

// adminListKeys: GET /admin/v1/keys?companyId=ID&limit=N&cursor=C, a page
// of the company's keys, newest first.
func (s *Keys) adminListKeys(r *http.Request, _ web.Params) (web.Answer, error) {
	q := web.ParseQuery(r.URL.RawQuery, "companyId", "limit", "cursor")
	company, _ := q.Get("companyId")
	if company == "" {
		q.Fail("companyId", "is required")
	}
	limit := q.Int("limit", MaxKeysPage, 1, MaxKeysPage)
	cursor, _ := q.Get("cursor")
	if err := q.Err(); err != nil {
		return web.Answer{}, err
	}
	keys, err := s.ListKeys(r.Context(), company)
	if err != nil {
		return web.Answer{}, err
	}
	page, next, err := pageKeys(keys, cursor, limit)
	if err != nil {
		return web.Answer{}, &web.Error{Code: "invalid_parameter", Detail: "cursor must be a page's next, as answered.",
			Fields: []web.FieldError{{Field: "cursor", Message: "must be a page's next, as answered"}}, Err: err}
	}
	return web.Answer{Body: map[string]any{"data": page, "next": next}}, nil
}

// MaxKeysPage bounds a page of a company's keys (and is the page without a
// limit given).
const MaxKeysPage = 100

// pageKeys is the page of up to limit keys after cursor (newest first: by
// creation time, then id), and the cursor of the next page (nil on the
// last). A cursor is the creation time (Unix ms) and id of a page's last
// key, so that a key created or revoked meanwhile moves no other across a
// page's end.
func pageKeys(keys []KeyView, cursor string, limit int) ([]KeyView, *string, error) {
	newer := func(a, b KeyView) int { // newest first, to the millisecond as cursors are
		if c := cmp.Compare(b.CreatedAt.UnixMilli(), a.CreatedAt.UnixMilli()); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	}
	slices.SortStableFunc(keys, newer)
	if cursor != "" {
		ms, id, ok := strings.Cut(cursor, ":")
		n, err := strconv.ParseInt(ms, 10, 64)
		if !ok || err != nil || id == "" {
			return nil, nil, errBadCursor
		}
		at := KeyView{ID: id, CreatedAt: time.UnixMilli(n)}
		i := 0
		for i < len(keys) && newer(keys[i], at) <= 0 {
			i++
		}
		keys = keys[i:]
	}
	if len(keys) <= limit {
		return keys, nil, nil
	}
	keys = keys[:limit]
	last := keys[len(keys)-1]
	next := strconv.FormatInt(last.CreatedAt.UnixMilli(), 10) + ":" + last.ID
	return keys, &next, nil
}

// namedKey makes a key's "not found" say which key.
func namedKey(id string, err error) error {
	if invoicing.KindOf(err) == invoicing.NotFound {
		return &web.Error{Code: "not_found", Detail: "No API key " + invoicing.Clip(id) + " exists.", Err: err}
	}
	return err
}

func (s *Keys) adminGetKey(r *http.Request, p web.Params) (web.Answer, error) {
	k, err := s.keys.Get(r.Context(), p.ByName("id"))
	if err != nil {
		return web.Answer{}, namedKey(p.ByName("id"), err)
	}
	return web.Answer{Body: s.viewKey(k)}, nil
}
