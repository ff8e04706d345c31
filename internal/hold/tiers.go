package hold

// Holding a set of seats through the tiers: the hot cache refuses at once
// what it sees taken or not allowed, then the fast path (fast.go: Redis,
// then Postgres) or, without Redis, the fallback (fallback.go: Postgres
// alone) takes the holds, and finish answers and publishes them
// (docs/architecture.md#the-hold-algorithm).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// holdSeats holds seatIDs of r's event for the actor (or r's customer),
// and returns the path it took. A request with picked seats (r.Best,
// r.GA) calls it once per pick.
func (h *Holds) holdSeats(ctx context.Context, a Actor, r Request, seatIDs []uuid.UUID) (Result, string, error) {
	if err := canHold(a); err != nil {
		return Result{}, "hot", err
	}
	most := h.e.opt.MaxSeatsPerRequest
	if len(seatIDs) == 0 || len(seatIDs) > most {
		return Result{}, "hot", &apperr.Error{Code: apperr.Invalid,
			Message: fmt.Sprintf("hold between 1 and %d seats at once", most),
			Fields:  map[string]string{"seat_ids": "must list 1 to " + fmt.Sprint(most) + " seats"}}
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
	ev, err := h.e.event(ctx, a.Org, r.Event)
	if err != nil {
		return Result{}, "hot", err
	}
	now := h.e.now().Truncate(time.Millisecond)

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
	label := func(id uuid.UUID) string { return seatLabel(ev, id) }
	// The cheap early refusal of an event not on sale; the hold statement
	// checks the event row itself (event_open), so a cache that lags a
	// change of status or window never lets a hold through.
	set := ev.settings.Load()
	if !OpenTo(set, a.Staff(), now) {
		h.e.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, "hot", notOnSale(set, now)
	}
	if len(taken) > 0 {
		h.e.m.HoldConflict.WithLabelValues("hot").Inc()
		return Result{}, "hot", seatTaken(taken, label)
	}
	if err := accessibleGate(set, a, r.Accessible, seats, now, label); err != nil {
		return Result{}, "hot", err
	}
	// The cheap early refusal; the cap itself is enforced in the step that
	// takes the holds, by Redis and by Postgres.
	// The event's own TTL and cap replace the defaults.
	ttl, cap := h.ttlCap(set, a)
	if cap > 0 && ev.holdsOf(a.User)+len(seats)-mine > cap {
		return Result{}, "hot", holdLimit(cap)
	}

	// A customer's hold keeps the time staff chose: in Postgres (so the
	// reaper leaves it until then) and in its Redis lock's expiry and TTL,
	// which follow HeldUntil on both paths.
	until := now.Add(ttl)
	if !r.Until.IsZero() {
		until = r.Until.Truncate(time.Millisecond)
	}
	// Standing places have no orphan rule; picked seats must all be new
	// (see store.HoldParams.Fresh).
	ga := r.GA != nil
	p := store.HoldParams{Org: a.Org, Event: r.Event, User: a.User, Now: now, HeldUntil: until,
		Source: r.Source, Cap: cap, Ceiling: ceiling(a), Customer: r.Customer, Staff: a.Staff(), Accessible: r.Accessible, GA: ga, Fresh: r.Best != nil,
		Strict: set.OrphanRule == "strict" && !a.Staff() && !ga, Request: requestOf(ctx)}
	if p.Strict {
		p.Rows = rowKeys(r.Event, seats)
	}
	if h.e.fast(ev) {
		res, err := h.holdFast(ctx, ev, seats, p, label)
		if !errors.Is(err, errRedisDown) {
			return res, "fast", h.refusal(ev, err, cap, now)
		}
		h.e.log.Warn("redis unavailable, holding through postgres", "org", a.Org, "event", r.Event, "err", err)
	}
	h.e.m.RedisFallback.Inc()
	res, err := h.holdFallback(ctx, ev, seats, p, label)
	return res, "fallback", h.refusal(ev, err, cap, now)
}

// ttlCap is how long the actor's holds last and how many the actor may
// have for the event (0: no cap): the event's own, else the defaults.
func (h *Holds) ttlCap(set *store.Event, a Actor) (time.Duration, int) {
	ttl, cap := h.e.opt.HoldTTL, 0
	if set.HoldTTL > 0 {
		ttl = set.HoldTTL
	}
	if a.Role == RoleBuyer {
		cap = h.e.opt.MaxHoldsPerBuyer
		if set.MaxHoldsPerBuyer > 0 {
			cap = set.MaxHoldsPerBuyer
		}
		if a.HoldCap > 0 && (cap == 0 || a.HoldCap < cap) {
			cap = a.HoldCap
		}
	}
	return ttl, cap
}

// ceiling is the actor's own cap for store.HoldParams.Ceiling: a
// buyer's HoldCap (0: none).
func ceiling(a Actor) int {
	if a.Role != RoleBuyer {
		return 0
	}
	return a.HoldCap
}

// refusal gives a cap or sales-window refusal by Redis or Postgres the
// same words as the early ones. A window refusal by Postgres means the
// cached settings lag: the follower reloads them now.
func (h *Holds) refusal(ev *eventState, err error, cap int, now time.Time) error {
	switch {
	case apperr.CodeOf(err) == apperr.HoldLimit:
		return holdLimit(cap)
	case errors.Is(err, errNotOnSale):
		h.e.wake()
		if set := ev.settings.Load(); !OpenTo(set, false, now) {
			return notOnSale(set, now)
		}
	}
	return err
}

// finish turns a Postgres outcome into the answer and, for new holds,
// publishes the change, calling applied (if set) once the cache has the
// new holds, before they are published (see Engine.commitThen). known
// are new holds made under Redis locks taken for them (Delta.Locked):
// once the cache has them, the follower leaves them out of its feed.
func (h *Holds) finish(ctx context.Context, ev *eventState, seats []store.Seat, out store.HoldOutcome,
	user uuid.UUID, label func(uuid.UUID) string, known []uuid.UUID, applied func()) (Result, error) {
	switch {
	case out.NotOnSale:
		return Result{}, errNotOnSale
	case len(out.Missing) > 0:
		return Result{}, apperr.E(apperr.NotFound, "seat not found in this event")
	case len(out.HeldBack) > 0 && len(out.Taken)+len(out.Stale) == 0:
		h.e.m.HoldConflict.WithLabelValues("postgres").Inc()
		h.e.wake() // the cached release time lags
		return Result{}, heldBackErr(out.HeldBack[0], out.ReleaseAt, label)
	case len(out.Orphans) > 0 && len(out.Taken)+len(out.Stale) == 0:
		h.e.m.HoldConflict.WithLabelValues("postgres").Inc()
		return Result{}, orphanSeat(out.Orphans, label)
	case len(out.Taken) > 0 || len(out.Stale) > 0:
		h.e.m.HoldConflict.WithLabelValues("postgres").Inc()
		ids := slices.Clone(out.Taken)
		for _, st := range out.Stale {
			ids = append(ids, st.SeatID)
		}
		return Result{}, seatTaken(ids, label)
	}
	byID := map[uuid.UUID]store.Hold{}
	var ds []Delta
	now := h.e.now()
	for _, hd := range out.Created {
		byID[hd.SeatID] = hd
		d := holdDelta(hd, KindHeld, store.Held, store.Available, user, now)
		d.Locked = slices.Contains(known, hd.ID)
		ds = append(ds, d)
	}
	for _, hd := range out.Existing {
		byID[hd.SeatID] = hd
	}
	h.e.commitThen(ctx, ev.org, ev.id, ds, applied)
	ev.known.add(known...)
	res := Result{Created: len(out.Created) > 0, Holds: make([]store.Hold, len(seats))}
	for i, st := range seats {
		res.Holds[i] = byID[st.ID]
	}
	return res, nil
}
