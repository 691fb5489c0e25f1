package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// How --webhooks and --changes fit into a run: the endpoints and the rows to
// change are prepared with the keys, the changes are committed during the
// measured load, and the drain follows it (webhooks.go, changes.go).

// checkEvents refuses event flags that do not fit the command line, before
// anything is made.
func (o *benchOptions) checkEvents() error {
	if !o.webhooks && o.changes == 0 {
		return nil
	}
	switch {
	case o.changes < 0:
		return fmt.Errorf("%w: --changes must be 0 or more", errUsage)
	case o.ceiling || o.walkList != "":
		return fmt.Errorf("%w: --webhooks and --changes run with the mix, not with --ceiling or --walk", errUsage)
	case o.changes > 0 && o.database == "":
		return fmt.Errorf("%w: --changes needs --database (the live database the gateway reads)", errUsage)
	case o.webhooks && o.adminToken == "":
		return fmt.Errorf("%w: --webhooks needs --admin-token (it creates the endpoints)", errUsage)
	case o.changesBatch < 1:
		return fmt.Errorf("%w: --changes-batch must be 1 or more", errUsage)
	case o.drainTimeout <= 0 || o.drainQuiet <= 0:
		return fmt.Errorf("%w: --drain-timeout and --drain-quiet must be positive", errUsage)
	}
	return nil
}

// setupEvents starts the receiver and creates the endpoints (--webhooks),
// and picks the rows to change (--changes).
func (b *bencher) setupEvents(ctx context.Context) error {
	if b.o.webhooks {
		r, err := startReceiver(b.o.receiverAddr)
		if err != nil {
			return err
		}
		b.recv = r
		if err := b.createEndpoints(ctx); err != nil {
			return err
		}
	}
	if b.o.changes <= 0 {
		return nil
	}
	conn, err := pgx.Connect(ctx, b.o.database)
	if err != nil {
		return fmt.Errorf("changes: database: %w", err)
	}
	defer conn.Close(context.Background())
	ids := make([]string, len(b.companies))
	for i, c := range b.companies {
		ids[i] = c.id
	}
	if b.changes, err = pickChanges(ctx, conn, ids, b.o.changes); err != nil {
		return fmt.Errorf("changes: %w", err)
	}
	fmt.Fprintf(b.out, "changes: %d to commit during the load, in %d companies: %s\n", b.changes.plan.total(), len(ids), b.changes.plan)
	return nil
}

// startChanges commits the changes in the background; the channel closes
// when they are done (at once without --changes).
func (b *bencher) startChanges(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	if b.changes == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		b.changes.run(ctx, b.o.database, b.o.changesBatch)
	}()
	return done
}

// afterLoad waits for the changes, reports them, then drains the events.
func (b *bencher) afterLoad(ctx context.Context, changed <-chan struct{}) error {
	<-changed
	changes := 0
	if b.changes != nil {
		b.changes.print(b)
		if b.changes.err != nil {
			return b.changes.err
		}
		changes = b.changes.done.total()
	}
	if b.recv == nil {
		return nil
	}
	return b.drain(ctx, changes, int(b.loadCreated.Load()))
}
