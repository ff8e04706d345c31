package hold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/sony/gobreaker/v2"

	"seatd/internal/apperr"
	"seatd/internal/pg"
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
	return s.observedHold(ctx, a, event, seatIDs, source, holdOpts{})
}

// observedHold is a hold with its metrics and, for a failure, its log line.
func (s *Service) observedHold(ctx context.Context, a Actor, event uuid.UUID, seatIDs []uuid.UUID, source string, o holdOpts) (Result, error) {
	return s.observe(a, event, func() (Result, string, error) { return s.hold(ctx, a, event, seatIDs, source, o) })
}

// observe runs a hold with its metrics and, for a failure, its log line;
// f returns the path it took.
func (s *Service) observe(a Actor, event uuid.UUID, f func() (Result, string, error)) (Result, error) {
	start := s.now()
	s.m.HoldAttempt.Inc()
	res, path, err := f()
	outcome := "ok"
	switch {
	case err == nil && res.Created:
		s.m.HoldSuccess.WithLabelValues(path).Inc()
	case err == nil:
		outcome = "idempotent"
		s.m.HoldSuccess.WithLabelValues("idempotent").Inc()
	case apperr.CodeOf(err) == apperr.Internal:
		s.m.HoldError.Inc()
		s.log.Error("hold failed", "org", a.Org, "event", event, "user", a.User, "path", path, "err", err)
	}
	if err != nil {
		outcome = string(apperr.CodeOf(err)) // one of apperr's few codes
	}
	s.m.HoldDuration.WithLabelValues(path, outcome).Observe(s.now().Sub(start).Seconds())
	return res, err
}

// holdOpts are a box-office hold's differences from a buyer's.
type holdOpts struct {
	customer *store.Customer
	until    time.Time // zero: the hold TTL from now
	// accessible: the buyer asks for accessible seating, so seats held
	// back for it are theirs to hold (see accessibleGate).
	accessible bool
	// ga: the seats are general-admission places (no orphan rule).
	ga bool
	// fresh: every seat must be newly held (see store.HoldParams.Fresh).
	fresh bool
}

func (s *Service) hold(ctx context.Context, a Actor, event uuid.UUID, seatIDs []uuid.UUID, source string, o holdOpts) (Result, string, error) {
	if err := canHold(a); err != nil {
		return Result{}, "hot", err
	}
	if o.customer != nil && !a.Staff() {
		return Result{}, "hot", apperr.E(apperr.Forbidden, "only box-office staff can hold seats for a customer")
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

	// Tier 1, the hot cache: refuse at once what is visibly taken. A
	// repeated request goes on: an idempotent answer vouches for a hold, so
	// it comes from Postgres, not from a cache that may lag.
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
	// The cheap early refusal of an event not on sale; the hold statement
	// checks the event row itself (event_open), so a cache that lags a
	// change of status or window never lets a hold through.
	set := ev.settings.Load()
	if !OpenTo(set, a.Staff(), now) {
		s.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, "hot", notOnSale(set, now)
	}
	if len(taken) > 0 {
		s.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, "hot", seatTaken(taken, label)
	}
	if err := accessibleGate(set, a, o.accessible, seats, now, label); err != nil {
		return Result{}, "hot", err
	}
	// The cheap early refusal; the cap itself is enforced in the step that
	// takes the holds, by Redis and by Postgres.
	// The event's own TTL and cap replace the defaults.
	ttl, cap := s.ttlCap(set, a)
	if cap > 0 && ev.holdsOf(a.User)+len(seats)-mine > cap {
		return Result{}, "hot", holdLimit(cap)
	}

	// A customer's hold keeps the time staff chose: in Postgres (so the
	// reaper leaves it until then) and in its Redis lock's expiry and TTL,
	// which follow HeldUntil on both paths.
	until := now.Add(ttl)
	if !o.until.IsZero() {
		until = o.until.Truncate(time.Millisecond)
	}
	p := store.HoldParams{Org: a.Org, Event: event, User: a.User, Now: now, HeldUntil: until,
		Source: source, Cap: cap, Customer: o.customer, Staff: a.Staff(), Accessible: o.accessible, GA: o.ga, Fresh: o.fresh,
		Strict: set.OrphanRule == "strict" && !a.Staff() && !o.ga, Request: requestOf(ctx)}
	if p.Strict {
		p.Rows = rowKeys(event, seats)
	}
	if s.fast(ev) {
		res, err := s.holdFast(ctx, ev, seats, p, label)
		if !errors.Is(err, errRedisDown) {
			return res, "fast", s.refusal(ev, err, cap, now)
		}
		s.log.Warn("redis unavailable, holding through postgres", "org", a.Org, "event", event, "err", err)
	}
	s.m.RedisFallback.Inc()
	res, err := s.holdFallback(ctx, ev, seats, p, label)
	return res, "fallback", s.refusal(ev, err, cap, now)
}

// ttlCap is how long the actor's holds last and how many the actor may
// have for the event (0: no cap): the event's own, else the defaults.
func (s *Service) ttlCap(set *store.Event, a Actor) (time.Duration, int) {
	ttl, cap := s.opt.HoldTTL, 0
	if set.HoldTTL > 0 {
		ttl = set.HoldTTL
	}
	if a.Role == RoleBuyer {
		cap = s.opt.MaxHoldsPerBuyer
		if set.MaxHoldsPerBuyer > 0 {
			cap = set.MaxHoldsPerBuyer
		}
	}
	return ttl, cap
}

// canHold refuses an account whose role takes no holds.
func canHold(a Actor) error {
	if a.Role != RoleBuyer && a.Role != RoleBoxOffice && a.Role != RoleOrganizer {
		return apperr.E(apperr.Forbidden, "this account cannot hold seats")
	}
	return nil
}

// holdLimit is the refusal of a buyer at the cap.
func holdLimit(cap int) error {
	return &apperr.Error{Code: apperr.HoldLimit,
		Message: fmt.Sprintf("you can hold at most %d seats for this event", cap)}
}

// errNotOnSale is Postgres refusing a hold because the event does not
// take it now, which this process's cache did not know yet.
var errNotOnSale = &apperr.Error{Code: apperr.NotOnSale, Message: "this event does not take holds now"}

// refusal gives a cap or sales-window refusal by Redis or Postgres the
// same words as the early ones. A window refusal by Postgres means the
// cached settings lag: the follower reloads them now.
func (s *Service) refusal(ev *eventState, err error, cap int, now time.Time) error {
	switch {
	case apperr.CodeOf(err) == apperr.HoldLimit:
		return holdLimit(cap)
	case errors.Is(err, errNotOnSale):
		s.wake()
		if set := ev.settings.Load(); !OpenTo(set, false, now) {
			return notOnSale(set, now)
		}
	}
	return err
}

var errRedisDown = errors.New("redis unavailable")

// holdFast is tier 2 then 3: an atomic Lua lock on every seat (with the
// buyer's cap), then the Postgres write that makes it true. A refusal by
// Redis never reaches Postgres.
func (s *Service) holdFast(ctx context.Context, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	ids := seatIDsOf(seats)
	proposed := newIDs(len(seats))
	for attempt := 0; ; attempt++ {
		acq, err := call(s.redis, func() (seatlock.AcquireResult, error) {
			return s.locks.Acquire(ctx, p.Org, p.Event, seatlock.AcquireRequest{User: p.User, Seats: ids, HoldIDs: proposed,
				Now: p.Now, HeldUntil: p.HeldUntil, Floor: ev.fence(), Cap: p.Cap, MaxDelay: s.opt.StaleLockAge / 2})
		})
		switch {
		case errors.Is(err, seatlock.ErrCap):
			s.m.HoldConflict.WithLabelValues("redis").Inc()
			return Result{}, holdLimit(p.Cap)
		case errors.Is(err, seatlock.ErrNotSynced):
			// Redis lost this event (flushed or restarted): Postgres alone
			// until the follower has synced it again.
			s.setSynced(ev, false)
			s.wake()
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
				ev.doubt(doubtfulLock{seat: ids[i], hold: proposed[i], notBefore: p.Now.Add(s.opt.StaleLockAge)})
			}
			return Result{}, fmt.Errorf("%w: %w", errRedisDown, err)
		}
		if !acq.OK {
			s.suspectOrphans(ev, seats, acq)
			s.m.HoldConflict.WithLabelValues("redis").Inc()
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
		p.Locked = true
		s.m.PGHoldWrites.Inc()
		// The caller going away must not cut the write short: a commit
		// whose reply is lost looks like a failure.
		out, err := s.store.Holds.Create(context.WithoutCancel(ctx), p)
		if unknownOutcome(err) {
			// It may have committed: the feed will say. Until then the
			// locks stay, and the follower drops them if it did not.
			s.doubt(ev, ours)
		} else if stray := notCreated(ours, out); len(stray) > 0 {
			// A lock this call took that did not become a hold names a
			// hold that will never be written: it goes. When Postgres
			// answered, the seat is synced from it too, since Redis let
			// through what Postgres refused or had under another hold
			// (taken, a hold made without Redis, a lock lost).
			s.dropLocks(ctx, ev, stray)
			if err == nil {
				for _, r := range stray {
					ev.recheck.add(r.Seat)
				}
				ev.recheck.add(out.Taken...)
				s.wake()
			}
		}
		if err != nil {
			return Result{}, fmt.Errorf("create holds: %w", err)
		}
		if out.NotOnSale {
			return Result{}, errNotOnSale
		}
		if len(out.HeldBack) > 0 && len(out.Taken)+len(out.Stale) == 0 {
			s.m.HoldConflict.WithLabelValues("postgres").Inc()
			s.wake() // the cached release time lags
			return Result{}, heldBackErr(out.HeldBack[0], out.ReleaseAt, label)
		}
		if len(out.Orphans) > 0 {
			s.m.HoldConflict.WithLabelValues("postgres").Inc()
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
			s.dropLocks(ctx, ev, rs)
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
		res, err := s.finish(ctx, ev, seats, out, p.User, label)
		if err == nil {
			// Holds under locks this call took: Redis has them as
			// Postgres does, and finish put them in the cache. (A lock
			// reused from an earlier request may name another held_until:
			// the feed brings that one in line.)
			known := make([]uuid.UUID, 0, len(out.Created))
			for _, h := range out.Created {
				if slices.ContainsFunc(ours, func(r seatlock.Released) bool { return r.HoldID == h.ID }) {
					known = append(known, h.ID)
				}
			}
			ev.known.add(known...)
		}
		return res, err
	}
}

// suspectOrphans handles Redis refusing seats this process believes are
// free because of locks older than any transaction could run: their
// writers died between lock and commit. The follower checks them against
// Postgres and drops the ones Postgres does not have; this request is
// refused all the same.
func (s *Service) suspectOrphans(ev *eventState, seats []store.Seat, acq seatlock.AcquireResult) {
	now := s.now()
	for j, t := range acq.Taken {
		lk := acq.Locks[j]
		if seats[t].Status != store.Available || lk.HoldID == uuid.Nil || now.Sub(lk.AcquiredAt) < s.opt.StaleLockAge {
			continue
		}
		ev.doubt(doubtfulLock{seat: seats[t].ID, hold: lk.HoldID, notBefore: now})
		s.wake()
	}
}

// doubt hands locks whose hold may not be in Postgres to the follower.
func (s *Service) doubt(ev *eventState, rs []seatlock.Released) {
	if len(rs) == 0 {
		return
	}
	now := s.now()
	for _, r := range rs {
		ev.doubt(doubtfulLock{seat: r.Seat, hold: r.HoldID, notBefore: now})
	}
	s.wake()
}

// dropLocks compare-and-deletes Redis locks of holds that ended or were
// never written, so their seats are free in Redis at once. It is only
// that: what it cannot drop, the follower does.
func (s *Service) dropLocks(ctx context.Context, ev *eventState, rs []seatlock.Released) {
	if len(rs) == 0 {
		return
	}
	if s.redis.usable() {
		_, err := call(s.redis, func() (int, error) {
			return s.locks.Release(context.WithoutCancel(ctx), ev.org, ev.id, rs)
		})
		if err == nil {
			return
		}
		s.log.Warn("drop redis locks", "org", ev.org, "event", ev.id, "err", err)
	}
	// Redis now disagrees with Postgres: the event's locks are not trusted
	// until the follower synced it, which drops these (and checks them,
	// for a write that may never have committed).
	s.setSynced(ev, false)
	s.doubt(ev, rs)
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

// holdFallback is the Postgres-only path: NOWAIT row locks in seat order,
// so a crowd on one seat is refused at once instead of queueing.
func (s *Service) holdFallback(ctx context.Context, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	p.NoWait = true
	for attempt := 0; ; attempt++ {
		fence := ev.fence() + 1
		p.Seats = make([]store.HoldRequest, len(seats))
		for i, st := range seats {
			p.Seats[i] = store.HoldRequest{SeatID: st.ID, HoldID: store.NewID(), Fence: fence}
		}
		s.m.PGHoldWrites.Inc()
		out, err := s.store.Holds.Create(context.WithoutCancel(ctx), p)
		if err != nil {
			return Result{}, fmt.Errorf("create holds (fallback): %w", err)
		}
		if len(out.Stale) > 0 && attempt < 3 {
			for _, st := range out.Stale {
				ev.bumpFence(st.Fence)
			}
			continue
		}
		return s.finish(ctx, ev, seats, out, p.User, label)
	}
}

// finish turns a Postgres outcome into the answer and, for new holds,
// publishes the change.
func (s *Service) finish(ctx context.Context, ev *eventState, seats []store.Seat, out store.HoldOutcome,
	user uuid.UUID, label func(uuid.UUID) string) (Result, error) {
	return s.finishThen(ctx, ev, seats, out, user, label, nil)
}

// finishThen is finish calling applied (if set) once the cache has the
// new holds, before they are published (see commitThen).
func (s *Service) finishThen(ctx context.Context, ev *eventState, seats []store.Seat, out store.HoldOutcome,
	user uuid.UUID, label func(uuid.UUID) string, applied func()) (Result, error) {
	switch {
	case out.NotOnSale:
		return Result{}, errNotOnSale
	case len(out.Missing) > 0:
		return Result{}, apperr.E(apperr.NotFound, "seat not found in this event")
	case len(out.HeldBack) > 0 && len(out.Taken)+len(out.Stale) == 0:
		s.m.HoldConflict.WithLabelValues("postgres").Inc()
		s.wake() // the cached release time lags
		return Result{}, heldBackErr(out.HeldBack[0], out.ReleaseAt, label)
	case len(out.Orphans) > 0 && len(out.Taken)+len(out.Stale) == 0:
		s.m.HoldConflict.WithLabelValues("postgres").Inc()
		return Result{}, orphanSeat(out.Orphans, label)
	case len(out.Taken) > 0 || len(out.Stale) > 0:
		s.m.HoldConflict.WithLabelValues("postgres").Inc()
		ids := slices.Clone(out.Taken)
		for _, st := range out.Stale {
			ids = append(ids, st.SeatID)
		}
		return Result{}, seatTaken(ids, label)
	}
	byID := map[uuid.UUID]store.Hold{}
	var ds []Delta
	now := s.now()
	for _, h := range out.Created {
		byID[h.SeatID] = h
		ds = append(ds, holdDelta(h, KindHeld, store.Held, store.Available, user, now))
	}
	for _, h := range out.Existing {
		byID[h.SeatID] = h
	}
	s.commitThen(ctx, ev.org, ev.id, ds, applied)
	res := Result{Created: len(out.Created) > 0, Holds: make([]store.Hold, len(seats))}
	for i, st := range seats {
		res.Holds[i] = byID[st.ID]
	}
	return res, nil
}

// seatLabel names a seat for people: section-row-number.
func (s *Service) seatLabel(ev *eventState, id uuid.UUID) string {
	ev.mu.RLock()
	defer ev.mu.RUnlock()
	st, ok := ev.lookup(id)
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
