package hold

// The fallback path, while Redis cannot be used: Postgres alone takes the
// holds (docs/architecture.md#the-hold-algorithm).

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// holdFallback is the Postgres-only path. A single seat goes in the shared
// hold statement, as on the fast path: the statement takes the seat only
// if it is free and its fence is below ours. Several seats, or a hold
// under the strict orphan rule, get a transaction of their own with row
// locks in seat order that wait at most briefly, so a crowd on one seat is
// refused quickly instead of queueing (store.HoldParams.ShortWait).
func (h *Holds) holdFallback(ctx context.Context, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	p.ShortWait = true
	for attempt := 0; ; attempt++ {
		fence := ev.fence() + 1
		p.Seats = make([]store.HoldRequest, len(seats))
		for i, st := range seats {
			p.Seats[i] = store.HoldRequest{SeatID: st.ID, HoldID: store.NewID(), Fence: fence}
		}
		h.e.m.PGHoldWrites.Inc()
		out, err := h.e.store.Holds.Create(context.WithoutCancel(ctx), p)
		if err != nil {
			return Result{}, fmt.Errorf("create holds (fallback): %w", err)
		}
		if len(out.Stale) > 0 && attempt < 3 {
			for _, st := range out.Stale {
				ev.bumpFence(st.Fence)
			}
			continue
		}
		if len(seats) == 1 && !out.NotOnSale && len(out.Orphans) == 0 && len(unanswered(p.Seats, out)) == 1 {
			// The shared statement did not take the seat, and the read
			// after it found the seat free: a hold on it ended in between.
			// Try again; a seat that keeps slipping away is answered taken.
			if attempt < 3 {
				continue
			}
			h.e.m.HoldConflict.WithLabelValues("postgres").Inc()
			return Result{}, seatTaken([]uuid.UUID{seats[0].ID}, label)
		}
		return h.finish(ctx, ev, seats, out, p.User, label, nil, nil)
	}
}
