package hold

// The fast path: an atomic Lua lock on every seat in Redis (with the
// buyer's cap), then the Postgres write that makes the holds true; and
// what it does when the two disagree or a reply is lost
// (docs/architecture.md#the-hold-algorithm).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"seatd/internal/apperr"
	"seatd/internal/pg"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

var errRedisDown = errors.New("redis unavailable")

// holdFast is tier 2 then 3: an atomic Lua lock on every seat (with the
// buyer's cap), then the Postgres write that makes it true. A refusal by
// Redis never reaches Postgres.
func (h *Holds) holdFast(ctx context.Context, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	ids := seatIDsOf(seats)
	proposed := newIDs(len(seats))
	for attempt := 0; ; attempt++ {
		acq, err := call(h.e.redis, func() (seatlock.AcquireResult, error) {
			return h.e.locks.Acquire(ctx, p.Org, p.Event, seatlock.AcquireRequest{User: p.User, Seats: ids, HoldIDs: proposed,
				Now: p.Now, HeldUntil: p.HeldUntil, Floor: ev.fence(), Cap: p.Cap, MaxDelay: h.e.opt.StaleLockAge / 2})
		})
		switch {
		case errors.Is(err, seatlock.ErrCap):
			h.e.m.HoldConflict.WithLabelValues("redis").Inc()
			return Result{}, holdLimit(p.Cap)
		case errors.Is(err, seatlock.ErrNotSynced):
			// Redis lost this event (flushed or restarted): Postgres alone
			// until the follower has synced it again.
			h.e.setSynced(ev, false)
			h.e.wake()
			return Result{}, fmt.Errorf("%w: %w", errRedisDown, err)
		case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
			return Result{}, fmt.Errorf("%w: %w", errRedisDown, err)
		case err != nil:
			// The script may have run with its reply lost, or may still
			// reach Redis (held up by the network, up to StaleLockAge/2
			// late, then Redis refuses it): its locks would name holds that
			// are never written. Check them once it cannot arrive any more,
			// with as long again for delivery to settle.
			for i := range ids {
				ev.doubt(doubtfulLock{seat: ids[i], hold: proposed[i], notBefore: p.Now.Add(h.e.opt.StaleLockAge)})
			}
			return Result{}, fmt.Errorf("%w: %w", errRedisDown, err)
		}
		if !acq.OK {
			h.suspectOrphans(ev, seats, acq)
			h.e.m.HoldConflict.WithLabelValues("redis").Inc()
			taken := make([]uuid.UUID, len(acq.Taken))
			for i, t := range acq.Taken {
				taken[i] = ids[t]
			}
			return Result{}, seatTaken(taken, label)
		}
		p.Seats = make([]store.HoldRequest, len(seats))
		var ours []seatlock.Released
		for i, lk := range acq.Locks {
			// A lock we did not just create is the user's own earlier one:
			// reuse its hold id so Redis and Postgres name the same hold.
			p.Seats[i] = store.HoldRequest{SeatID: ids[i], HoldID: lk.HoldID, Fence: lk.Fence}
			if lk.HoldID == proposed[i] {
				ours = append(ours, seatlock.Released{Seat: ids[i], HoldID: lk.HoldID})
			}
		}
		h.e.m.PGHoldWrites.Inc()
		// The caller going away must not cut the write short: a commit
		// whose reply is lost looks like a failure.
		out, err := h.e.store.Holds.Create(context.WithoutCancel(ctx), p)
		if unknownOutcome(err) {
			// It may have committed: the feed will say. Until then the
			// locks stay, and the follower drops them if it did not.
			h.e.doubt(ev, ours)
		} else if stray := notCreated(ours, out); len(stray) > 0 {
			// A lock this call took that did not become a hold names a
			// hold that will never be written: it goes. When Postgres
			// answered, the seat is synced from it too, since Redis let
			// through what Postgres refused or had under another hold
			// (taken, a hold made without Redis, a lock lost).
			h.e.dropLocks(ctx, ev, stray)
			if err == nil {
				for _, r := range stray {
					ev.recheck.add(r.Seat)
				}
				ev.recheck.add(out.Taken...)
				h.e.wake()
			}
		}
		if err != nil {
			return Result{}, fmt.Errorf("create holds: %w", err)
		}
		if out.NotOnSale {
			return Result{}, errNotOnSale
		}
		if len(out.HeldBack) > 0 && len(out.Taken)+len(out.Stale) == 0 {
			h.e.m.HoldConflict.WithLabelValues("postgres").Inc()
			h.e.wake() // the cached release time lags
			return Result{}, heldBackErr(out.HeldBack[0], out.ReleaseAt, label)
		}
		if len(out.Orphans) > 0 {
			h.e.m.HoldConflict.WithLabelValues("postgres").Inc()
			return Result{}, orphanSeat(out.Orphans, label)
		}
		if len(out.Stale) > 0 && attempt == 0 {
			// Our fences are older than ones Postgres has seen: the Redis
			// counter was lost. Lift the floor above them and try again.
			for _, st := range out.Stale {
				ev.bumpFence(st.Fence)
			}
			proposed = newIDs(len(seats))
			continue
		}
		if stale := unanswered(p.Seats, out); len(stale) > 0 {
			// A seat Postgres neither gave us nor called taken: the lock we
			// reused as the user's own names a hold that has ended (its
			// id exists, so the insert could not use it). Drop that lock
			// and try once more with fresh ids; never answer "held" for it.
			var rs []seatlock.Released
			for _, i := range stale {
				rs = append(rs, seatlock.Released{Seat: ids[i], HoldID: p.Seats[i].HoldID})
			}
			h.e.dropLocks(ctx, ev, rs)
			if attempt == 0 {
				proposed = newIDs(len(seats))
				continue
			}
			taken := make([]uuid.UUID, len(stale))
			for j, i := range stale {
				taken[j] = ids[i]
			}
			return Result{}, seatTaken(taken, label)
		}
		// Holds under locks this call took: Redis has them as Postgres
		// does. (A lock reused from an earlier request may name another
		// held_until: the feed brings that one in line.)
		known := make([]uuid.UUID, 0, len(out.Created))
		for _, hd := range out.Created {
			if slices.ContainsFunc(ours, func(r seatlock.Released) bool { return r.HoldID == hd.ID }) {
				known = append(known, hd.ID)
			}
		}
		return h.finish(ctx, ev, seats, out, p.User, label, known, nil)
	}
}

// suspectOrphans handles Redis refusing seats this process believes are
// free because of locks older than any transaction could run: their
// writers died between lock and commit. The follower checks them against
// Postgres and drops the ones Postgres does not have; this request is
// refused all the same.
func (h *Holds) suspectOrphans(ev *eventState, seats []store.Seat, acq seatlock.AcquireResult) {
	now := h.e.now()
	for j, t := range acq.Taken {
		lk := acq.Locks[j]
		if seats[t].Status != store.Available || lk.HoldID == uuid.Nil || now.Sub(lk.AcquiredAt) < h.e.opt.StaleLockAge {
			continue
		}
		ev.doubt(doubtfulLock{seat: seats[t].ID, hold: lk.HoldID, notBefore: now})
		h.e.wake()
	}
}

// notCreated returns the locks whose hold the outcome did not create.
func notCreated(locks []seatlock.Released, out store.HoldOutcome) []seatlock.Released {
	var stray []seatlock.Released
	for _, r := range locks {
		if !slices.ContainsFunc(out.Created, func(h store.Hold) bool { return h.ID == r.HoldID }) {
			stray = append(stray, r)
		}
	}
	return stray
}

// unknownOutcome reports whether a write that returned err may still have
// committed: its reply was lost (connection reset, timeout) rather than
// Postgres refusing it, which rolls the statement or transaction back.
func unknownOutcome(err error) bool {
	return err != nil && apperr.CodeOf(err) == apperr.Internal && pg.MaybeCommitted(err)
}

// unanswered returns the indexes of requested seats the outcome says
// nothing about.
func unanswered(reqs []store.HoldRequest, out store.HoldOutcome) []int {
	seen := map[uuid.UUID]bool{}
	for _, h := range out.Created {
		seen[h.SeatID] = true
	}
	for _, h := range out.Existing {
		seen[h.SeatID] = true
	}
	for _, id := range slices.Concat(out.Taken, out.Missing, out.HeldBack) {
		seen[id] = true
	}
	for _, st := range out.Stale {
		seen[st.SeatID] = true
	}
	var idx []int
	for i, r := range reqs {
		if !seen[r.SeatID] {
			idx = append(idx, i)
		}
	}
	return idx
}

func seatIDsOf(seats []store.Seat) []uuid.UUID {
	ids := make([]uuid.UUID, len(seats))
	for i, st := range seats {
		ids[i] = st.ID
	}
	return ids
}

func newIDs(n int) []uuid.UUID {
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = store.NewID()
	}
	return ids
}
