package hold

// The fallback path, while Redis cannot be used: Postgres alone takes the
// holds (docs/architecture.md#the-hold-algorithm).

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// holdFallback is the Postgres-only path: NOWAIT row locks in seat order,
// so a crowd on one seat is refused at once instead of queueing.
func (h *Holds) holdFallback(ctx context.Context, ev *eventState, seats []store.Seat, p store.HoldParams,
	label func(uuid.UUID) string) (Result, error) {
	p.NoWait = true
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
		return h.finish(ctx, ev, seats, out, p.User, label, nil)
	}
}
