package hold

// What staff watch of an event's state: the Monitor job, and the
// occupancy snapshots it records for the organizer's chart.

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// Monitor answers staff's questions about an event's state — its
// occupancy (occupancy.go), recorded snapshots, whether the tiers agree
// (registry.go) — and reconciles them.
type Monitor struct {
	e        *Engine
	follower *Follower
}

// NewMonitor builds the monitor on the engine; a reconcile runs a round
// of follower.
func NewMonitor(e *Engine, follower *Follower) *Monitor { return &Monitor{e: e, follower: follower} }

// Run records the occupancy of every cached event every
// Options.SnapshotEvery (the points of the organizer's chart) until ctx
// ends.
func (mo *Monitor) Run(ctx context.Context) {
	loop(ctx, mo.e.opt.SnapshotEvery, nil, func(ctx context.Context) {
		for _, ev := range mo.e.cachedEvents() {
			o := occupancyOf(ev.occupancy())
			if err := mo.e.store.Events.SaveSnapshot(ctx, ev.org, ev.id, o.Counts); err != nil && ctx.Err() == nil {
				mo.e.log.Warn("save occupancy snapshot", "event", ev.id, "err", err)
			}
		}
	})
}

// Snapshots returns an event's recorded occupancy since a time.
func (mo *Monitor) Snapshots(ctx context.Context, a Actor, event uuid.UUID, since time.Time) ([]store.Snapshot, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only staff can see occupancy")
	}
	if _, err := mo.e.event(ctx, a.Org, event); err != nil {
		return nil, err
	}
	return mo.e.store.Events.Snapshots(ctx, a.Org, event, since)
}
