package audit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/redisscan"
	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The upgrade from the layout of earlier versions, which kept each
// company's log in a Redis stream: the key prefix + "{company}", entries
// "ms-k" with the fields time (Unix ms), actor, action, and when set key,
// webhook, before, after. Each entry is copied into the database with its
// id (seq = ms×1000 + k, so ids and the order of reading stay as they
// were), then deleted from the stream, and the stream once empty. Entries
// past the retention are deleted without being copied.
//
// Several instances may upgrade at once: an entry is identified by its
// id, so one copied twice is kept once, and each deletes only what it has
// copied. An entry recorded meanwhile by an instance of the earlier
// version stays in its stream until the next upgrade (serve's start, or
// `gateway history migrate`).

// Upgraded is what an UpgradeFromRedis found and did.
type Upgraded struct {
	Streams int `json:"companies"` // companies' streams found
	Copied  int `json:"copied"`    // entries added to the database
	Present int `json:"present"`   // entries the database had already (copied before, or by another instance)
	Expired int `json:"expired"`   // entries past the retention, deleted without being copied
	// Kept is entries the log could not have made (a field it does not
	// know, a secret's shape): left in their stream, for an operator.
	Kept int `json:"kept"`
}

// upgradeChunk is how many entries of a stream are read, copied and
// deleted at a time.
const upgradeChunk = 500

// dropCopied deletes from a stream (KEYS[1]) the entries ARGV names, and
// the stream once it is empty.
var dropCopied = redis.NewScript(`
if #ARGV > 0 then redis.call('XDEL', KEYS[1], unpack(ARGV)) end
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('XLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1]) end
return 1`)

// UpgradeFromRedis copies the companies' streams found in rdb under
// prefix (the earlier layout's "audit:" after the deployment's
// redisPrefix) into the database, and deletes them from Redis.
func (l *Log) UpgradeFromRedis(ctx context.Context, rdb redis.UniversalClient, prefix string) (Upgraded, error) {
	var u Upgraded
	if err := l.usable(); err != nil {
		return u, err
	}
	names, err := redisscan.Keys(ctx, rdb, prefix+"{*}")
	if err != nil {
		return u, fmt.Errorf("%w: Redis: %w", ErrUnavailable, err)
	}
	for _, n := range names {
		company := strings.TrimSuffix(strings.TrimPrefix(n, prefix+"{"), "}")
		if c, ok := invoicing.CanonicalUUID(company); !ok || c != company || n != prefix+"{"+company+"}" {
			continue // not a company's stream
		}
		u.Streams++
		if err := l.upgradeStream(ctx, rdb, n, company, &u); err != nil {
			return u, err
		}
	}
	return u, nil
}

// upgradeStream copies one company's stream, a chunk at a time: each
// chunk committed to the database before it is deleted from Redis, so
// that a stop half way loses nothing (the next run finds the rest, and
// what it copies again is kept once).
func (l *Log) upgradeStream(ctx context.Context, rdb redis.UniversalClient, key, company string, u *Upgraded) error {
	start := "-"
	for {
		msgs, err := rdb.XRangeN(ctx, key, start, "+", upgradeChunk).Result()
		if err != nil {
			return fmt.Errorf("%w: Redis: %w", ErrUnavailable, err)
		}
		oldest := l.oldest(l.now()) * perMs
		var rows []row
		var done []any
		var top int64
		for _, m := range msgs {
			rec := EntryRecord{ID: m.ID, Fields: make(map[string]string, len(m.Values))}
			for k, v := range m.Values {
				rec.Fields[k], _ = v.(string)
			}
			r, ok := rec.row(company)
			switch {
			case !ok || rec.check(company) != nil:
				u.Kept++
				continue
			case r.seq < oldest:
				u.Expired++
			default:
				rows = append(rows, r)
				top = max(top, r.seq)
			}
			done = append(done, m.ID)
		}
		if len(rows) > 0 {
			added, err := l.copyRows(ctx, company, rows, top)
			if err != nil {
				return err
			}
			u.Copied += int(added)
			u.Present += len(rows) - int(added)
		}
		if err := dropCopied.Run(ctx, rdb, []string{key}, done...).Err(); err != nil {
			return fmt.Errorf("%w: Redis: %w", ErrUnavailable, err)
		}
		if len(msgs) < upgradeChunk {
			return nil
		}
		start = after(msgs[len(msgs)-1].ID)
	}
}

// copyRows adds a company's rows to the database in one transaction.
func (l *Log) copyRows(ctx context.Context, company string, rows []row, top int64) (int64, error) {
	if err := l.ensureUpTo(ctx, top); err != nil {
		return 0, fail(err)
	}
	var added int64
	err := l.db.Tx(ctx, func(q sqldb.Querier) (err error) {
		added, err = insertGiven(ctx, q, company, rows)
		return err
	})
	return added, fail(err)
}

// after is the first stream id after id ("ms-k" → "ms-(k+1)").
func after(id string) string {
	ms, k, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseUint(k, 10, 64)
	return ms + "-" + strconv.FormatUint(n+1, 10)
}
