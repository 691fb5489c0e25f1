package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Sealer keeps signing secrets encrypted at rest (internal/seal's Keyring
// does, with age, to the operator's key): whoever reads Redis, or a copy of
// it, must not be able to sign for every integrator.
type Sealer interface {
	// Seal encrypts a secret to the current key (or returns it as is when
	// the operator chose plain text).
	Seal(plain string) (string, error)
	// Open returns a stored secret's plain value; a secret stored before
	// sealing was configured is plain already.
	Open(stored string) (string, error)
	// Current reports whether a stored secret is as Seal would store it
	// now: false for plain text or an older key's seal, which Reseal
	// seals again.
	Current(stored string) bool
}

// plainSealer stores secrets as they are: Config.Secrets' nil.
type plainSealer struct{}

func (plainSealer) Seal(p string) (string, error) { return p, nil }
func (plainSealer) Open(p string) (string, error) { return p, nil }
func (plainSealer) Current(string) bool           { return true }

// errUnsealable: a stored secret that the configured keys do not open.
var errUnsealable = errors.New("the signing secret cannot be decrypted with webhookSecretsKey (nor webhookSecretsOldKeys)")

// signingKeys are the HMAC keys to sign with at now: the current secret,
// then the previous one while its overlap lasts, each opened.
func (es *Webhooks) signingKeys(e *Webhook, now time.Time) ([][]byte, error) {
	var out [][]byte
	for _, sec := range e.secrets {
		if !sec.Until.IsZero() && !now.Before(sec.Until) {
			continue
		}
		plain, err := es.sealer.Open(sec.Secret)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUnsealable, err)
		}
		if k, err := secretKey(plain); err == nil {
			out = append(out, k)
		}
	}
	return out, nil
}

// sealNew makes a new signing secret and its stored form.
func (es *Webhooks) sealNew() (plain, stored string, err error) {
	plain = newSecret()
	if stored, err = es.sealer.Seal(plain); err != nil {
		return "", "", fmt.Errorf("events: sealing the signing secret: %w", err)
	}
	return plain, stored, nil
}

// Resealed is what Reseal did.
type Resealed struct {
	Webhooks int // webhook endpoints read
	Resealed int // endpoints whose secrets were sealed again
	// Unopened are the endpoints whose secrets no configured key opens:
	// their deliveries fail until the key that sealed them is configured
	// again, or their secret is rotated.
	Unopened []string
}

// Reseal stores every endpoint's secrets as the Sealer would now: the plain
// ones (stored before sealing was configured) sealed, those sealed by an
// older key sealed by the current one. The secrets do not change, nor does
// the endpoints' updatedAt. Run at each start and by `gateway webhooks
// reseal`, it is how a key is rotated and plain secrets migrated; several
// instances running it at once are harmless (each write is a
// compare-and-set of the endpoint's record).
//
// It then waits, as every endpoint change does, for the replicas the
// configuration asks for (replicas.go), once for all its writes and those
// of any Reseal before it: an operator drops the old keys when it reports
// nothing left under them, and a failover that lost a record sealed again
// would leave it under a key nobody holds. When they do not confirm in
// time, it reports what it did with ErrResealNotReplicated; run again, it
// waits again.
func (es *Webhooks) Reseal(ctx context.Context) (Resealed, error) {
	r, err := es.resealAll(ctx)
	if err != nil {
		return r, err
	}
	key := es.l.sealed()
	unconfirmed, err := es.confirm(ctx, key, func(c redis.Cmdable) error {
		return c.Set(ctx, key, es.now().UnixMilli(), 0).Err()
	})
	switch {
	case err != nil:
		return r, unavailable(err)
	case unconfirmed:
		return r, ErrResealNotReplicated
	}
	return r, nil
}

// ErrResealNotReplicated: the secrets sealed again are in effect, but fewer
// replicas than required confirmed it in time.
var ErrResealNotReplicated = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
	Detail:  "Redis's replicas did not confirm the signing secrets sealed again in time: they are in effect, but a Redis failover could undo it; keep the old keys and run the reseal again once Redis is healthy.",
	Message: "events: the signing secrets sealed again are in effect but Redis's replicas did not confirm them, so a Redis failover could undo it: keep the old keys (webhookSecretsOldKeys) and run `gateway webhooks reseal` again once Redis is healthy"})

// resealAll seals again the secrets of every endpoint that needs it.
func (es *Webhooks) resealAll(ctx context.Context) (Resealed, error) {
	var r Resealed
	for _, m := range invoicing.Modes {
		companies, err := es.rdb.SMembers(ctx, es.l.companies(m)).Result()
		if err != nil {
			return r, unavailable(err)
		}
		for _, c := range companies {
			ids, err := es.rdb.SMembers(ctx, es.l.endpoints(m, c)).Result()
			if err != nil {
				return r, unavailable(err)
			}
			for _, id := range ids {
				done, err := es.resealOne(ctx, id)
				switch {
				case errors.Is(err, errUnsealable):
					r.Unopened = append(r.Unopened, id)
				case errors.Is(err, ErrNotFound): // deleted meanwhile
					continue
				case err != nil:
					return r, err
				}
				r.Webhooks++
				if done {
					r.Resealed++
				}
			}
		}
	}
	return r, nil
}

// resealOne seals an endpoint's secrets again when they are not current;
// it reports whether it wrote.
func (es *Webhooks) resealOne(ctx context.Context, id string) (bool, error) {
	for range 5 {
		h, err := es.rdb.HGetAll(ctx, es.l.endpoint(id)).Result()
		if err != nil {
			return false, unavailable(err)
		}
		e, ok, err := decodeEndpoint(id, h)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, ErrNotFound
		}
		stale := false
		for i, sec := range e.secrets {
			if es.sealer.Current(sec.Secret) {
				continue
			}
			plain, err := es.sealer.Open(sec.Secret)
			if err != nil {
				return false, fmt.Errorf("%w: %w", errUnsealable, err)
			}
			if e.secrets[i].Secret, err = es.sealer.Seal(plain); err != nil {
				return false, err
			}
			stale = true
		}
		if !stale {
			return false, nil
		}
		cfg, _ := json.Marshal(e.config())
		now := strconv.FormatInt(es.now().UnixMilli(), 10)
		done, err := updateScript.Run(ctx, es.rdb, []string{es.l.endpoint(id)}, h["cfg"], cfg, "-", now, disabledByRequest,
			es.l.queue(id), es.l.ready(), id, es.l.version()).Int()
		if err != nil {
			return false, unavailable(err)
		}
		if done == 1 {
			return true, nil
		}
	}
	return false, fmt.Errorf("%w: endpoint %s changed too often meanwhile", ErrUnavailable, id)
}
