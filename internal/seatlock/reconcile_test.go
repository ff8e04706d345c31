package seatlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/seatlock"
	"seatd/internal/testenv"
)

// TestRebuildKeepsNewerLock: a rebuild writes the locks of the holds
// Postgres had when it was read. A seat released and held again since
// carries a lock with a higher fence, whose transaction may be committing
// right now: the rebuild must keep it. A lock with a lower fence than
// Postgres's is stale and is replaced.
func TestRebuildKeepsNewerLock(t *testing.T) {
	a := testenv.App(t, nil)
	ctx := context.Background()
	l := a.Locks
	org, event := uuid.New(), uuid.New()
	newer, older := seatlock.Seat{ID: uuid.New(), Idx: 0}, seatlock.Seat{ID: uuid.New(), Idx: 1}
	t.Cleanup(func() {
		k := l.Keys(org, event)
		a.Redis.Del(ctx, k.Seat(newer.ID), k.Seat(older.ID), k.Holds(), k.Avail(), k.Fence(), k.Occ())
	})
	now := time.Now()
	until := now.Add(time.Minute)

	// Redis: older seat locked at fence 3, then newer seat at fence 9 (the
	// fence counter is per event and only goes up).
	fresh, stale := uuid.New(), uuid.New()
	for _, c := range []struct {
		seat  seatlock.Seat
		hold  uuid.UUID
		floor int64
	}{{older, stale, 2}, {newer, fresh, 8}} {
		res, err := l.Acquire(ctx, org, event, uuid.New(), []seatlock.Seat{c.seat}, []uuid.UUID{c.hold}, now, until, c.floor)
		if err != nil || !res.OK {
			t.Fatalf("acquire: %+v, %v", res, err)
		}
	}
	// Postgres, as read before those: both seats held at fence 5 by other holds.
	snap := func(s seatlock.Seat) seatlock.SeatState {
		return seatlock.SeatState{Seat: s, Status: "held", Lock: &seatlock.Lock{HoldID: uuid.New(), UserID: uuid.New(),
			Fence: 5, Expires: until, AcquiredAt: now.Add(-time.Hour)}}
	}
	states := []seatlock.SeatState{snap(newer), snap(older)}
	if err := l.Rebuild(ctx, org, event, states, 5, now, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		seat seatlock.Seat
		want uuid.UUID
		why  string
	}{{newer, fresh, "a newer lock (fence above the snapshot's) must survive"},
		{older, states[1].Lock.HoldID, "a lock older than the snapshot must be replaced"}} {
		lk, ok, err := l.Get(ctx, org, event, c.seat.ID)
		if err != nil || !ok {
			t.Fatalf("get: %v, %v", ok, err)
		}
		if lk.HoldID != c.want {
			t.Errorf("%s: lock names hold %s (fence %d), want %s", c.why, lk.HoldID, lk.Fence, c.want)
		}
	}
}
