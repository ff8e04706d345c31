package staff

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// Staff releasing buyers' holds from the box office, and the notice the
// buyer's seat map shows.

const (
	// releaseMax caps the holds one release form may name.
	releaseMax = 500
)

// Release releases the selected holds with a reason (the core writes
// it to the audit log) and goes back to the box office. Every hold must be
// one of this event's holds in the session's organization: otherwise the
// answer is 404, as for a hold that does not exist, and nothing is
// released.
func (p *BoxOffice) Release(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	f, err := p.boxForm(w, r, a)
	if err != nil {
		return err
	}
	ev, v := f.ev, f.v
	back := f.back + holdFilter(v).Query()
	if len(v["hold_id"]) > releaseMax {
		return apperr.E(apperr.Invalid, "release at most %d holds at once", releaseMax)
	}
	ids, err := httpx.BodyIDs("hold_id", v["hold_id"])
	if err != nil {
		return err
	}
	slices.SortFunc(ids, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	ids = slices.Compact(ids)
	reason := strings.TrimSpace(v.Get("reason"))
	ctx := r.Context()
	switch {
	case len(ids) == 0:
		return p.backWith(w, r, back, "Select the holds to release first.")
	case reason == "":
		return p.backWith(w, r, back, "Give a reason for releasing; it is kept in the audit log.")
	case utf8.RuneCountInString(reason) > reasonMax:
		return p.backWith(w, r, back, fmt.Sprintf("The reason is too long (at most %d characters).", reasonMax))
	}
	for _, id := range ids {
		h, err := p.holdByID.ByID(ctx, a.Org, id)
		if err != nil {
			return err
		}
		if h.EventID != ev.ID {
			return apperr.E(apperr.NotFound, "hold not found")
		}
	}
	var released []string
	ended := 0
	for _, id := range ids {
		h, err := p.release.Release(ctx, a, id, reason)
		switch {
		case err == nil:
			released = append(released, p.seats.SeatLabel(ctx, a, ev.ID, h.SeatID))
		case apperr.CodeOf(err) == apperr.NotFound:
			ended++ // ended meanwhile: expired, bought or released by someone else
		default:
			return err
		}
	}
	var msg []string
	if len(released) > 0 {
		slices.Sort(released)
		msg = append(msg, fmt.Sprintf("Released %d %s (%s).", len(released), plural(len(released), "hold", "holds"),
			strings.Join(released, ", ")))
	}
	if ended > 0 {
		msg = append(msg, fmt.Sprintf("%d had already ended.", ended))
	}
	return p.backWith(w, r, back, strings.Join(msg, " "))
}

// ReleaseNotice is what a buyer's seat map is told when staff released
// their hold (live.StaffOptions.Notice).
func (p *BoxOffice) ReleaseNotice(d hold.Delta) []byte {
	label := d.Seat.String()
	if st, ok := p.seats.SeatLayout(d.Org, d.Event, d.Seat); ok {
		label = st.Label()
	}
	b, err := render.Bytes(context.Background(), views.ReleaseNotice(label))
	if err != nil {
		return nil
	}
	return b
}
