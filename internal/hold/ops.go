package hold

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// Release ends a hold: its holder may, and staff of the same org may
// release anyone's (with a reason for the audit log).
func (s *Service) Release(ctx context.Context, a Actor, holdID uuid.UUID, reason string) (store.Hold, error) {
	h, err := s.store.Release(context.WithoutCancel(ctx), a.Org, holdID, a.User, a.Staff(), reason)
	if err != nil {
		s.settleIfUnknown(err, a.Org, uuid.Nil, nil, []uuid.UUID{holdID})
		return store.Hold{}, err
	}
	s.m.Released.Inc()
	ev, err := s.event(ctx, a.Org, h.EventID)
	if err != nil {
		return h, nil // committed; the cache will catch up from Postgres
	}
	st, _ := ev.seat(h.SeatID)
	s.dropLocks(ctx, a.Org, h.EventID, []seatlock.Released{{Seat: seatlock.Seat{ID: h.SeatID, Idx: st.Idx}, HoldID: h.ID, Free: true}})
	s.commit(ctx, a.Org, h.EventID, []Delta{holdDelta(h, KindReleased, store.Available, store.Held, a.User, s.now())})
	return h, nil
}

// dropLocks compare-and-deletes Redis locks after a committed change. A
// failure is not the caller's problem: Postgres already decided. A lock
// this process cannot drop now (Redis out of its reach) is remembered and
// dropped when Redis is back, before the fast path resumes; a rebuild
// alone would keep it for StaleLockAge, because it is young enough to
// belong to a transaction in flight, and the seat would be refused
// meanwhile.
func (s *Service) dropLocks(ctx context.Context, org, event uuid.UUID, rs []seatlock.Released) {
	if len(rs) == 0 {
		return
	}
	if !s.FastPath() {
		s.unreleased.add(org, event, rs)
		return
	}
	s.repairRedis(org, event, "drop redis locks", func() error {
		_, err := s.locks.Release(context.WithoutCancel(ctx), org, event, rs)
		if err != nil {
			s.unreleased.add(org, event, rs)
		}
		return err
	})
}

// pendingReleases are lock drops waiting for Redis. Dropping a lock is a
// compare-and-delete on the hold's id, so doing it late is always safe: a
// lock taken since by another hold is left alone.
type pendingReleases struct {
	mu sync.Mutex
	by map[[2]uuid.UUID][]seatlock.Released // org, event
	n  int
}

// maxPendingReleases bounds the memory of a long outage; past it, locks
// are left to the rebuilds, which clear them once they are old enough.
const maxPendingReleases = 100_000

func (p *pendingReleases) add(org, event uuid.UUID, rs []seatlock.Released) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n+len(rs) > maxPendingReleases {
		return
	}
	if p.by == nil {
		p.by = map[[2]uuid.UUID][]seatlock.Released{}
	}
	k := [2]uuid.UUID{org, event}
	p.by[k] = append(p.by[k], rs...)
	p.n += len(rs)
}

func (p *pendingReleases) pending() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n > 0
}

// flushUnreleased drops the pending locks; what Redis refuses stays
// pending.
func (s *Service) flushUnreleased(ctx context.Context) error {
	p := &s.unreleased
	p.mu.Lock()
	by := p.by
	p.by, p.n = nil, 0
	p.mu.Unlock()
	var errs []error
	for k, rs := range by {
		if _, err := s.locks.Release(ctx, k[0], k[1], rs); err != nil {
			p.add(k[0], k[1], rs)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// repairRedis mirrors a committed change into Redis. It bypasses the
// breaker (a half-open breaker would refuse it, and the change must not be
// skipped); if it fails, Redis is known to be behind, so the fast path
// stays off until Redis has been rebuilt from Postgres.
func (s *Service) repairRedis(org, event uuid.UUID, what string, f func() error) {
	if !s.FastPath() {
		return // Redis is rebuilt from Postgres before the fast path resumes
	}
	if err := f(); err != nil {
		s.log.Warn(what+" failed; redis will be rebuilt", "org", org, "event", event, "err", err)
		s.dirty.Store(true)
		s.m.BreakerOpen.Set(1)
	}
}

// Checkout extends every active hold of the buyer for the event, once per
// hold, and returns all their active holds with the new deadlines.
func (s *Service) Checkout(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	changed, all, err := s.store.Extend(ctx, a.Org, event, a.User, s.opt.Extension, s.opt.MaxExtensions)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return all, nil
	}
	s.m.Extended.Add(float64(len(changed)))
	now := s.now()
	es := make([]seatlock.Extended, len(changed))
	ds := make([]Delta, len(changed))
	for i, h := range changed {
		es[i] = seatlock.Extended{SeatID: h.SeatID, HoldID: h.ID, HeldUntil: h.HeldUntil}
		ds[i] = holdDelta(h, KindExtended, store.Held, store.Held, a.User, now)
	}
	s.repairRedis(a.Org, event, "extend redis locks", func() error {
		_, err := s.locks.Extend(context.WithoutCancel(ctx), a.Org, event, now, es)
		return err
	})
	s.commit(ctx, a.Org, event, ds)
	return all, nil
}

// Holds lists the actor's own active holds for an event.
func (s *Service) Holds(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return s.store.UserHolds(ctx, a.Org, event, a.User)
}

// EventHolds lists every active hold of an event (staff only).
func (s *Service) EventHolds(ctx context.Context, a Actor, event uuid.UUID) ([]store.Hold, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can list an event's holds")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return s.store.EventHolds(ctx, a.Org, event)
}

// Purchase turns the buyer's listed holds into a booking. The key makes a
// retry return the same booking; a different payload under the same key is
// refused.
func (s *Service) Purchase(ctx context.Context, a Actor, event uuid.UUID, key string, holdIDs []uuid.UUID) (store.Booking, error) {
	if key == "" || len(key) > 200 {
		return store.Booking{}, &apperr.Error{Code: apperr.Invalid, Message: "an Idempotency-Key of 1 to 200 characters is required",
			Fields: map[string]string{"Idempotency-Key": "is required"}}
	}
	if len(holdIDs) == 0 || len(holdIDs) > s.opt.MaxHoldsPerBuyer {
		return store.Booking{}, &apperr.Error{Code: apperr.Invalid, Message: "list the holds to buy",
			Fields: map[string]string{"hold_ids": "must list 1 to " + strconv.Itoa(s.opt.MaxHoldsPerBuyer) + " holds"}}
	}
	seen := map[uuid.UUID]bool{}
	for _, id := range holdIDs {
		if seen[id] {
			return store.Booking{}, &apperr.Error{Code: apperr.Invalid, Message: "a hold is listed twice",
				Fields: map[string]string{"hold_ids": "must not repeat a hold"}}
		}
		seen[id] = true
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return store.Booking{}, err
	}
	b, err := s.store.Purchase(context.WithoutCancel(ctx), a.Org, event, a.User, key, holdIDs)
	if err != nil {
		// A replay of this key will not publish the sale either.
		s.settleIfUnknown(err, a.Org, event, nil, holdIDs)
	}
	if err != nil || b.Replayed {
		return b, err
	}
	s.m.Converted.Add(float64(len(b.Sold)))
	now := s.now()
	rs := make([]seatlock.Released, len(b.Sold))
	ds := make([]Delta, len(b.Sold))
	for i, x := range b.Sold {
		st, _ := ev.seat(x.SeatID)
		rs[i] = seatlock.Released{Seat: seatlock.Seat{ID: x.SeatID, Idx: st.Idx}, HoldID: x.HoldID}
		ds[i] = Delta{Org: a.Org, Event: event, Seat: x.SeatID, Kind: KindSold, Status: store.Sold, Prev: store.Held,
			Version: x.Version, Actor: a.User, At: now}
	}
	s.dropLocks(ctx, a.Org, event, rs)
	s.commit(ctx, a.Org, event, ds)
	return b, nil
}

// SetBlocked blocks an available seat or unblocks a blocked one
// (organizers only).
func (s *Service) SetBlocked(ctx context.Context, a Actor, event, seat uuid.UUID, blocked bool, reason string) (int64, error) {
	if a.Role != RoleOrganizer && a.Role != RoleBoxOffice {
		return 0, apperr.E(apperr.Forbidden, "only staff can block seats")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return 0, err
	}
	version, err := s.store.SetBlocked(ctx, a.Org, event, seat, a.User, blocked, reason)
	if err != nil {
		return 0, err
	}
	st, _ := ev.seat(seat)
	d := Delta{Org: a.Org, Event: event, Seat: seat, Kind: KindBlocked, Status: store.Blocked, Prev: store.Available,
		Version: version, Actor: a.User, At: s.now()}
	if !blocked {
		d.Kind, d.Status, d.Prev = KindUnblocked, store.Available, store.Blocked
	}
	s.repairRedis(a.Org, event, "redis block bit", func() error {
		return s.locks.SetBlocked(context.WithoutCancel(ctx), a.Org, event, st.Idx, blocked)
	})
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
		hs, err := s.store.ReapExpired(ctx, s.opt.ReaperBatch)
		if err != nil {
			if unknownOutcome(err) && ctx.Err() == nil {
				// The batch may have committed: its holds will never be
				// reaped again, so find them by time.
				s.settleExpired(start.Add(-5 * time.Second))
			}
			return total, err
		}
		total += len(hs)
		s.m.Expired.Add(float64(len(hs)))
		type key = [2]uuid.UUID
		byEvent := map[key][]store.Hold{}
		for _, h := range hs {
			byEvent[key{h.OrgID, h.EventID}] = append(byEvent[key{h.OrgID, h.EventID}], h)
		}
		now := s.now()
		for k, group := range byEvent {
			ds := make([]Delta, len(group))
			rs := make([]seatlock.Released, len(group))
			for i, h := range group {
				ds[i] = holdDelta(h, KindExpired, store.Available, store.Held, uuid.Nil, now)
				rs[i] = seatlock.Released{Seat: seatlock.Seat{ID: h.SeatID, Idx: h.SeatIdx}, HoldID: h.ID, Free: true}
			}
			s.dropLocks(ctx, k[0], k[1], rs)
			s.commit(ctx, k[0], k[1], ds)
		}
		if len(hs) < s.opt.ReaperBatch {
			return total, nil
		}
	}
}

// RunReaper reaps every interval until ctx ends.
func (s *Service) RunReaper(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.Reap(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("reaper", "err", err)
			} else if n > 0 {
				s.log.Info("reaper expired holds", "count", n)
			}
		}
	}
}
