package hold

// The reaper: holds past their time expire, in every process, without
// doing the same work twice (docs/architecture.md#background-work).

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/seatlock"
	"seatd/internal/store"
)

// Reaper expires holds past their time and forgets old keyed requests.
type Reaper struct {
	e *Engine
}

// NewReaper builds the reaper of the engine's holds.
func NewReaper(e *Engine) *Reaper { return &Reaper{e: e} }

// Reap expires holds past their time, in batches, until none is left, and
// returns how many it expired. Every process runs it; SKIP LOCKED keeps
// them from doing the same work twice.
func (r *Reaper) Reap(ctx context.Context) (int, error) {
	start := r.e.now()
	defer func() {
		r.e.m.ReaperRuns.Inc()
		r.e.m.ReaperDuration.Observe(r.e.now().Sub(start).Seconds())
	}()
	total := 0
	for {
		hs, err := r.e.store.Holds.ReapExpired(ctx, r.e.opt.ReaperBatch)
		if err != nil {
			// If the batch committed after all, the feed tells every
			// process, and Redis follows it.
			return total, err
		}
		total += len(hs)
		r.e.m.Expired.Add(float64(len(hs)))
		reaped := r.e.now()
		type key = [2]uuid.UUID
		byEvent := map[key][]store.Hold{}
		for _, h := range hs {
			r.e.m.ReaperLag.Observe(max(reaped.Sub(h.HeldUntil).Seconds(), 0))
			byEvent[key{h.OrgID, h.EventID}] = append(byEvent[key{h.OrgID, h.EventID}], h)
		}
		now := r.e.now()
		for k, group := range byEvent {
			ds := make([]Delta, len(group))
			rs := make([]seatlock.Released, len(group))
			for i, h := range group {
				ds[i] = holdDelta(h, KindExpired, store.Available, store.Held, uuid.Nil, now)
				rs[i] = seatlock.Released{Seat: h.SeatID, HoldID: h.ID, Version: h.SeatVersion}
			}
			r.e.releaseLocks(ctx, k[0], k[1], rs)
			r.e.commit(ctx, k[0], k[1], ds)
		}
		if len(hs) < r.e.opt.ReaperBatch {
			r.e.m.ReaperLastSuccess.Set(float64(r.e.now().UnixNano()) / 1e9)
			return total, nil
		}
	}
}

// Run reaps every Options.ReapEvery until ctx ends, and prunes keyed
// hold requests once an hour.
func (r *Reaper) Run(ctx context.Context) {
	var pruned time.Time
	loop(ctx, r.e.opt.ReapEvery, nil, func(ctx context.Context) {
		if n, err := r.Reap(ctx); err != nil && ctx.Err() == nil {
			r.e.m.BackgroundErrors.WithLabelValues("reaper").Inc()
			r.e.log.Error("reaper", "err", err)
		} else if n > 0 {
			r.e.log.Info("reaper expired holds", "count", n)
		}
		if now := r.e.now(); now.Sub(pruned) >= time.Hour {
			pruned = now
			r.pruneHoldRequests(ctx, now)
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
func (r *Reaper) pruneHoldRequests(ctx context.Context, now time.Time) {
	total := int64(0)
	for {
		n, err := r.e.store.Holds.PruneRequests(ctx, now.Add(-holdRequestKeep), 10_000)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				r.e.m.BackgroundErrors.WithLabelValues("prune_hold_requests").Inc()
				r.e.log.Warn("prune keyed hold requests", "err", err)
			}
			return
		}
		if n < 10_000 {
			break
		}
	}
	if total > 0 {
		r.e.log.Info("pruned keyed hold requests", "count", total)
	}
}
