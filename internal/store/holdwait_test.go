package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestShortWaitThroughABusyRow: a hold of several seats on the
// Postgres-only path (ShortWait) meets a seat row that another
// transaction has locked, as a shared hold statement locks its rows for a
// few milliseconds. Locked briefly and left free, the row is waited for
// and the hold granted whole; locked for longer than the short wait, the
// hold is answered taken (nothing written) after the short wait, not the
// pool's longer lock timeout.
func TestShortWaitThroughABusyRow(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	hold := func(ids ...uuid.UUID) (store.HoldOutcome, time.Duration, error) {
		now := time.Now().UTC().Truncate(time.Millisecond)
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api", ShortWait: true}
		for _, id := range ids {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		t0 := time.Now()
		out, err := a.Store.Holds.Create(ctx, p)
		return out, time.Since(t0), err
	}
	// lockRow locks seat's row in a transaction that changes nothing and
	// ends when release is closed.
	lockRow := func(seat uuid.UUID) (release chan struct{}, done chan struct{}) {
		locked := make(chan struct{})
		release, done = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			tx, err := a.Pool.Begin(ctx)
			if err != nil {
				t.Error(err)
				close(locked)
				return
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, `SELECT 1 FROM seats WHERE org_id = $1 AND id = $2 FOR UPDATE`, tn.Org.ID, seat); err != nil {
				t.Error(err)
			}
			close(locked)
			<-release
		}()
		<-locked
		return release, done
	}

	// Locked for 30 ms, as a shared statement would.
	release, done := lockRow(seats[1])
	time.AfterFunc(30*time.Millisecond, func() { close(release) })
	out, took, err := hold(seats[0], seats[1])
	<-done
	if err != nil || len(out.Created) != 2 || len(out.Taken) != 0 {
		t.Fatalf("row locked for 30 ms: %+v %v (after %s); want both seats held", out, err, took)
	}

	// Locked until the hold has its answer.
	release, done = lockRow(seats[3])
	out, took, err = hold(seats[2], seats[3])
	close(release)
	<-done
	if err != nil || len(out.Created) != 0 || len(out.Taken) != 2 {
		t.Errorf("row locked throughout: %+v %v; want the seats answered taken, nothing held", out, err)
	}
	// The pool's own lock timeout is 500 ms; the short wait is 100 ms.
	if took >= 450*time.Millisecond {
		t.Errorf("row locked throughout: answered after %s, want about the short wait (100 ms)", took)
	}
	var active int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, ev.ID).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 2 {
		t.Fatalf("%d active holds, want the first request's 2", active)
	}
	t.Logf("busy row answered taken after %s", took)
}
