package hold

// The Redis tier: the seat locks behind a circuit breaker, which cached
// events' locks are synced with Postgres, and the engine's calls that
// change them outside a hold (drop, doubt, full sync)
// (docs/architecture.md#redis-layout).

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"seatd/internal/seatlock"
	"seatd/internal/store"
	"seatd/internal/telemetry"
)

// redisTier is the Redis half of the registry as one process sees it: the
// locks behind a circuit breaker. Redis is usable while the breaker is
// closed; an event's locks are trusted only once the follower synced them
// (eventState.synced).
type redisTier struct {
	locks   *seatlock.Locks
	breaker *gobreaker.CircuitBreaker[any]
	// unsynced counts cached events whose Redis state is not synced.
	unsynced atomic.Int64
}

func newRedisTier(locks *seatlock.Locks, opt Options, log *slog.Logger, m *telemetry.Metrics, onOpen func()) *redisTier {
	r := &redisTier{locks: locks}
	r.breaker = gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1,
		Timeout:     opt.BreakerOpenFor,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(max(opt.BreakerFailures, 1)) }, // #nosec G115 -- small positive config value
		IsSuccessful: func(err error) bool {
			// A caller giving up is not Redis failing, and neither is an
			// answer Redis gave.
			return err == nil || errors.Is(err, context.Canceled) ||
				errors.Is(err, seatlock.ErrCap) || errors.Is(err, seatlock.ErrNotSynced) || errors.Is(err, seatlock.ErrLate)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			m.BreakerTransitions.WithLabelValues(to.String()).Inc()
			if to == gobreaker.StateOpen {
				m.BreakerOpen.Set(1)
				onOpen()
			}
			if to == gobreaker.StateClosed {
				m.BreakerOpen.Set(0)
			}
			log.Warn("redis breaker", "from", from.String(), "to", to.String())
		},
	})
	return r
}

// usable reports whether Redis calls are being made at all.
func (r *redisTier) usable() bool { return r.breaker.State() == gobreaker.StateClosed }

// call runs a Redis call through the breaker.
func call[T any](r *redisTier, f func() (T, error)) (T, error) {
	var zero T
	v, err := r.breaker.Execute(func() (any, error) { return f() })
	if err != nil {
		return zero, err
	}
	return v.(T), nil
}

// doubt hands locks whose hold may not be in Postgres to the follower.
func (e *Engine) doubt(ev *eventState, rs []seatlock.Released) {
	if len(rs) == 0 {
		return
	}
	now := e.now()
	for _, r := range rs {
		ev.doubt(doubtfulLock{seat: r.Seat, hold: r.HoldID, notBefore: now})
	}
	e.wake()
}

// dropLocks compare-and-deletes Redis locks of holds that ended or were
// never written, so their seats are free in Redis at once. It is only
// that: what it cannot drop, the follower does.
func (e *Engine) dropLocks(ctx context.Context, ev *eventState, rs []seatlock.Released) {
	if len(rs) == 0 {
		return
	}
	if e.redis.usable() {
		_, err := call(e.redis, func() (int, error) {
			return e.locks.Release(context.WithoutCancel(ctx), ev.org, ev.id, rs)
		})
		if err == nil {
			return
		}
		e.log.Warn("drop redis locks", "org", ev.org, "event", ev.id, "err", err)
	}
	// Redis now disagrees with Postgres: the event's locks are not trusted
	// until the follower synced it, which drops these (and checks them,
	// for a write that may never have committed).
	e.setSynced(ev, false)
	e.doubt(ev, rs)
}

// fullSyncFrom makes Redis agree with Postgres for a whole event, from
// Postgres's held seats and highest fence read at one snapshot (a load's,
// or the follower's fullSync): the lock of every held seat, none for the
// seats Redis has that Postgres does not hold (see seatlock.Sync for the
// rule that keeps locks in flight), and a fence counter above every fence
// used. Locks Redis has that Postgres does not know are checked again
// once they are too old to be in flight.
func (e *Engine) fullSyncFrom(ctx context.Context, ev *eventState, held []store.Seat, maxFence int64) error {
	members, err := call(e.redis, func() ([]string, error) { return e.locks.HeldSeats(ctx, ev.org, ev.id) })
	if err != nil {
		return err
	}
	states := make([]seatlock.SeatState, 0, len(held)+len(members))
	inPG := make(map[uuid.UUID]bool, len(held))
	for i := range held {
		states = append(states, lockState(&held[i]))
		inPG[held[i].ID] = true
	}
	var extra []uuid.UUID
	for _, m := range members {
		if id, err := uuid.Parse(m); err == nil && !inPG[id] {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		seats, err := e.store.Events.SeatsByID(ctx, ev.org, ev.id, extra)
		if err != nil {
			return err
		}
		for i := range seats {
			states = append(states, lockState(&seats[i]))
		}
	}
	kept, err := call(e.redis, func() ([]seatlock.Kept, error) {
		return e.locks.Sync(ctx, ev.org, ev.id, states, maxFence, e.now(), e.opt.StaleLockAge, true)
	})
	if err != nil {
		return err
	}
	e.m.RedisSyncs.WithLabelValues("full").Inc()
	e.setSynced(ev, true)
	e.doubtKept(ev, kept)
	return nil
}

// doubtKept hands the locks a sync left in place without Postgres naming
// them to the follower, due once no transaction can still commit them:
// each is in flight, or its writer died, and only the second kind is
// still unknown to Postgres then. Nothing else would look at a dead
// writer's lock again, since no later state of its seat names it.
func (e *Engine) doubtKept(ev *eventState, kept []seatlock.Kept) {
	for _, k := range kept {
		ev.doubt(doubtfulLock{seat: k.Seat, hold: k.Lock.HoldID, notBefore: k.Lock.AcquiredAt.Add(e.opt.StaleLockAge)})
	}
}

// lockState is what Redis should hold for a seat Postgres has as st.
func lockState(st *store.Seat) seatlock.SeatState {
	ls := seatlock.SeatState{ID: st.ID, Version: st.Version, Fence: st.Fence}
	if st.Status == store.Held && st.HoldID != uuid.Nil {
		ls.Lock = &seatlock.Lock{HoldID: st.HoldID, UserID: st.HolderID, Fence: st.Fence, Expires: st.HeldUntil}
	}
	return ls
}
