package hold

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// Release ends a hold: its holder may, and staff of the same org may
// release anyone's (with a reason for the audit log).
func (s *Service) Release(ctx context.Context, a Actor, holdID uuid.UUID, reason string) (store.Hold, error) {
	h, err := s.store.Holds.Release(context.WithoutCancel(ctx), a.Org, holdID, a.User, a.Staff(), reason)
	if err != nil {
		return store.Hold{}, err
	}
	s.m.Released.Inc()
	ev, err := s.event(ctx, a.Org, h.EventID)
	if err != nil {
		return h, nil // committed; the feed tells every process
	}
	s.dropLocks(ctx, ev, []seatlock.Released{{Seat: h.SeatID, HoldID: h.ID, Version: h.SeatVersion}})
	s.commit(ctx, a.Org, h.EventID, []Delta{holdDelta(h, KindReleased, store.Available, store.Held, a.User, s.now())})
	if h.Source == store.SourceWaitlist {
		// The offer's panels (every tab of its buyer) show it ended.
		s.publishWaitlist(ctx, a.Org, h.EventID, WaitlistChange{Users: []uuid.UUID{h.UserID}})
	}
	return h, nil
}

// Checkout extends every active hold of the buyer for the event, once per
// hold (by the event's extension, else the default), and returns all
// their active holds with the new deadlines.
func (s *Service) Checkout(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	changed, all, err := s.store.Holds.Extend(ctx, a.Org, event, a.User, s.extension(ev.settings.Load()), s.opt.MaxExtensions)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return all, nil
	}
	s.m.Extended.Add(float64(len(changed)))
	// Redis locks outlive their holds by a margin; the follower's sync
	// moves their expiry with the feed.
	now := s.now()
	ds := make([]Delta, len(changed))
	for i, h := range changed {
		ds[i] = holdDelta(h, KindExtended, store.Held, store.Held, a.User, now)
	}
	s.commit(ctx, a.Org, event, ds)
	return all, nil
}

// extension is how long a checkout extends a hold of the event.
func (s *Service) extension(set *store.Event) time.Duration {
	if set.HoldExtension > 0 {
		return set.HoldExtension
	}
	return s.opt.Extension
}

// Extension is how long a checkout extends the actor's holds of an event
// (the tenancy gate applies).
func (s *Service) Extension(ctx context.Context, a Actor, event uuid.UUID) (time.Duration, error) {
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return 0, err
	}
	return s.extension(ev.settings.Load()), nil
}

// Holds lists the actor's own active holds for an event.
func (s *Service) Holds(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if _, err := s.buyerEvent(ctx, a, event); err != nil {
		return nil, err
	}
	return s.store.Holds.OfUser(ctx, a.Org, event, a.User)
}

// EventHolds lists every active hold of an event (staff only).
func (s *Service) EventHolds(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can list an event's holds")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return s.store.Holds.OfEvent(ctx, a.Org, event)
}

// Purchase turns the buyer's listed holds into a booking. The key makes a
// retry return the same booking; a different payload under the same key is
// refused.
func (s *Service) Purchase(ctx context.Context, a Actor, event uuid.UUID, key string, holdIDs []uuid.UUID) (store.Booking, error) {
	if err := checkConversion(key, holdIDs, s.opt.MaxHoldsPerBuyer); err != nil {
		return store.Booking{}, err
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return store.Booking{}, err
	}
	b, err := s.store.Bookings.Purchase(context.WithoutCancel(ctx), a.Org, event, a.User, key, holdIDs)
	if err != nil || b.Replayed {
		return b, err
	}
	s.sold(ctx, ev, a, b)
	if b.Offer {
		// The offer's panels (every tab of its buyer) show it bought.
		s.publishWaitlist(ctx, a.Org, event, WaitlistChange{Users: []uuid.UUID{a.User}})
	}
	return b, nil
}

// sold publishes a new booking's seats: their locks go (the holds ended)
// and every map shows them sold.
func (s *Service) sold(ctx context.Context, ev *eventState, a Actor, b store.Booking) {
	s.m.Converted.Add(float64(len(b.Sold)))
	now := s.now()
	rs := make([]seatlock.Released, len(b.Sold))
	ds := make([]Delta, len(b.Sold))
	for i, x := range b.Sold {
		rs[i] = seatlock.Released{Seat: x.SeatID, HoldID: x.HoldID, Version: x.Version}
		ds[i] = Delta{Org: a.Org, Event: ev.id, Seat: x.SeatID, Kind: KindSold, Status: store.Sold, Prev: store.Held,
			Version: x.Version, Actor: a.User, At: now}
	}
	s.dropLocks(ctx, ev, rs)
	s.commit(ctx, a.Org, ev.id, ds)
}

// checkConversion checks a purchase's or sale's key and hold list.
func checkConversion(key string, holdIDs []uuid.UUID, most int) error {
	if key == "" || len(key) > 200 {
		return &apperr.Error{Code: apperr.Invalid, Message: "an Idempotency-Key of 1 to 200 characters is required",
			Fields: map[string]string{"Idempotency-Key": "is required"}}
	}
	if len(holdIDs) == 0 || len(holdIDs) > most {
		return &apperr.Error{Code: apperr.Invalid, Message: "list the holds to buy",
			Fields: map[string]string{"hold_ids": "must list 1 to " + strconv.Itoa(most) + " holds"}}
	}
	seen := map[uuid.UUID]bool{}
	for _, id := range holdIDs {
		if seen[id] {
			return &apperr.Error{Code: apperr.Invalid, Message: "a hold is listed twice",
				Fields: map[string]string{"hold_ids": "must not repeat a hold"}}
		}
		seen[id] = true
	}
	return nil
}

// SetBlocked blocks an available seat or unblocks a blocked one
// (organizers only).
func (s *Service) SetBlocked(ctx context.Context, a Actor, event, seat uuid.UUID, blocked bool, reason string) (int64, error) {
	if a.Role != RoleOrganizer && a.Role != RoleBoxOffice {
		return 0, apperr.E(apperr.Forbidden, "only staff can block seats")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return 0, err
	}
	version, err := s.store.Holds.SetBlocked(ctx, a.Org, event, seat, a.User, blocked, reason)
	if err != nil {
		return 0, err
	}
	d := Delta{Org: a.Org, Event: event, Seat: seat, Kind: KindBlocked, Status: store.Blocked, Prev: store.Available,
		Version: version, Actor: a.User, At: s.now()}
	if !blocked {
		d.Kind, d.Status, d.Prev = KindUnblocked, store.Available, store.Blocked
	}
	s.commit(ctx, a.Org, event, []Delta{d})
	return version, nil
}

// Reap expires holds past their time, in batches, until none is left, and
// returns how many it expired. Every process runs it; SKIP LOCKED keeps
// them from doing the same work twice.
func (s *Service) Reap(ctx context.Context) (int, error) {
	start := s.now()
	defer func() {
		s.m.ReaperRuns.Inc()
		s.m.ReaperDuration.Observe(s.now().Sub(start).Seconds())
	}()
	total := 0
	for {
		hs, err := s.store.Holds.ReapExpired(ctx, s.opt.ReaperBatch)
		if err != nil {
			// If the batch committed after all, the feed tells every
			// process, and Redis follows it.
			return total, err
		}
		total += len(hs)
		s.m.Expired.Add(float64(len(hs)))
		reaped := s.now()
		type key = [2]uuid.UUID
		byEvent := map[key][]store.Hold{}
		for _, h := range hs {
			s.m.ReaperLag.Observe(max(reaped.Sub(h.HeldUntil).Seconds(), 0))
			byEvent[key{h.OrgID, h.EventID}] = append(byEvent[key{h.OrgID, h.EventID}], h)
		}
		now := s.now()
		for k, group := range byEvent {
			ds := make([]Delta, len(group))
			rs := make([]seatlock.Released, len(group))
			for i, h := range group {
				ds[i] = holdDelta(h, KindExpired, store.Available, store.Held, uuid.Nil, now)
				rs[i] = seatlock.Released{Seat: h.SeatID, HoldID: h.ID, Version: h.SeatVersion}
			}
			if ev := s.cached(k[0], k[1]); ev != nil {
				s.dropLocks(ctx, ev, rs)
			} else if s.redis.usable() {
				// Not cached here: no follower of this process syncs it, so
				// drop the locks directly (another process's follower covers a
				// failure).
				_, _ = call(s.redis, func() (int, error) { return s.locks.Release(ctx, k[0], k[1], rs) })
			}
			s.commit(ctx, k[0], k[1], ds)
		}
		if len(hs) < s.opt.ReaperBatch {
			s.m.ReaperLastSuccess.Set(float64(s.now().UnixNano()) / 1e9)
			return total, nil
		}
	}
}

// RunReaper reaps every interval until ctx ends, and prunes keyed hold
// requests once an hour.
func (s *Service) RunReaper(ctx context.Context, interval time.Duration) {
	var pruned time.Time
	loop(ctx, interval, nil, func(ctx context.Context) {
		if n, err := s.Reap(ctx); err != nil && ctx.Err() == nil {
			s.m.BackgroundErrors.WithLabelValues("reaper").Inc()
			s.log.Error("reaper", "err", err)
		} else if n > 0 {
			s.log.Info("reaper expired holds", "count", n)
		}
		if now := s.now(); now.Sub(pruned) >= time.Hour {
			pruned = now
			s.pruneHoldRequests(ctx, now)
		}
	})
}

// holdRequestKeep is how long a keyed hold request is remembered: a
// repeat with its Idempotency-Key within it answers the first request's
// holds; after it, the key is free again.
const holdRequestKeep = 24 * time.Hour

// pruneHoldRequests deletes keyed hold requests older than
// holdRequestKeep, a batch at a time (every process may; the deletes do
// not conflict).
func (s *Service) pruneHoldRequests(ctx context.Context, now time.Time) {
	total := int64(0)
	for {
		n, err := s.store.Holds.PruneRequests(ctx, now.Add(-holdRequestKeep), 10_000)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				s.m.BackgroundErrors.WithLabelValues("prune_hold_requests").Inc()
				s.log.Warn("prune keyed hold requests", "err", err)
			}
			return
		}
		if n < 10_000 {
			break
		}
	}
	if total > 0 {
		s.log.Info("pruned keyed hold requests", "count", total)
	}
}
