package staff

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/views"
)

// AttendeeList reads an event's attendees and its figures at the door;
// *door.Door satisfies it.
type AttendeeList interface {
	Attendees(ctx context.Context, a hold.Actor, event uuid.UUID, query string, after int) ([]store.Attendee, bool, error)
	Counts(ctx context.Context, a hold.Actor, event uuid.UUID) (door.Counts, error)
}

// Attendees is an event's attendee list: every ticket, whose it is and
// whether it was admitted, searchable, a page at a time in seat order.
type Attendees struct {
	*frame
	door AttendeeList
}

// Page shows a page of the path's event's attendees (?q= searches, ?after=
// pages on).
func (p *Attendees) Page(w http.ResponseWriter, r *http.Request, a hold.Actor) error {
	ev, err := p.visible.FromPath(r, a)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	l := views.AttendeeList{EventID: ev.ID.String(), EventName: ev.Name, Query: strings.TrimSpace(q.Get("q")),
		Organizer: a.Role == hold.RoleOrganizer}
	if utf8.RuneCountInString(l.Query) > 254 || !utf8.ValidString(l.Query) {
		return &apperr.Error{Code: apperr.Invalid, Message: "search for an email, a booking reference or a name (up to 254 characters)",
			Fields: map[string]string{"q": "up to 254 characters"}}
	}
	after := -1
	if s := q.Get("after"); s != "" {
		if after, err = strconv.Atoi(s); err != nil || after < 0 {
			return &apperr.Error{Code: apperr.Invalid, Message: "after must be a seat position from the list's next link",
				Fields: map[string]string{"after": "a non-negative number"}}
		}
	}
	l.First = after < 0
	rows, more, err := p.door.Attendees(r.Context(), a, ev.ID, l.Query, after)
	if err != nil {
		return err
	}
	c, err := p.door.Counts(r.Context(), a, ev.ID)
	if err != nil {
		return err
	}
	l.Admitted, l.Expected = c.Admitted, c.Expected
	for _, e := range c.Entrances {
		l.Entrances = append(l.Entrances, views.EntranceCount{Name: e.Name, Admitted: e.Admitted})
	}
	for _, t := range rows {
		l.Rows = append(l.Rows, views.Attendee{Ticket: t.Ticket.String(), Seat: t.Seat, Category: t.Category,
			Reference: store.FormatReference(t.Reference), Name: t.Name, Email: t.Email, Cancelled: t.Cancelled,
			AdmittedAt: t.AdmittedAt, Entrance: t.Entrance})
	}
	if more {
		v := url.Values{"after": {strconv.Itoa(rows[len(rows)-1].Idx)}}
		if l.Query != "" {
			v.Set("q", l.Query)
		}
		l.Next = "/admin/events/" + ev.ID.String() + "/attendees?" + v.Encode()
	}
	p.page(w, r, ev, views.AttendeesPage(p.render.Meta(r, ev.Name+" · attendees"), l))
	return nil
}
