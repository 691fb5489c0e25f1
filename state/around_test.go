package state_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/state"
)

// outside is a plan that writes a Redis key and, around the import's Redis
// writes, a "transaction" of its own: it records whether it committed, and
// may fail to begin or to commit.
type outside struct {
	key                   string
	failBegin, failCommit bool
	committed, rolledBack bool
	order                 *[]string
}

func (o *outside) Counts() (int, int, int) { return 1, 0, 0 }

func (o *outside) Queue(ctx context.Context, phase int, p redis.Pipeliner) {
	if phase == 0 {
		p.Set(ctx, o.key, "1", 0)
	}
}

func (o *outside) Around(ctx context.Context, write func(context.Context) error) error {
	if o.failBegin {
		return errors.New("the database did not answer")
	}
	*o.order = append(*o.order, "begin "+o.key)
	if err := write(ctx); err != nil {
		o.rolledBack = true
		return err
	}
	if o.failCommit {
		o.rolledBack = true
		return errors.New("the commit failed")
	}
	o.committed = true
	*o.order = append(*o.order, "commit "+o.key)
	return nil
}

// What is written outside Redis is committed if and only if the Redis
// writes are made: rolled back when they fail, never begun before them;
// a commit that fails after them is told apart (ErrNotAudited).
func TestWritesAroundRedis(t *testing.T) {
	t.Parallel()
	rdb, mr := testenv.Miniredis(t)
	ctx := context.Background()
	run := func(plans ...*outside) (map[string]state.Counts, error) {
		var parts []state.Part
		for _, p := range plans {
			parts = append(parts, state.Part{Name: p.key, ImportOnly: true,
				Plan: func(context.Context, json.RawMessage) (state.Plan, error) { return p, nil }})
		}
		doc := state.Document{Parts: map[string]json.RawMessage{}}
		for _, p := range plans {
			doc.Parts[p.key] = json.RawMessage("{}")
		}
		return state.Import(ctx, state.Config{Redis: rdb, Parts: parts}, doc)
	}
	var order []string
	a, b := &outside{key: "a", order: &order}, &outside{key: "b", order: &order}
	if _, err := run(a, b); err != nil || !a.committed || !b.committed || mr.Exists("a") != true || mr.Exists("b") != true {
		t.Fatalf("an import: %v, committed %v %v", err, a.committed, b.committed)
	}
	if got := order; len(got) != 4 || got[0] != "begin a" || got[1] != "begin b" || got[2] != "commit b" || got[3] != "commit a" {
		t.Errorf("the transactions were not nested around the Redis writes: %v", got)
	}

	mr.FlushAll()
	c := &outside{key: "c", failCommit: true, order: &order}
	if _, err := run(c); !errors.Is(err, state.ErrNotAudited) || !mr.Exists("c") {
		t.Errorf("a commit that fails after the Redis writes: %v (written %v)", err, mr.Exists("c"))
	}

	d := &outside{key: "d", failBegin: true, order: &order}
	if _, err := run(d); !errors.Is(err, state.ErrNotWritten) || mr.Exists("d") {
		t.Errorf("a transaction that cannot begin: %v (written %v)", err, mr.Exists("d"))
	}

	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + testenv.ClosedPort(t), MaxRetries: -1})
	defer down.Close()
	e := &outside{key: "e", order: &order}
	_, err := state.Import(ctx, state.Config{Redis: down, Parts: []state.Part{{Name: "e", ImportOnly: true,
		Plan: func(context.Context, json.RawMessage) (state.Plan, error) { return e, nil }}}},
		state.Document{Parts: map[string]json.RawMessage{"e": json.RawMessage("{}")}})
	if !errors.Is(err, state.ErrNotWritten) || e.committed || !e.rolledBack {
		t.Errorf("Redis writes that fail: %v, committed %v, rolled back %v", err, e.committed, e.rolledBack)
	}
}
