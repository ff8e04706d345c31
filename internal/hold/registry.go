package hold

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// SectionOccupancy is one section's counts.
type SectionOccupancy struct {
	ID    uuid.UUID
	Label string
	Name  string
	store.Counts
}

// Occupancy is an event's counts, in total and per section.
type Occupancy struct {
	store.Counts
	Sections []SectionOccupancy
}

func occupancyOf(secs []store.Section, counts []store.Counts) Occupancy {
	var o Occupancy
	for i, sec := range secs {
		c := counts[i]
		o.Available += c.Available
		o.Held += c.Held
		o.Sold += c.Sold
		o.Blocked += c.Blocked
		o.Sections = append(o.Sections, SectionOccupancy{ID: sec.ID, Label: sec.Label, Name: sec.Name, Counts: c})
	}
	return o
}

// Occupancy returns the live counts from this process's hot cache, which
// deltas keep current; staff only.
func (s *Service) Occupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	if !a.Staff() {
		return Occupancy{}, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	return occupancyOf(ev.occupancy()), nil
}

// RecomputeOccupancy aggregates the counts from Postgres (the check the
// live counters are verified against).
func (s *Service) RecomputeOccupancy(ctx context.Context, a Actor, event uuid.UUID) (Occupancy, error) {
	if !a.Staff() {
		return Occupancy{}, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	bySection, err := s.store.Occupancy(ctx, a.Org, event)
	if err != nil {
		return Occupancy{}, err
	}
	secs, _ := ev.occupancy()
	counts := make([]store.Counts, len(secs))
	for i, sec := range secs {
		counts[i] = bySection[sec.ID]
	}
	return occupancyOf(secs, counts), nil
}

// Registry is the agreement of the three tiers about an event's holds.
type Registry struct {
	HotCache   int    `json:"hot_cache"`
	Redis      int    `json:"redis"`
	Postgres   int    `json:"postgres"`
	Consistent bool   `json:"consistent"`
	Breaker    string `json:"breaker"`
	RedisError string `json:"redis_error,omitempty"`
}

// RegistryStatus counts the active holds of an event in each tier
// (organizers only). Consistent means Redis holds exactly the seats
// Postgres does and the hot cache agrees.
func (s *Service) RegistryStatus(ctx context.Context, a Actor, event uuid.UUID) (Registry, error) {
	if a.Role != RoleOrganizer {
		return Registry{}, apperr.E(apperr.Forbidden, "only organizers can see registry health")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	r := Registry{HotCache: ev.heldCount(), Breaker: s.BreakerState()}
	active, err := s.store.EventHolds(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	r.Postgres = len(active)
	members, err := s.locks.HeldSeats(ctx, a.Org, event)
	if err != nil {
		r.RedisError = "Redis is unavailable"
		return r, nil
	}
	r.Redis = len(members)
	same := len(members) == len(active)
	if same {
		inRedis := make(map[string]bool, len(members))
		for _, m := range members {
			inRedis[m] = true
		}
		for _, h := range active {
			if !inRedis[h.SeatID.String()] {
				same = false
				break
			}
		}
	}
	r.Consistent = same && r.HotCache == r.Postgres
	return r, nil
}

// Reconcile rebuilds an event's Redis state from Postgres and asks every
// process to reload its hot cache (organizers only, and the recovery loop).
func (s *Service) Reconcile(ctx context.Context, a Actor, event uuid.UUID) (Registry, error) {
	if a.Role != RoleOrganizer {
		return Registry{}, apperr.E(apperr.Forbidden, "only organizers can reconcile")
	}
	ev, err := s.event(ctx, a.Org, event)
	if err != nil {
		return Registry{}, err
	}
	if err := s.rebuild(ctx, ev); err != nil {
		return Registry{}, err
	}
	return s.RegistryStatus(ctx, a, event)
}

func (s *Service) rebuild(ctx context.Context, ev *eventState) error {
	seats, err := s.store.EventSeats(ctx, ev.org, ev.id)
	if err != nil {
		return err
	}
	maxFence, err := s.store.MaxFence(ctx, ev.org, ev.id)
	if err != nil {
		return err
	}
	now := s.now()
	states := make([]seatlock.SeatState, len(seats))
	for i, st := range seats {
		states[i] = seatlock.SeatState{Seat: seatlock.Seat{ID: st.ID, Idx: st.Idx}, Status: st.Status}
		if st.Status == store.Held && st.HoldID != uuid.Nil {
			// Backdated so a later rebuild never mistakes it for a lock
			// whose transaction is still in flight.
			states[i].Lock = &seatlock.Lock{HoldID: st.HoldID, UserID: st.HolderID, Fence: st.Fence,
				Expires: st.HeldUntil, AcquiredAt: now.Add(-s.opt.StaleLockAge)}
		}
	}
	if err := s.locks.Rebuild(ctx, ev.org, ev.id, states, maxFence, now, s.opt.StaleLockAge); err != nil {
		return fmt.Errorf("rebuild redis: %w", err)
	}
	s.dropEndedLocks(ctx, ev, states)
	s.m.Reconciles.Inc()
	// Every other process reloads its hot cache from Postgres; this one
	// does it now, so the caller sees the result.
	b, _ := encodeMessage(message{Resync: true, From: s.id})
	if err := s.bus.Publish(ctx, s.locks.Keys(ev.org, ev.id).Live(), b); err != nil {
		s.log.Warn("publish resync", "event", ev.id, "err", err)
	}
	s.reload(ctx, ev)
	return nil
}

// dropEndedLocks handles holds that ended after rebuild read the seats:
// their enders may have dropped the locks before Rebuild wrote them back,
// so read those holds again and compare-delete the locks of the ones no
// longer active (as restoreLocks does for one seat).
func (s *Service) dropEndedLocks(ctx context.Context, ev *eventState, states []seatlock.SeatState) {
	var written []store.HoldRequest
	idx := map[uuid.UUID]int{}
	for _, st := range states {
		if st.Lock != nil {
			written = append(written, store.HoldRequest{SeatID: st.ID, HoldID: st.Lock.HoldID})
			idx[st.ID] = st.Idx
		}
	}
	ended, err := s.store.EndedHolds(ctx, ev.org, written)
	if err != nil {
		s.log.Warn("rebuild: recheck holds", "event", ev.id, "err", err)
		return
	}
	if len(ended) == 0 {
		return
	}
	rs := make([]seatlock.Released, len(ended))
	for i, h := range ended {
		rs[i] = seatlock.Released{Seat: seatlock.Seat{ID: h.SeatID, Idx: idx[h.SeatID]}, HoldID: h.ID,
			Free: h.Status != store.HoldConverted}
	}
	if _, err := s.locks.Release(ctx, ev.org, ev.id, rs); err != nil {
		s.log.Warn("rebuild: drop locks of ended holds", "event", ev.id, "err", err)
	}
}

// pollEvery is how often a process that cannot use Redis reloads its
// events from Postgres.
const pollEvery = 500 * time.Millisecond

// RunRecovery watches for Redis coming back after the breaker opened and
// rebuilds Redis from Postgres for every event this process has cached
// before the fast path is used again. Meanwhile it keeps the cached events
// current from Postgres: processes that still reach Redis publish their
// deltas there only, so a process cut off from Redis would otherwise hear
// nothing from them. While Redis is healthy it probes it, so that even an
// idle process notices it was cut off.
func (s *Service) RunRecovery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var polled time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !s.dirty.Load() {
			if s.unreleased.pending() && s.FastPath() {
				if err := s.flushUnreleased(ctx); err != nil {
					s.log.Debug("drop pending redis locks", "err", err)
				}
			}
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _ = redisCall(s, func() (struct{}, error) { return struct{}{}, s.locks.Ping(pctx) })
			cancel()
			continue
		}
		if time.Since(polled) >= pollEvery {
			polled = time.Now()
			s.reloadAll(ctx)
		}
		if err := s.recover(ctx); err != nil {
			s.log.Debug("redis not recovered yet", "err", err)
		}
	}
}

// reloadAll reloads every cached event from Postgres and tells watchers
// what changed.
func (s *Service) reloadAll(ctx context.Context) {
	evs := s.cachedEvents()
	for _, ev := range evs {
		s.reload(ctx, ev)
	}
}

func (s *Service) recover(ctx context.Context) error {
	pingCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.locks.Ping(pingCtx); err != nil {
		return err
	}
	if err := s.flushUnreleased(ctx); err != nil {
		return err
	}
	evs := s.cachedEvents()
	rebuildAll := func() error {
		var errs []error
		for _, ev := range evs {
			errs = append(errs, s.rebuild(ctx, ev))
		}
		return errors.Join(errs...)
	}
	if err := rebuildAll(); err != nil {
		return err
	}
	s.dirty.Store(false)
	// Holds this process committed through Postgres after the first pass
	// read it are not in Redis yet; now that new holds go through Redis, a
	// second pass catches them (younger Redis locks are left alone).
	if err := rebuildAll(); err != nil {
		s.dirty.Store(true)
		return err
	}
	s.m.BreakerOpen.Set(0)
	s.log.Info("redis rebuilt from postgres, fast path back on", "events", len(evs))
	// The rebuilds kept locks young enough to belong to a transaction in
	// flight. Once no such transaction can still be running, rebuild once
	// more so the ones whose transaction failed are dropped too.
	time.AfterFunc(s.opt.StaleLockAge+time.Second, func() {
		if s.dirty.Load() || ctx.Err() != nil {
			return
		}
		if err := rebuildAll(); err != nil {
			s.log.Warn("settling rebuild after recovery", "err", err)
		}
	})
	return nil
}

// RunSnapshots records the occupancy of every cached event every interval
// (the points of the organizer's chart).
func (s *Service) RunSnapshots(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		evs := s.cachedEvents()
		for _, ev := range evs {
			o := occupancyOf(ev.occupancy())
			if err := s.store.SaveSnapshot(ctx, ev.org, ev.id, o.Counts); err != nil && ctx.Err() == nil {
				s.log.Warn("save occupancy snapshot", "event", ev.id, "err", err)
			}
		}
	}
}

// Snapshots returns an event's recorded occupancy since a time.
func (s *Service) Snapshots(ctx context.Context, a Actor, event uuid.UUID, since time.Time) ([]store.Snapshot, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return s.store.Snapshots(ctx, a.Org, event, since)
}
