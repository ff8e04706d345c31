package seatlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/redisconn"
	"seatd/internal/seatlock"
	"seatd/internal/testsvc"
)

// TestCoalescedAcquires: 400 buyers at once on 50 seats, their acquire
// scripts sent in shared pipelines: every seat goes to exactly one buyer,
// every other buyer is told it is taken, nobody gets an error. Then Redis
// forgets its scripts (SCRIPT FLUSH, as after a restart) and a crowd's
// pipelined acquires still run (the script is loaded again).
func TestCoalescedAcquires(t *testing.T) {
	l, rdb := newLocks(t)
	ctx := context.Background()
	org := uuid.New()
	now := time.Now().Truncate(time.Millisecond)
	newEvent := func(n int) (uuid.UUID, []uuid.UUID) { return syncedEvent(t, l, org, n, now) }
	crowd := func(event uuid.UUID, seats []uuid.UUID, buyers int) map[uuid.UUID]int {
		var mu sync.Mutex
		granted := map[uuid.UUID]int{}
		var wg sync.WaitGroup
		for i := range buyers {
			wg.Go(func() {
				seat := seats[i%len(seats)]
				res, err := l.Acquire(ctx, org, event, seatlock.AcquireRequest{User: uuid.New(), Seats: []uuid.UUID{seat},
					HoldIDs: []uuid.UUID{uuid.New()}, Now: time.Now().Truncate(time.Millisecond),
					HeldUntil: now.Add(time.Minute), MaxDelay: time.Minute})
				if err != nil {
					t.Errorf("buyer %d: %v", i, err)
					return
				}
				if !res.OK && (len(res.Taken) != 1 || res.Taken[0] != 0) {
					t.Errorf("buyer %d refused with %+v", i, res)
				}
				if res.OK {
					mu.Lock()
					granted[seat]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return granted
	}

	event, seats := newEvent(50)
	granted := crowd(event, seats, 400)
	for _, s := range seats {
		if granted[s] != 1 {
			t.Errorf("seat %v granted %d times", s, granted[s])
		}
	}

	// The flushed script meets a pipeline: all 100 acquires queue behind
	// paused slots, so they go in pipelines of 64 and 36 whose EVALSHA
	// Redis answers NOSCRIPT.
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	event, seats = newEvent(100)
	queued, resume := l.PauseAcquires()
	result := make(chan map[uuid.UUID]int)
	go func() { result <- crowd(event, seats, 100) }()
	testsvc.Eventually(t, 5*time.Second, "100 acquires queued", func() bool { return queued() == 100 })
	resume()
	if granted := <-result; len(granted) != 100 {
		t.Fatalf("after SCRIPT FLUSH %d of 100 seats granted", len(granted))
	}
}

// TestAcquireFences: fences are drawn for the fresh seats of an acquire
// only, each above the floor, distinct and rising in seat order; a lock
// the buyer already has keeps its own. An acquire of more seats than one
// ZADD of the script takes still lists every seat for expiry.
func TestAcquireFences(t *testing.T) {
	l, _ := newLocks(t)
	ctx := context.Background()
	org, user := uuid.New(), uuid.New()
	now := time.Now().Truncate(time.Millisecond)
	const n = 1500
	event, seats := syncedEvent(t, l, org, n, now)
	acquire := func(ids []uuid.UUID, floor int64) []seatlock.Lock {
		t.Helper()
		holds := make([]uuid.UUID, len(ids))
		for i := range holds {
			holds[i] = uuid.New()
		}
		res, err := l.Acquire(ctx, org, event, seatlock.AcquireRequest{User: user, Seats: ids, HoldIDs: holds,
			Now: now, HeldUntil: now.Add(time.Minute), Floor: floor, MaxDelay: time.Minute})
		if err != nil || !res.OK || len(res.Locks) != len(ids) {
			t.Fatalf("acquire %d seats: %+v, %v", len(ids), res, err)
		}
		return res.Locks
	}

	first := acquire(seats[:2], 0)
	if first[0].Fence != 1 || first[1].Fence != 2 {
		t.Fatalf("first fences %d, %d; want 1, 2", first[0].Fence, first[1].Fence)
	}
	// The counter is below the floor (it was lost): fresh fences start
	// above the floor; the seat already the buyer's keeps its lock.
	big := acquire(append([]uuid.UUID{seats[1]}, seats[2:]...), 500)
	if big[0] != first[1] {
		t.Errorf("own lock changed: %+v, was %+v", big[0], first[1])
	}
	for i, lk := range big[1:] {
		if want := int64(501 + i); lk.Fence != want {
			t.Fatalf("seat %d: fence %d, want %d", i+2, lk.Fence, want)
		}
	}
	// The counter went on from the lifted floor.
	if next := acquire([]uuid.UUID{uuid.New()}, 0); next[0].Fence != int64(500+n-1) {
		t.Errorf("next fence %d, want %d", next[0].Fence, 500+n-1)
	}
	held, err := l.HeldSeats(ctx, org, event)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != n+1 {
		t.Errorf("%d seats listed for expiry, want %d", len(held), n+1)
	}
}

// syncedEvent makes an event of n available seats that Redis is synced
// for, and returns it with its seats.
func syncedEvent(t *testing.T, l *seatlock.Locks, org uuid.UUID, n int, now time.Time) (uuid.UUID, []uuid.UUID) {
	t.Helper()
	event := uuid.New()
	seats := make([]uuid.UUID, n)
	states := make([]seatlock.SeatState, n)
	for i := range seats {
		seats[i] = uuid.New()
		states[i] = seatlock.SeatState{ID: seats[i], Version: 1}
	}
	if _, err := l.Sync(context.Background(), org, event, states, 0, now, 10*time.Second, true); err != nil {
		t.Fatal(err)
	}
	return event, seats
}

// newLocks is the locks of a process on the test Redis, as app builds
// them, and the Redis client under them.
func newLocks(t *testing.T) (*seatlock.Locks, redisconn.Client) {
	t.Helper()
	cfg := testsvc.Config(t)
	rdb, err := redisconn.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	l := seatlock.New(rdb, cfg.KeyPrefix, cfg.LockMargin)
	l.Coalesce(cfg.HoldBatchSlots, cfg.HoldBatchMax)
	return l, rdb
}
