package hold

// The follower's half of keeping Redis in line with Postgres: after each
// round's feed, the changed seats, a full sync of an event Redis lost,
// the seats found to disagree, and the doubtful locks that are due
// (docs/architecture.md#redis-layout).

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// probeRedis pings Redis through the breaker, so that an idle process
// notices it was cut off, and a process whose breaker opened notices
// Redis is back.
func (f *Follower) probeRedis(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, _ = call(f.e.redis, func() (struct{}, error) { return struct{}{}, f.e.locks.Ping(pctx) })
}

// syncRedis brings an event's Redis locks in line with what the round
// read: the changed seats for a synced event, everything for one that is
// not (just loaded, or Redis failed or lost it since), then the doubtful
// locks that are due. Reports whether it called Redis.
func (f *Follower) syncRedis(ctx context.Context, ev *eventState, cs []store.Change) bool {
	called := false
	if !ev.synced.Load() {
		called = true
		if err := f.fullSync(ctx, ev); err != nil {
			if ctx.Err() == nil {
				f.e.log.Warn("sync redis from postgres", "org", ev.org, "event", ev.id, "err", err)
				f.e.m.BackgroundErrors.WithLabelValues("redis_sync").Inc()
			}
			return true
		}
	} else if len(cs) > 0 {
		called = true
		seats := make([]store.Seat, len(cs))
		for i := range cs {
			seats[i] = cs[i].Seat
		}
		if !f.syncSeats(ctx, ev, seats) {
			return true
		}
	}
	called = f.syncRecheck(ctx, ev) || called
	return f.dropDoubtful(ctx, ev) || called
}

// syncRecheck syncs the seats found to disagree with Postgres, and
// reports whether it called Redis.
func (f *Follower) syncRecheck(ctx context.Context, ev *eventState) bool {
	ids := ev.recheck.take()
	if len(ids) == 0 || !ev.synced.Load() {
		return false // a full sync covers them
	}
	seats, err := f.e.store.Events.SeatsByID(ctx, ev.org, ev.id, ids)
	if err != nil {
		ev.recheck.add(ids...)
		return false
	}
	f.syncSeats(ctx, ev, seats)
	return true
}

// syncSeats makes Redis agree with these seats as Postgres has them, and
// reports whether it could; if not, the event needs a full sync (Redis
// lost it, or did not take these changes).
func (f *Follower) syncSeats(ctx context.Context, ev *eventState, seats []store.Seat) bool {
	states := make([]seatlock.SeatState, len(seats))
	var maxFence int64
	for i := range seats {
		states[i] = lockState(&seats[i])
		maxFence = max(maxFence, seats[i].Fence)
	}
	kept, err := call(f.e.redis, func() ([]seatlock.Kept, error) {
		return f.e.locks.Sync(ctx, ev.org, ev.id, states, maxFence, f.e.now(), f.e.opt.StaleLockAge, false)
	})
	f.e.m.RedisSyncs.WithLabelValues("incremental").Inc()
	if err != nil {
		f.e.setSynced(ev, false)
		if !errors.Is(err, seatlock.ErrNotSynced) {
			f.e.m.BackgroundErrors.WithLabelValues("redis_sync").Inc()
		}
		return false
	}
	f.e.doubtKept(ev, kept)
	return true
}

// fullSync makes Redis agree with Postgres for a whole event: the lock of
// every held seat, none for the seats Redis has that Postgres does not
// hold (see seatlock.Sync for the rule that keeps locks in flight), and a
// fence counter above every fence used. Locks Redis has that Postgres
// does not know are checked again once they are too old to be in flight.
func (f *Follower) fullSync(ctx context.Context, ev *eventState) error {
	held, maxFence, _, err := f.e.store.Feed.HeldState(ctx, ev.org, ev.id)
	if err != nil {
		return err
	}
	return f.e.fullSyncFrom(ctx, ev, held, maxFence)
}

// dropDoubtful drops the due doubtful locks whose hold Postgres does not
// have as active. A hold that commits after all (its reply was lost, and
// Postgres finished it later) comes back through the feed.
func (f *Follower) dropDoubtful(ctx context.Context, ev *eventState) bool {
	due := ev.due(f.e.now())
	if len(due) == 0 {
		return false
	}
	ids := make([]uuid.UUID, len(due))
	for i, d := range due {
		ids[i] = d.hold
	}
	active, err := f.e.store.Holds.ActiveIDs(ctx, ev.org, ids)
	if err != nil {
		ev.doubt(due...)
		return false
	}
	var rs []seatlock.Released
	for _, d := range due {
		if !active[d.hold] {
			rs = append(rs, seatlock.Released{Seat: d.seat, HoldID: d.hold})
		}
	}
	if _, err := call(f.e.redis, func() (int, error) { return f.e.locks.Release(ctx, ev.org, ev.id, rs) }); err != nil {
		ev.doubt(due...)
		return true
	}
	// A dropped lock may have kept the seat's own hold out of Redis: a
	// sync leaves a young lock that is newer than Postgres's state alone
	// (its write may be committing), so a hold made without Redis on that
	// seat meanwhile (on the Postgres-only path, after this lock's reply
	// was lost) was not written. Those seats are read from Postgres again.
	if len(rs) > 0 {
		for _, r := range rs {
			ev.recheck.add(r.Seat)
		}
		f.e.wake()
	}
	return true
}
