package staff

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
	"seatd/web/httpx"
	"seatd/web/render"
)

// Waitlist is the dashboard's waitlist panel.
func (p *Dashboard) Waitlist(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	event, err := httpx.PathID(r, "event")
	if err != nil {
		return err
	}
	n, first, err := p.waitlist.Line(r.Context(), a, event, staffWaitlistFirst)
	if err != nil {
		return err
	}
	p.render.Render(w, r, http.StatusOK, views.StaffWaitlistPanel(staffWaitlistVM(event, n, first), false))
	return nil
}

// staffWaitlistFirst is how many of the line the dashboard lists.
const staffWaitlistFirst = 10

func staffWaitlistVM(event uuid.UUID, waiting int, first []store.WaitlistEntry) views.StaffWaitlist {
	vm := views.StaffWaitlist{EventID: event.String(), Waiting: waiting}
	for _, e := range first {
		vm.First = append(vm.First, render.WaitEntry(e))
	}
	return vm
}

// WaitlistPanel renders the dashboard's waitlist panel for the live hub
// (the dashboard's half of live.WaitlistRenderer; the buyers' panels are
// web/pages').
type WaitlistPanel struct {
	store WaitlistReads
}

// RenderStaffWaitlist renders the dashboard's waitlist panel, out of band
// (live.WaitlistRenderer).
func (lp *WaitlistPanel) RenderStaffWaitlist(ctx context.Context, org, event uuid.UUID) ([]byte, error) {
	n, first, err := lp.store.OfEvent(ctx, org, event, staffWaitlistFirst)
	if err != nil {
		return nil, err
	}
	return render.Bytes(ctx, views.StaffWaitlistPanel(staffWaitlistVM(event, n, first), true))
}
