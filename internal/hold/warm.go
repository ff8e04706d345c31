package hold

// Warming: on-sale events are loaded before their first buyer and kept
// loaded while on sale (docs/architecture.md#background-work).

import (
	"context"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Warmer loads on-sale events into the engine's hot cache before their
// first buyer asks (the first hold on an event not in the cache waits for
// every seat to load, and so does every request behind it, at the very
// second a sale opens) and keeps them there while on sale: pinned events
// are never evicted for being idle, and one missing from the cache (a
// load that failed, a cache dropped) is loaded again in the background at
// the follower's round.
type Warmer struct {
	e  *Engine
	mu sync.Mutex
	// pinned are events kept loaded while on sale, until when.
	pinned map[[2]uuid.UUID]*pin
}

// NewWarmer builds the warmer of the engine's cache.
func NewWarmer(e *Engine) *Warmer { return &Warmer{e: e, pinned: map[[2]uuid.UUID]*pin{}} }

// Warm loads an event into this process's hot cache now and keeps it
// there until its sale ends (sales_end_at, else its start); an event whose
// sale has ended is not kept. Publishing an event calls it and announces
// it; every process warms the on-sale events at startup, on each
// announcement and every interval after (Run), so an event published on
// another process reaches this one at once, or within an interval if the
// announcement was lost.
func (w *Warmer) Warm(ctx context.Context, org, event uuid.UUID) error {
	e, err := w.e.store.Events.Event(ctx, org, event)
	if err != nil {
		return err
	}
	until := e.StartsAt
	if e.SalesEndAt != nil {
		until = *e.SalesEndAt
	}
	return w.warm(ctx, store.SaleEvent{Org: org, ID: event, Until: until, Seats: e.Seats})
}

// pin is an event kept loaded until its sale ends.
type pin struct {
	until time.Time
	tried time.Time // the last background reload started
}

// rewarmEvery spaces background reloads of one pinned event that keeps
// failing (Postgres away), so they neither pile up nor flood the log.
const rewarmEvery = 5 * time.Second

func (w *Warmer) warm(ctx context.Context, e store.SaleEvent) error {
	if !e.Until.After(w.e.now()) {
		return nil
	}
	w.mu.Lock()
	w.pinned[[2]uuid.UUID{e.Org, e.ID}] = &pin{until: e.Until}
	w.mu.Unlock()
	start := time.Now()
	if _, err := w.e.event(ctx, e.Org, e.ID); err != nil {
		return err
	}
	w.e.m.CacheWarms.Inc()
	w.e.log.Info("warmed event", "org", e.Org, "event", e.ID, "seats", e.Seats, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// Run warms the events on sale (WarmOnSale) at once, every
// Options.WarmEvery after, and whenever a process announces an event it
// put on sale, until ctx ends. An announcement lost (a resubscribe) is a
// round too; one lost otherwise waits for the interval.
func (w *Warmer) Run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	poke := func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	stop := w.e.bus.Subscribe(w.e.locks.Published(), func([]byte) { poke() }, poke)
	defer stop()
	round := func(ctx context.Context) {
		start := time.Now()
		n, err := w.WarmOnSale(ctx, w.e.opt.WarmEvents, w.e.opt.WarmSeats)
		switch {
		case err != nil && ctx.Err() == nil:
			w.e.log.Warn("warm on-sale events", "warmed", n, "err", err)
			w.e.m.BackgroundErrors.WithLabelValues("warm").Inc()
		case n > 0:
			w.e.log.Info("warmed on-sale events", "events", n, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	round(ctx)
	loop(ctx, w.e.opt.WarmEvery, kick, round)
}

// WarmOnSale warms the events on sale now or soonest, at most maxEvents
// of them and, past the first, at most maxSeats seats in all (the cache
// holds ~250 bytes a seat). Events already warm count towards the limits
// and are left as they are. It returns how many it warmed; one event
// failing to load does not stop the others.
func (w *Warmer) WarmOnSale(ctx context.Context, maxEvents, maxSeats int) (int, error) {
	evs, err := w.e.store.Events.OnSale(ctx, w.e.now(), maxEvents)
	if err != nil {
		return 0, err
	}
	warmed, kept, seats := 0, 0, 0
	for _, e := range evs {
		if kept > 0 && seats+e.Seats > maxSeats {
			break
		}
		if !w.isPinned(e.Org, e.ID) {
			if err := w.warm(ctx, e); err != nil {
				if ctx.Err() != nil {
					return warmed, ctx.Err()
				}
				w.e.log.Warn("warm event", "org", e.Org, "event", e.ID, "err", err)
				w.e.m.BackgroundErrors.WithLabelValues("warm").Inc()
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
func (w *Warmer) isPinned(org, event uuid.UUID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.pinned[[2]uuid.UUID{org, event}]
	return ok
}

// pinnedAt reports whether an event is pinned at now, dropping a pin
// whose time has passed.
func (w *Warmer) pinnedAt(ev *eventState, now time.Time) bool {
	key := [2]uuid.UUID{ev.org, ev.id}
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.pinned[key]
	if ok && !p.until.After(now) {
		delete(w.pinned, key)
		return false
	}
	return ok
}

// rewarm loads, in the background (the follower's round does not wait for
// it; Engine.Close does), pinned events missing from the cache. A load
// already under way is joined, not repeated (singleflight); an event that
// no longer exists is unpinned. It reports whether any event is pinned.
func (w *Warmer) rewarm() (pinned bool) {
	now := w.e.now()
	var missing [][2]uuid.UUID
	w.mu.Lock()
	for key, p := range w.pinned {
		if !p.until.After(now) {
			delete(w.pinned, key)
			continue
		}
		if w.e.cached(key[0], key[1]) == nil && now.Sub(p.tried) >= rewarmEvery {
			p.tried = now
			missing = append(missing, key)
		}
	}
	pinned = len(w.pinned) > 0
	w.mu.Unlock()
	for _, key := range missing {
		w.e.background(func(ctx context.Context) {
			_, err := w.e.event(ctx, key[0], key[1])
			switch {
			case err == nil:
				w.e.m.CacheWarms.Inc()
			case apperr.CodeOf(err) == apperr.NotFound:
				w.mu.Lock()
				delete(w.pinned, key)
				w.mu.Unlock()
			case ctx.Err() == nil:
				w.e.log.Warn("reload pinned event", "org", key[0], "event", key[1], "err", err)
				w.e.m.BackgroundErrors.WithLabelValues("warm").Inc()
			}
		})
	}
	return pinned
}
