package live

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
)

// pushLine is the function given to WaitlistSource.WatchWaitlist. Like
// push it runs on the goroutine that made the change, so it only records
// the change and wakes the line pump.
func (t *topic) pushLine(c hold.WaitlistChange) {
	t.putLine(c.Line, c.Users)
	select {
	case t.lwake <- struct{}{}:
	default: // the pump is already due to run
	}
}

// putLine records waitlist changes not yet rendered.
func (t *topic) putLine(all bool, users []uuid.UUID) {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	if t.stopped {
		return
	}
	t.lineAll = t.lineAll || all
	for _, u := range users {
		t.lineUsers[u] = struct{}{}
	}
}

// takeLine empties the waitlist changes not yet rendered.
func (t *topic) takeLine() (all bool, users []uuid.UUID) {
	t.pmu.Lock()
	defer t.pmu.Unlock()
	all, t.lineAll = t.lineAll, false
	for u := range t.lineUsers {
		users = append(users, u)
	}
	clear(t.lineUsers)
	return all, users
}

// retryPump runs flush each time wake fires, until the topic stops or
// the hub shuts down. One render at a time per event: changes that come
// during a render wait for the next one, which takes them all, so a burst
// of changes costs two renders at most, whatever its size. A render that
// failed (flush reports false) is tried again after retry. The waitlist
// panels and the door figures are pumped so.
func (h *Hub) retryPump(t *topic, wake <-chan struct{}, retry time.Duration, flush func(*topic) bool) {
	for {
		select {
		case <-t.quit:
			return
		case <-h.ctx.Done():
			return
		case <-wake:
		}
		for !flush(t) {
			timer := time.NewTimer(retry)
			select {
			case <-t.quit:
				timer.Stop()
				return
			case <-h.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
	}
}

// flushLine renders the panels of the buyers here whose panel may have
// changed and offers each of their seat-map sockets its own; a client
// whose queue is full is dropped. Buyers with no entries get nothing,
// unless their own entries changed (they left from another page): they
// get the empty panel. Dashboard sockets get the staff panel, rendered
// once for all of them, after any change. It reports false when a render
// failed; the changes are then kept for the next try.
func (h *Hub) flushLine(t *topic) bool {
	all, changed := t.takeLine()
	t.mu.Lock()
	var users []uuid.UUID
	if all {
		users = make([]uuid.UUID, 0, len(t.users))
		for u := range t.users {
			users = append(users, u)
		}
	} else {
		for _, u := range changed {
			if t.users[u] > 0 {
				users = append(users, u)
			}
		}
	}
	dashboards := (all || len(changed) > 0) && t.streams[StreamDashboard] > 0
	t.mu.Unlock()
	if len(users) == 0 && !dashboards {
		// Nobody here whose panel changed: no query at all.
		return true
	}

	ctx, cancel := context.WithTimeout(h.ctx, t.wl.RenderTimeout)
	var panels map[uuid.UUID][]byte
	var cleared, staff []byte
	var err error
	if len(users) > 0 {
		panels, cleared, err = t.wl.Renderer.RenderWaitlists(ctx, t.key.org, t.key.event, users)
	}
	if err == nil && dashboards {
		staff, err = t.wl.Renderer.RenderStaffWaitlist(ctx, t.key.org, t.key.event)
	}
	cancel()
	h.metrics.lineRenders.Inc()
	if err != nil {
		if h.ctx.Err() != nil {
			return true // shutting down
		}
		h.metrics.lineErrors.Inc()
		h.log.Error("live: render waitlist panels", "org", t.key.org, "event", t.key.event, "users", len(users), "err", err)
		t.putLine(all, changed)
		return false
	}

	own := make(map[uuid.UUID]bool, len(changed))
	for _, u := range changed {
		own[u] = true
	}
	var slow []*client
	t.mu.Lock()
	for c := range t.clients {
		var p []byte
		switch c.v.Stream {
		case StreamSeats:
			// Each socket gets its own buyer's panel and nobody else's.
			var ok bool
			if p, ok = panels[c.v.Actor.User]; !ok && own[c.v.Actor.User] {
				p = cleared
			}
		case StreamDashboard:
			p = staff
		}
		if len(p) == 0 {
			continue
		}
		if !c.offer(frame{p}, time.Time{}) {
			h.metrics.dropped[c.v.Stream].Inc()
			slow = append(slow, c)
		}
	}
	t.mu.Unlock()
	for _, c := range slow {
		h.drop(c)
	}
	return true
}
