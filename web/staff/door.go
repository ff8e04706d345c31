package staff

import (
	"net/http"
	"strings"
	"unicode/utf8"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/ticket"
	"seatd/views"
)

// Door is door staff's pages: the events to scan for, and the scanner of
// one event at one entrance (static/js/door.js drives it through the
// check-in API, docs/architecture.md#check-ins).
type Door struct {
	frame *frame
}

// Events lists the events the organization sells, to pick one and an
// entrance.
func (p *Door) Events(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	evs, err := p.frame.visible.List(r.Context(), a)
	if err != nil {
		return err
	}
	var out []views.DoorEvent
	for _, e := range evs {
		if e.Status == store.EventDraft {
			continue
		}
		out = append(out, doorEvent(e))
	}
	p.frame.render.Render(w, r, http.StatusOK, views.DoorEventsPage(p.frame.render.Meta(r, "Scan tickets"), out))
	return nil
}

// Scanner is the scanner page of the path's event at the entrance the
// query names.
func (p *Door) Scanner(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.frame.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	entrance := strings.TrimSpace(r.URL.Query().Get("entrance"))
	if entrance == "" || utf8.RuneCountInString(entrance) > 60 {
		return &apperr.Error{Code: apperr.Invalid, Message: "name the entrance you scan at (up to 60 characters)",
			Fields: map[string]string{"entrance": "is required, up to 60 characters"}}
	}
	p.frame.render.Render(w, r, http.StatusOK, views.ScannerPage(p.frame.render.Meta(r, "Scanner: "+ev.Name),
		views.Scanner{Event: doorEvent(ev), Entrance: entrance}))
	return nil
}

func doorEvent(e store.Event) views.DoorEvent {
	return views.DoorEvent{ID: e.ID.String(), Name: e.Name,
		When: ticket.Event{StartsAt: e.StartsAt, TimeZone: e.TimeZone}.When()}
}
