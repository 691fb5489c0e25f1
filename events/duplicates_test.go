package events

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// How many events are delivered twice after Redis goes back in time, and
// which: the figures docs/operators.md gives ("What survives what"). Each
// case makes 300 client.created events in three batches of 100, every one
// delivered before the next batch: the first before the snapshot or the
// export, the second after it and before the loss, the third after the
// restore. None may be lost; an event is delivered again only if the
// restored Redis cannot know it was delivered.
func TestDuplicatesAfterRestore(t *testing.T) {
	t.Parallel()
	t.Run("snapshot", func(t *testing.T) {
		srv := testenv.StartRedisServerWith(t, 0)
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = rdb.Close() })
		e := newEnvOn(t, rdb, "dup:")
		s := e.service(e.config())
		ep, _ := e.endpoint(s)
		e.run(s)
		e.batch(s, ep.ID, 1)
		if err := rdb.Save(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		e.batch(s, ep.ID, 2)
		srv.Restart() // from the snapshot: what came after it is lost
		e.batch(s, ep.ID, 3)
		e.duplicates(s, ep.ID, "snapshot", 2)
	})
	t.Run("export-import", func(t *testing.T) {
		e := newEnv(t)
		cfg := e.config()
		cfg.Sweep, cfg.Retention = time.Hour, 2*time.Hour // the sweep's window holds every batch
		s := e.service(cfg)
		ep, _ := e.endpoint(s)
		e.run(s)
		e.batch(s, ep.ID, 1)
		exported, err := s.ExportState(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		e.batch(s, ep.ID, 2)
		if e.loseState(context.Background()) == 0 {
			t.Fatal("nothing lost")
		}
		// At once: the sweep, which reads back an hour, sends nothing of
		// before the export's resume point again.
		importState(t, s, exported)
		e.batch(s, ep.ID, 3)
		e.sweepNow(s, cfg.Settle)
		e.duplicates(s, ep.ID, "export-import", 2)
	})
}

const batchSize = 100

// batchClient is the id of the i-th client (from 0) of batch b (from 1).
func batchClient(b, i int) string { return fmt.Sprintf("11000000-0000-4000-8000-%06d%06d", b, i) }

// batch inserts batch b's clients and waits until each was delivered and
// its delivery recorded so.
func (e *env) batch(s *Service, ep string, b int) {
	e.t.Helper()
	e.exec(`INSERT INTO customers (id, company_id, name, created_at, updated_at)
SELECT ('11000000-0000-4000-8000-' || lpad($2::text, 6, '0') || lpad(g::text, 6, '0'))::uuid, $1, 'Cliente ' || g, now(), now()
FROM generate_series(0, $3::int - 1) g`, e.company, strconv.Itoa(b), batchSize)
	for i := range batchSize {
		waitDelivery(e.t, s, ep, e.recv, key{ClientCreated, batchClient(b, i)}, "delivered")
	}
}

// duplicates waits until the endpoint has nothing pending, then counts the
// events delivered more than once, by batch; only those of batch again may
// be. It logs the figures.
func (e *env) duplicates(s *Service, ep, what string, again int) {
	e.t.Helper()
	testenv.Eventually(e.t, "no delivery pending", func() error {
		pending, _, err := s.Deliveries(context.Background(), ep, DeliveryQuery{State: "pending", Limit: MaxDeliveriesPage})
		if err != nil {
			return err
		}
		return testenv.Want(len(pending), 0, "deliveries pending")
	})
	ok := map[string]int{}
	for _, d := range e.recv.deliveries() {
		if d.status == http.StatusOK {
			ok[d.id]++
		}
	}
	byBatch := map[int]int{}
	total, lost := 0, 0
	for b := 1; b <= 3; b++ {
		for i := range batchSize {
			switch n := ok[batchClient(b, i)]; {
			case n == 0:
				lost++
			case n > 1:
				byBatch[b] += n - 1
				total += n - 1
			}
		}
	}
	e.t.Logf("%s: %d events, %d lost, %d delivered twice (%d %%): %d of the first batch, %d of the second, %d of the third",
		what, 3*batchSize, lost, total, 100*total/(3*batchSize), byBatch[1], byBatch[2], byBatch[3])
	if lost != 0 {
		e.t.Errorf("%d events lost", lost)
	}
	for b, n := range byBatch {
		if b != again && n > 0 {
			e.t.Errorf("%d events of batch %d delivered twice: only those delivered after the %s may be", n, b, what)
		}
	}
}
