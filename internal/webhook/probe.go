package webhook

import (
	"context"
	"time"

	"seatd/internal/store"
)

// An endpoint whose last attempts all failed is failing
// (store.FinishDeliveries marks it). Attempts to it are probes: a claim
// takes at most one per failing endpoint and no more than the worker has
// free probe places (Options.Probes), and they are sent apart from the
// batch, which does not wait for them. A receiver that accepts
// connections and never answers makes each attempt wait out the timeout
// (10 s by default); in the batch, every other organization's deliveries
// would have waited that long with it, round after round, for as long as
// its backlog lasted. A probe that succeeds clears the mark, and the
// endpoint's backlog goes out in full batches again.

// probe starts the probes among claimed, each on a goroutine of its own
// holding a probe place until its outcome is recorded, and returns the
// rest: the batch.
func (w *Worker) probe(ctx context.Context, claimed []store.Claimed) []store.Claimed {
	batch := claimed[:0:0]
	for _, d := range claimed {
		if !d.Failing {
			batch = append(batch, d)
			continue
		}
		w.probing <- struct{}{} // the claim took no more than the free places
		w.probes.Go(func() {
			defer func() { <-w.probing }()
			a, cut := w.send(ctx, d)
			if err := w.record(ctx, []store.Attempt{a}, []bool{cut}); err != nil {
				w.log.Warn("webhook probe outcome", "delivery", d.PublicID, "err", err)
				return
			}
			if !cut && a.State == store.DeliveryPending {
				w.mu.Lock()
				if w.probeRetry.IsZero() || a.NextAt.Before(w.probeRetry) {
					w.probeRetry = a.NextAt
				}
				w.mu.Unlock()
			}
			// Wake the loop: a place is free, and the retry is scheduled.
			select {
			case w.probed <- struct{}{}:
			default:
			}
		})
	}
	return batch
}

// takeProbeRetry returns the earliest retry the probes that ended since
// the last call scheduled (zero: none), and forgets it.
func (w *Worker) takeProbeRetry() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.probeRetry
	w.probeRetry = time.Time{}
	return r
}
