package hold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// Result is the answer to a hold request.
type Result struct {
	// Holds has one active hold per requested seat, in request order.
	Holds []store.Hold
	// Created is true when at least one hold is new (201); false when the
	// user already held every seat (an idempotent 200).
	Created bool
}

func seatTaken(ids []uuid.UUID, label func(uuid.UUID) string) error {
	e := &apperr.Error{Code: apperr.SeatTaken}
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		e.Seats = append(e.Seats, id.String())
		names = append(names, label(id))
	}
	if len(names) == 1 {
		e.Message = fmt.Sprintf("seat %s was just taken by someone else", names[0])
	} else {
		e.Message = fmt.Sprintf("seats %v were just taken by someone else", names)
	}
	return e
}

// Hold holds seats of an event for the actor: all of them or none.
func (s *Service) Hold(ctx context.Context, a Actor, event uuid.UUID, seatIDs []uuid.UUID, source string) (Result, error) {
	start := s.now()
	s.m.HoldAttempt.Inc()
	res, path, err := s.hold(ctx, a, event, seatIDs, source)
	switch {
	case err == nil && res.Created:
		s.m.HoldSuccess.WithLabelValues(path).Inc()
	case err == nil:
		s.m.HoldSuccess.WithLabelValues("idempotent").Inc()
	case apperr.CodeOf(err) == apperr.Internal:
		s.m.HoldError.Inc()
		s.log.Error("hold failed", "org", a.Org, "event", event, "user", a.User, "path", path, "err", err)
	}
	s.m.HoldDuration.WithLabelValues(path).Observe(s.now().Sub(start).Seconds())
	return res, err
}

func (s *Service) hold(ctx context.Context, a Actor, event uuid.UUID, seatIDs []uuid.UUID, source string) (Result, string, error) {
	if a.Role != RoleBuyer && a.Role != RoleBoxOffice && a.Role != RoleOrganizer {
		return Result{}, "hot", apperr.E(apperr.Forbidden, "this account cannot hold seats")
	}
	if len(seatIDs) == 0 || len(seatIDs) > s.opt.MaxSeatsPerRequest {
		return Result{}, "hot", &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("hold between 1 and %d seats at once", s.opt.MaxSeatsPerRequest),
			Fields:  map[string]string{"seat_ids": "must list 1 to " + fmt.Sprint(s.opt.MaxSeatsPerRequest) + " seats"}}
	}
	if seen := map[uuid.UUID]bool{}; true {
		for _, id := range seatIDs {
			if seen[id] {
				return Result{}, "hot", &apperr.Error{Code: apperr.Invalid, Message: "a seat is listed twice",
					Fields: map[string]string{"seat_ids": "must not repeat a seat"}}
			}
			seen[id] = true
		}
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Result{}, "hot", err
	}
	now := s.now().Truncate(time.Millisecond)

	// Tier 1, the hot cache: refuse at once what is visibly taken, and
	// answer a repeated request from what we already know.
	seats := make([]store.Seat, len(seatIDs))
	var taken []uuid.UUID
	mine := 0
	for i, id := range seatIDs {
		st, ok := ev.seat(id)
		if !ok {
			return Result{}, "hot", apperr.E(apperr.NotFound, "seat not found in this event")
		}
		seats[i] = st
		switch {
		case st.Status == store.Held && st.HolderID == a.User && st.HeldUntil.After(now):
			mine++
		case st.Status == store.Held && st.HeldUntil.After(now), st.Status == store.Sold, st.Status == store.Blocked:
			taken = append(taken, id)
		}
	}
	label := func(id uuid.UUID) string { return s.seatLabel(ev, id) }
	if len(taken) > 0 {
		s.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, "hot", seatTaken(taken, label)
	}
	if mine == len(seats) {
		// The cache may not have heard yet that one of these holds ended
		// (released through another process, expired, or this process is
		// cut off from Redis). A refusal from a stale cache only costs a
		// retry, but an idempotent answer vouches for a hold, so it is
		// confirmed in Postgres first; if it cannot be, the request takes
		// the normal path.
		if holds, ok := s.confirmMine(ctx, a, event, seats); ok {
			return Result{Holds: holds}, "hot", nil
		}
		mine = 0
	}
	if a.Role == RoleBuyer && ev.holdsOf(a.User)+len(seats)-mine > s.opt.MaxHoldsPerBuyer {
		return Result{}, "hot", &apperr.Error{Code: apperr.HoldLimit,
			Message: fmt.Sprintf("you can hold at most %d seats for this event", s.opt.MaxHoldsPerBuyer)}
	}

	p := store.HoldParams{Org: a.Org, Event: event, User: a.User, Now: now, HeldUntil: now.Add(s.opt.HoldTTL), Source: source}
	if s.FastPath() {
		res, err := s.holdFast(ctx, a, ev, seats, p, label)
		if !errors.Is(err, errRedisDown) {
			return res, "fast", err
		}
		s.log.Warn("redis unavailable, holding through postgres", "org", a.Org, "event", event)
	}
	s.m.RedisFallback.Inc()
	res, err := s.holdFallback(ctx, a, ev, seats, p, label)
	return res, "fallback", err
}

// confirmMine returns the actor's active holds on seats, as Postgres has
// them, if it holds every one of them under the hold id the cache names.
func (s *Service) confirmMine(ctx context.Context, a Actor, event uuid.UUID, seats []store.Seat) ([]store.Hold, bool) {
	active, err := s.store.UserHolds(ctx, a.Org, event, a.User)
	if err != nil {
		return nil, false
	}
	byID := make(map[uuid.UUID]store.Hold, len(active))
	for _, h := range active {
		byID[h.ID] = h
	}
	now := s.now()
	holds := make([]store.Hold, len(seats))
	for i, st := range seats {
		h, ok := byID[st.HoldID]
		if !ok || h.SeatID != st.ID || !h.HeldUntil.After(now) {
			return nil, false
		}
		h.SeatVersion = st.Version
		holds[i] = h
	}
	return holds, true
}

var errRedisDown = errors.New("redis unavailable")

// holdFast is tier 2 then 3: an atomic Lua lock on every seat, then the
// Postgres write that makes it true. A refusal by Redis never reaches
// Postgres.
func (s *Service) holdFast(ctx context.Context, a Actor, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	ls := make([]seatlock.Seat, len(seats))
	proposed := make([]uuid.UUID, len(seats))
	for i, st := range seats {
		ls[i] = seatlock.Seat{ID: st.ID, Idx: st.Idx}
		proposed[i] = uuid.New()
	}
	for attempt := 0; ; attempt++ {
		acq, err := redisCall(s, func() (seatlock.AcquireResult, error) {
			return s.locks.Acquire(ctx, p.Org, p.Event, p.User, ls, proposed, p.Now, p.HeldUntil, ev.fence())
		})
		if err != nil {
			return Result{}, fmt.Errorf("%w: %w", errRedisDown, err)
		}
		if !acq.OK {
			if attempt == 0 && s.clearOrphans(ctx, ev, seats, acq) {
				continue
			}
			s.m.HoldConflict.WithLabelValues("redis").Inc()
			ids := make([]uuid.UUID, len(acq.Taken))
			for i, t := range acq.Taken {
				ids[i] = seats[t].ID
			}
			return Result{}, seatTaken(ids, label)
		}
		p.Seats = make([]store.HoldRequest, len(seats))
		var ours []seatlock.Released
		for i, lk := range acq.Locks {
			// A lock we did not just create is the user's own earlier one:
			// reuse its hold id so Redis and Postgres name the same hold.
			p.Seats[i] = store.HoldRequest{SeatID: seats[i].ID, HoldID: lk.HoldID, Fence: lk.Fence}
			if lk.HoldID == proposed[i] {
				ours = append(ours, seatlock.Released{Seat: ls[i], HoldID: lk.HoldID, Free: true})
			}
		}
		p.Locked = true
		s.m.PGHoldWrites.Inc()
		// The caller going away must not cut the write short: a commit
		// whose reply is lost looks like a failure (see settle).
		out, err := s.store.CreateHolds(context.WithoutCancel(ctx), p)
		if err != nil || len(out.Taken)+len(out.Missing)+len(out.Stale) > 0 {
			// Nothing was committed (or, if the outcome is unknown, settle
			// puts the locks back): give back the locks this call took.
			s.dropLocks(ctx, p.Org, p.Event, ours)
		}
		if err != nil {
			s.settleIfUnknown(err, p.Org, p.Event, seatIDsOf(seats), nil)
			return Result{}, fmt.Errorf("create holds: %w", err)
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
				rs = append(rs, seatlock.Released{Seat: ls[i], HoldID: p.Seats[i].HoldID, Free: true})
			}
			s.dropLocks(ctx, p.Org, p.Event, rs)
			if attempt == 0 {
				proposed = newIDs(len(seats))
				continue
			}
			ids := make([]uuid.UUID, len(stale))
			for j, i := range stale {
				ids[j] = seats[i].ID
			}
			return Result{}, seatTaken(ids, label)
		}
		return s.finish(ctx, a, ev, seats, out, label, false)
	}
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
	for _, id := range append(out.Taken, out.Missing...) {
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
		ids[i] = uuid.New()
	}
	return ids
}

// clearOrphans handles Redis refusing seats that this process believes
// are free. A lock older than any transaction could run whose hold is not
// active in Postgres is an orphan (its writer died, or Redis outlived a
// release): it is compare-and-deleted. Reports whether any was cleared.
func (s *Service) clearOrphans(ctx context.Context, ev *eventState, seats []store.Seat, acq seatlock.AcquireResult) bool {
	now := s.now()
	var orphans []seatlock.Released
	for j, t := range acq.Taken {
		lk := acq.Locks[j]
		st, _ := ev.seat(seats[t].ID)
		if st.Status != store.Available || lk.HoldID == uuid.Nil || now.Sub(lk.AcquiredAt) < s.opt.StaleLockAge {
			return false
		}
		h, err := s.store.ActiveHold(ctx, ev.org, st.ID)
		if err == nil && h.ID == lk.HoldID {
			return false
		}
		if err != nil && apperr.CodeOf(err) != apperr.NotFound {
			return false
		}
		orphans = append(orphans, seatlock.Released{Seat: seatlock.Seat{ID: st.ID, Idx: st.Idx}, HoldID: lk.HoldID, Free: true})
	}
	n, err := s.locks.Release(ctx, ev.org, ev.id, orphans)
	if err != nil || n == 0 {
		return false
	}
	s.log.Warn("cleared orphaned redis locks", "org", ev.org, "event", ev.id, "count", n)
	return true
}

// holdFallback is the Postgres-only path: NOWAIT row locks in seat order,
// so a crowd on one seat is refused at once instead of queueing.
func (s *Service) holdFallback(ctx context.Context, a Actor, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	p.NoWait = true
	for attempt := 0; ; attempt++ {
		fence := ev.fence() + 1
		p.Seats = make([]store.HoldRequest, len(seats))
		for i, st := range seats {
			p.Seats[i] = store.HoldRequest{SeatID: st.ID, HoldID: uuid.New(), Fence: fence}
		}
		s.m.PGHoldWrites.Inc()
		out, err := s.store.CreateHolds(context.WithoutCancel(ctx), p)
		if err != nil {
			s.settleIfUnknown(err, p.Org, p.Event, seatIDsOf(seats), nil)
			return Result{}, fmt.Errorf("create holds (fallback): %w", err)
		}
		if len(out.Stale) > 0 && attempt < 3 {
			for _, st := range out.Stale {
				ev.bumpFence(st.Fence)
			}
			continue
		}
		return s.finish(ctx, a, ev, seats, out, label, true)
	}
}

// finish turns a Postgres outcome into the answer and, for new holds,
// publishes the change.
func (s *Service) finish(ctx context.Context, a Actor, ev *eventState, seats []store.Seat, out store.HoldOutcome,
	label func(uuid.UUID) string, viaPostgres bool) (Result, error) {
	switch {
	case len(out.Missing) > 0:
		return Result{}, apperr.E(apperr.NotFound, "seat not found in this event")
	case len(out.Taken) > 0 || len(out.Stale) > 0:
		s.m.HoldConflict.WithLabelValues("postgres").Inc()
		ids := slices.Clone(out.Taken)
		for _, st := range out.Stale {
			ids = append(ids, st.SeatID)
		}
		if s.FastPath() {
			s.restoreLocks(ctx, ev, out.Taken)
		}
		return Result{}, seatTaken(ids, label)
	}
	byID := map[uuid.UUID]store.Hold{}
	var ds []Delta
	now := s.now()
	for _, h := range out.Created {
		byID[h.SeatID] = h
		ds = append(ds, holdDelta(h, KindHeld, store.Held, store.Available, a.User, now))
	}
	for _, h := range out.Existing {
		byID[h.SeatID] = h
	}
	if viaPostgres && len(out.Created) > 0 && s.FastPath() {
		// Redis recovered while this hold was being written without it,
		// possibly after the rebuild read Postgres: add its locks now.
		ids := make([]uuid.UUID, len(out.Created))
		for i, h := range out.Created {
			ids[i] = h.SeatID
		}
		s.restoreLocks(ctx, ev, ids)
	}
	s.commit(ctx, a.Org, ev.id, ds)
	res := Result{Created: len(out.Created) > 0, Holds: make([]store.Hold, len(seats))}
	for i, st := range seats {
		res.Holds[i] = byID[st.ID]
	}
	return res, nil
}

// restoreLocks puts back Redis locks for seats Postgres holds but Redis had
// let through: Redis lost them (flush, restart), so heal it seat by seat.
// The hold is read again after the write: if it ended in between, its
// ender may have dropped the lock before we wrote it, so we drop it.
func (s *Service) restoreLocks(ctx context.Context, ev *eventState, seatIDs []uuid.UUID) {
	now := s.now()
	for _, id := range seatIDs {
		h, err := s.store.ActiveHold(ctx, ev.org, id)
		if err != nil {
			continue
		}
		st, _ := ev.seat(id)
		seat := seatlock.Seat{ID: id, Idx: st.Idx}
		lk := seatlock.Lock{HoldID: h.ID, UserID: h.UserID, Fence: h.Fence, Expires: h.HeldUntil, AcquiredAt: h.CreatedAt}
		s.repairRedis(ev.org, ev.id, "restore redis lock", func() error {
			if err := s.locks.Restore(ctx, ev.org, ev.id, seat, lk, now); err != nil {
				return err
			}
			if again, err := s.store.ActiveHold(ctx, ev.org, id); err == nil && again.ID == h.ID {
				return nil
			}
			_, err := s.locks.Release(ctx, ev.org, ev.id, []seatlock.Released{{Seat: seat, HoldID: h.ID, Free: true}})
			return err
		})
	}
}

// seatLabel names a seat for people: section-row-number.
func (s *Service) seatLabel(ev *eventState, id uuid.UUID) string {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	st, ok := ev.seats[id]
	if !ok {
		return id.String()
	}
	return SeatView{Seat: *st, Section: ev.sections[ev.sectionOf[st.SectionID]].Label}.Label()
}

// SeatLabel names a seat of an event for people ("B-4-12").
func (s *Service) SeatLabel(ctx context.Context, a Actor, event, seat uuid.UUID) string {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return seat.String()
	}
	return s.seatLabel(ev, seat)
}
