package hold

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// An on-sale event is loaded before its first buyer asks (the first hold
// on an event not in the cache waits for every seat to load, and so does
// every request behind it, at the very second a sale opens) and kept
// loaded while it is on sale: pinned events are never evicted for being
// idle, and one missing from the cache (a load that failed, a cache
// dropped) is loaded again in the background by the follower.

// Warm loads an event into this process's hot cache now and keeps it
// there until its sale ends (sales_end_at, else its start); an event whose
// sale has ended is not kept. Publishing an event calls it and announces
// it; every process warms the on-sale events at startup, on each
// announcement and every interval after (RunWarmer), so an event
// published on another process reaches this one at once, or within an
// interval if the announcement was lost.
func (s *Service) Warm(ctx context.Context, org, event uuid.UUID) error {
	e, err := s.store.Event(ctx, org, event)
	if err != nil {
		return err
	}
	until := e.StartsAt
	if e.SalesEndAt != nil {
		until = *e.SalesEndAt
	}
	return s.warm(ctx, store.SaleEvent{Org: org, ID: event, Until: until, Seats: e.Seats})
}

// pin is an event kept loaded until its sale ends.
type pin struct {
	until time.Time
	tried time.Time // the last background reload started
}

// rewarmEvery spaces background reloads of one pinned event that keeps
// failing (Postgres away), so they neither pile up nor flood the log.
const rewarmEvery = 5 * time.Second

func (s *Service) warm(ctx context.Context, e store.SaleEvent) error {
	if !e.Until.After(s.now()) {
		return nil
	}
	s.mu.Lock()
	s.pinned[[2]uuid.UUID{e.Org, e.ID}] = &pin{until: e.Until}
	s.mu.Unlock()
	start := time.Now()
	if _, err := s.event(ctx, e.Org, e.ID); err != nil {
		return err
	}
	s.m.CacheWarms.Inc()
	s.log.Info("warmed event", "org", e.Org, "event", e.ID, "seats", e.Seats, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// RunWarmer warms the events on sale (WarmOnSale) at once, every interval
// after, and whenever a process announces an event it put on sale, until
// ctx ends. An announcement lost (a resubscribe) is a round too; one lost
// otherwise waits for the interval.
func (s *Service) RunWarmer(ctx context.Context, every time.Duration, maxEvents, maxSeats int) {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	stop := s.bus.Subscribe(s.locks.Published(), func([]byte) { poke() }, poke)
	defer stop()
	round := func(ctx context.Context) {
		start := time.Now()
		n, err := s.WarmOnSale(ctx, maxEvents, maxSeats)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("warm on-sale events", "warmed", n, "err", err)
			s.m.BackgroundErrors.WithLabelValues("warm").Inc()
		case n > 0:
			s.log.Info("warmed on-sale events", "events", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	round(ctx)
	loop(ctx, every, kick, round)
}

// WarmOnSale warms the events on sale now or soonest, at most maxEvents
// of them and, past the first, at most maxSeats seats in all (the cache
// holds ~250 bytes a seat). Events already warm count towards the limits
// and are left as they are. It returns how many it warmed; one event
// failing to load does not stop the others.
func (s *Service) WarmOnSale(ctx context.Context, maxEvents, maxSeats int) (int, error) {
	evs, err := s.store.EventsOnSale(ctx, s.now(), maxEvents)
	if err != nil {
		return 0, err
	}
	warmed, kept, seats := 0, 0, 0
	for _, e := range evs {
		if kept > 0 && seats+e.Seats > maxSeats {
			break
		}
		if !s.isPinned(e.Org, e.ID) {
			if err := s.warm(ctx, e); err != nil {
				if ctx.Err() != nil {
					return warmed, ctx.Err()
				}
				s.log.Warn("warm event", "org", e.Org, "event", e.ID, "err", err)
				s.m.BackgroundErrors.WithLabelValues("warm").Inc()
				continue
			}
			warmed++
		}
		kept++
		seats += e.Seats
	}
	return warmed, nil
}

// isPinned reports whether an event is kept warm already (a pinned event
// missing from the cache is reloaded by rewarm).
func (s *Service) isPinned(org, event uuid.UUID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.pinned[[2]uuid.UUID{org, event}]
	return ok
}

// pinnedAt reports whether an event is pinned at now, dropping a pin
// whose time has passed.
func (s *Service) pinnedAt(ev *eventState, now time.Time) bool {
	key := [2]uuid.UUID{ev.org, ev.id}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pinned[key]
	if ok && !p.until.After(now) {
		delete(s.pinned, key)
		return false
	}
	return ok
}

// rewarm loads, in the background (the follower's round does not wait for
// it; Close does), pinned events missing from the cache. A load already
// under way is joined, not repeated (singleflight); an event that no
// longer exists is unpinned. It reports whether any event is pinned.
func (s *Service) rewarm() (pinned bool) {
	now := s.now()
	var missing [][2]uuid.UUID
	s.mu.Lock()
	for key, p := range s.pinned {
		if !p.until.After(now) {
			delete(s.pinned, key)
			continue
		}
		if _, ok := s.events[key]; !ok && now.Sub(p.tried) >= rewarmEvery {
			p.tried = now
			missing = append(missing, key)
		}
	}
	pinned = len(s.pinned) > 0
	s.mu.Unlock()
	for _, key := range missing {
		s.background(func(ctx context.Context) {
			_, err := s.event(ctx, key[0], key[1])
			switch {
			case err == nil:
				s.m.CacheWarms.Inc()
			case apperr.CodeOf(err) == apperr.NotFound:
				s.mu.Lock()
				delete(s.pinned, key)
				s.mu.Unlock()
			case ctx.Err() == nil:
				s.log.Warn("reload pinned event", "org", key[0], "event", key[1], "err", err)
				s.m.BackgroundErrors.WithLabelValues("warm").Inc()
			}
		})
	}
	return pinned
}
