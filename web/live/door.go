package live

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/hold"
)

// DoorSource tells the hub when tickets of an event are admitted at the
// door; *door.Door satisfies it. WatchAdmissions must call f after every
// admission recorded for the event (in any process), and once more after
// it may have missed some (a reconnect of the bus), until the returned
// function is called; f never blocks.
type DoorSource interface {
	WatchAdmissions(ctx context.Context, a hold.Actor, event uuid.UUID, f func()) (func(), error)
}

// DoorRenderer renders the dashboard's door figures (admitted of valid
// tickets, per entrance) as an out-of-band fragment; the hub calls it at
// most once per burst of admissions and event, only while a dashboard of
// the event is open here.
type DoorRenderer interface {
	RenderDoor(ctx context.Context, org, event uuid.UUID) ([]byte, error)
}

// DoorOptions enable the door figures on dashboard sockets; see
// EnableDoor.
type DoorOptions struct {
	// Source and Renderer are required.
	Source   DoorSource
	Renderer DoorRenderer
	// RenderTimeout bounds one RenderDoor call (5s).
	RenderTimeout time.Duration
	// Retry is how long after a failed render the figures are rendered
	// again (1s); admissions meanwhile join that render.
	Retry time.Duration
}

func (o DoorOptions) withDefaults() DoorOptions {
	if o.RenderTimeout <= 0 {
		o.RenderTimeout = 5 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = time.Second
	}
	return o
}

// EnableDoor turns on live door figures on dashboard sockets: after
// admissions to an event, its dashboards connected here are sent the
// figures again, rendered once for all of them. Call it once, before the
// first Serve; events already watched keep their old settings.
func (h *Hub) EnableDoor(o DoorOptions) {
	if o.Source == nil || o.Renderer == nil {
		panic("live: EnableDoor without a Source or Renderer")
	}
	o = o.withDefaults()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.door = &o
}

// pushDoor is the function given to DoorSource.WatchAdmissions: it only
// wakes the door pump, which reads the figures as they then are, so a
// burst of admissions costs one render or two.
func (t *topic) pushDoor() {
	select {
	case t.dwake <- struct{}{}:
	default: // the pump is already due to run
	}
}

// flushDoor sends the event's door figures to its dashboard sockets here
// (none open: no query); a client whose queue is full is dropped. It
// reports false when the render failed.
func (h *Hub) flushDoor(t *topic) bool {
	t.mu.Lock()
	dashboards := t.streams[StreamDashboard] > 0
	t.mu.Unlock()
	if !dashboards {
		return true
	}
	ctx, cancel := context.WithTimeout(h.ctx, t.door.RenderTimeout)
	p, err := t.door.Renderer.RenderDoor(ctx, t.key.org, t.key.event)
	cancel()
	if err != nil {
		if h.ctx.Err() != nil {
			return true // shutting down
		}
		h.log.Error("live: render door figures", "org", t.key.org, "event", t.key.event, "err", err)
		return false
	}
	if len(p) == 0 {
		return true
	}
	var slow []*client
	t.mu.Lock()
	for c := range t.clients {
		if c.v.Stream != StreamDashboard {
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
