package admin

import (
	"context"
	"net/http"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Revoking the key a roll made. A roll is one credential changing its
// secret: the key it replaced keeps the same grants and works on through
// the overlap (up to 30 days). Revoking is the emergency stop, so revoking
// the new key also revokes the keys it replaced that still work: a stop
// that left the other secret of the same credential working, unsaid,
// would not be one. Who wants the old key kept (the new secret was
// mislaid, the integrator still runs on the old one) says so
// (keepPrevious, --keep-previous, the console's checkbox), and the answer
// then names the key still working and until when. Revoking the old key
// only ends its overlap; the new one is untouched.

// maxRollChain bounds the walk back through a key's predecessors: a key
// is rolled once, and a predecessor still working is within its overlap,
// so a chain is short; the bound only keeps a corrupt record from looping.
const maxRollChain = 10

// RevokedView is the answer to a revocation: the key revoked, the keys it
// replaced that were revoked with it (newest first), and, when they were
// kept, those still working.
type RevokedView struct {
	KeyView
	AlsoRevoked []KeyView `json:"alsoRevoked"`
	StillActive []KeyView `json:"stillActive"`
}

// RevokeKey revokes a key by id; every instance refuses it within a second.
// The keys it replaced by a roll that still work are revoked with it unless
// keepPrevious (see above). Revoking a revoked key changes nothing and
// records nothing: so a revocation in effect but not confirmed by Redis's
// replicas, recorded at once, is recorded once when its error says to
// revoke it again; and a revocation repeated after its predecessor's
// failed revokes the predecessor then.
func (s *Keys) RevokeKey(ctx context.Context, actor, keyID string, keepPrevious bool) (RevokedView, error) {
	k, err := s.revokeOne(ctx, actor, keyID)
	if err != nil {
		return RevokedView{}, err
	}
	v := RevokedView{KeyView: s.viewKey(k), AlsoRevoked: []KeyView{}, StillActive: []KeyView{}}
	prev := k
	for range maxRollChain {
		if prev.Replaces == "" {
			break
		}
		p, err := s.keys.Get(ctx, prev.Replaces)
		if invoicing.KindOf(err) == invoicing.NotFound {
			break // expired long ago and reclaimed
		}
		if err != nil {
			return v, err
		}
		if p.Status(s.now()) != authz.StateActive || p.ReplacedBy != prev.ID {
			break
		}
		if keepPrevious {
			v.StillActive = append(v.StillActive, s.viewKey(p))
		} else {
			if p, err = s.revokeOne(ctx, actor, p.ID); err != nil {
				return v, err
			}
			v.AlsoRevoked = append(v.AlsoRevoked, s.viewKey(p))
		}
		prev = p
	}
	return v, nil
}

// revokeOne revokes one key and records it.
func (s *Keys) revokeOne(ctx context.Context, actor, keyID string) (authz.Key, error) {
	return apply(ctx, change[none, authz.Key]{actor: actor, audited: s.auditReady,
		make: func(ctx context.Context, _ none) (authz.Key, bool, error) {
			k, revoked, err := s.keys.Revoke(ctx, keyID)
			return k, revoked && k.RevokedAt != nil, namedKey(keyID, err)
		},
		record: func(ctx context.Context, _ none, k authz.Key) error {
			before := k
			before.State, before.RevokedAt = authz.StateActive, nil
			return s.recordKey(ctx, actor, audit.ActionKeyRevoked, *k.RevokedAt, &before, k)
		}})
}

// adminRevokeKey is DELETE /admin/v1/keys/{id}[?keepPrevious=true].
func (s *Keys) adminRevokeKey(r *http.Request, p web.Params) (web.Answer, error) {
	q := web.ParseQuery(r.URL.RawQuery, "keepPrevious")
	keep := false
	if v, ok := q.Get("keepPrevious"); ok {
		switch v {
		case "true":
			keep = true
		case "false":
		default:
			q.Fail("keepPrevious", "must be true or false")
		}
	}
	if err := q.Err(); err != nil {
		return web.Answer{}, err
	}
	return result(s.RevokeKey(r.Context(), actor(r), p.ByName("id"), keep))
}
