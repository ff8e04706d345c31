package seatlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/seatlock"
)

// lockOf returns the hold id of a seat's lock, or uuid.Nil.
func lockOf(t *testing.T, l *seatlock.Locks, org, event, seat uuid.UUID) uuid.UUID {
	t.Helper()
	lk, ok, err := l.Get(context.Background(), org, event, seat)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return uuid.Nil
	}
	return lk.HoldID
}

// TestSyncRules: Redis follows Postgres seat by seat, by version and fence.
func TestSyncRules(t *testing.T) {
	l, rdb := newLocks(t)
	ctx := context.Background()
	org, event := uuid.New(), uuid.New()
	seat := uuid.New()
	now := time.Now().Truncate(time.Millisecond)
	held := func(version, fence int64, hold uuid.UUID) seatlock.SeatState {
		return seatlock.SeatState{ID: seat, Version: version, Fence: fence,
			Lock: &seatlock.Lock{HoldID: hold, UserID: uuid.New(), Fence: fence, Expires: now.Add(time.Minute)}}
	}
	free := func(version, fence int64) seatlock.SeatState {
		return seatlock.SeatState{ID: seat, Version: version, Fence: fence}
	}
	// syncKept syncs one state and returns the locks it kept unnamed.
	syncKept := func(full bool, st seatlock.SeatState) ([]seatlock.Kept, error) {
		kept, err := l.Sync(ctx, org, event, []seatlock.SeatState{st}, st.Fence, now, 10*time.Second, full)
		return kept, err
	}
	sync := func(full bool, st seatlock.SeatState) error {
		_, err := syncKept(full, st)
		return err
	}
	// keptOnly checks that a sync kept exactly the lock of hold.
	keptOnly := func(what string, kept []seatlock.Kept, hold uuid.UUID) {
		t.Helper()
		if len(kept) != 1 || kept[0].Seat != seat || kept[0].Lock.HoldID != hold || kept[0].Lock.AcquiredAt.IsZero() {
			t.Fatalf("%s: kept %+v, want the lock of hold %s", what, kept, hold)
		}
	}
	acquire := func(at time.Time, maxDelay time.Duration) (uuid.UUID, error) {
		id := uuid.New()
		res, err := l.Acquire(ctx, org, event, seatlock.AcquireRequest{User: uuid.New(), Seats: []uuid.UUID{seat},
			HoldIDs: []uuid.UUID{id}, Now: at, HeldUntil: at.Add(time.Minute), MaxDelay: maxDelay})
		if err == nil && !res.OK {
			return uuid.Nil, errors.New("taken")
		}
		return id, err
	}

	// Before a full sync the event's locks are not trusted.
	if _, err := acquire(now, time.Minute); !errors.Is(err, seatlock.ErrNotSynced) {
		t.Fatalf("acquire before any sync: %v, want ErrNotSynced", err)
	}
	if err := sync(false, free(1, 0)); !errors.Is(err, seatlock.ErrNotSynced) {
		t.Fatalf("incremental sync before a full one: %v, want ErrNotSynced", err)
	}
	h1 := uuid.New()
	if kept, err := syncKept(true, held(2, 1, h1)); err != nil || len(kept) != 0 {
		t.Fatalf("full sync of a held seat: kept %+v, %v; want none (the state names its lock)", kept, err)
	}
	if got := lockOf(t, l, org, event, seat); got != h1 {
		t.Fatalf("after a full sync of a held seat: lock %s, want %s", got, h1)
	}
	// The hold ends (version 3); a sync read before that (version 2, of
	// another hold) arriving late changes nothing.
	if err := sync(false, free(3, 1)); err != nil {
		t.Fatal(err)
	}
	if err := sync(false, held(2, 1, uuid.New())); err != nil {
		t.Fatal(err)
	}
	if got := lockOf(t, l, org, event, seat); got != uuid.Nil {
		t.Fatalf("a late sync of an older state brought back lock %s", got)
	}
	// A lock taken after Postgres's state (fence above it) and young is in
	// flight: a sync of the older state leaves it.
	inFlight, err := acquire(now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Either way the sync tells which lock it kept, for the caller to
	// check once it can no longer be in flight: nothing else would.
	kept, err := syncKept(false, free(4, 1))
	if err != nil {
		t.Fatal(err)
	}
	keptOnly("a sync of an older state", kept, inFlight)
	if got := lockOf(t, l, org, event, seat); got != inFlight {
		t.Fatalf("a lock in flight was dropped (lock %s)", got)
	}
	// A state already applied (version 3) leaves it too, and says so.
	kept, err = syncKept(false, free(3, 1))
	if err != nil {
		t.Fatal(err)
	}
	keptOnly("a sync of a state already applied", kept, inFlight)
	// Once it is older than a transaction can run, it goes.
	if kept, err := l.Sync(ctx, org, event, []seatlock.SeatState{free(5, 1)}, 1, now.Add(time.Minute), 10*time.Second, false); err != nil || len(kept) != 0 {
		t.Fatalf("sync after the lock aged: kept %+v, %v; want it dropped", kept, err)
	}
	if got := lockOf(t, l, org, event, seat); got != uuid.Nil {
		t.Fatalf("an orphaned lock survived (lock %s)", got)
	}
	// A request that reaches Redis long after it was made is refused.
	if _, err := acquire(now.Add(-time.Minute), 10*time.Second); !errors.Is(err, seatlock.ErrLate) {
		t.Fatalf("late acquire: %v, want ErrLate", err)
	}
	if got := lockOf(t, l, org, event, seat); got != uuid.Nil {
		t.Fatalf("a late acquire left lock %s", got)
	}
	// A hold ended by its process (compare-and-delete with the seat's new
	// version): a sync read while it was still held, arriving after, does
	// not bring its lock back.
	h2 := uuid.New()
	if err := sync(false, held(6, 2, h2)); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Release(ctx, org, event, []seatlock.Released{{Seat: seat, HoldID: h2, Version: 7}}); err != nil || n != 1 {
		t.Fatalf("release: %d %v", n, err)
	}
	if err := sync(false, held(6, 2, h2)); err != nil {
		t.Fatal(err)
	}
	if got := lockOf(t, l, org, event, seat); got != uuid.Nil {
		t.Fatalf("a sync older than the release brought back lock %s", got)
	}
	// A flushed Redis forgets the event: the fast path stops trusting it.
	if err := rdb.Del(ctx, l.Keys(org, event).Synced()).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := acquire(time.Now(), time.Minute); !errors.Is(err, seatlock.ErrNotSynced) {
		t.Fatalf("acquire after a flush: %v, want ErrNotSynced", err)
	}
}
