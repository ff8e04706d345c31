package hold

// Staff blocking a seat from sale, or putting it back on sale.

import (
	"context"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// SetBlocked blocks an available seat or unblocks a blocked one
// (organizers only).
func (h *Holds) SetBlocked(ctx context.Context, a Actor, event, seat uuid.UUID, blocked bool, reason string) (int64, error) {
	if a.Role != RoleOrganizer && a.Role != RoleBoxOffice {
		return 0, apperr.E(apperr.Forbidden, "only staff can block seats")
	}
	if _, err := h.e.event(ctx, a.Org, event); err != nil {
		return 0, err
	}
	version, err := h.e.store.Holds.SetBlocked(ctx, a.Org, event, seat, a.User, blocked, reason)
	if err != nil {
		return 0, err
	}
	d := Delta{Org: a.Org, Event: event, Seat: seat, Kind: KindBlocked, Status: store.Blocked, Prev: store.Available,
		Version: version, Actor: a.User, At: h.e.now()}
	if !blocked {
		d.Kind, d.Status, d.Prev = KindUnblocked, store.Available, store.Blocked
	}
	h.e.commit(ctx, a.Org, event, []Delta{d})
	return version, nil
}
