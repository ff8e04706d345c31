package door

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
)

// Counts are an event's figures at the door, for the live dashboard.
type Counts struct {
	Admitted  int             `json:"admitted"`
	Expected  int             `json:"expected"` // live tickets
	Conflicts int             `json:"conflicts"`
	Entrances []EntranceCount `json:"entrances"` // by name
}

// EntranceCount is how many got in at one entrance.
type EntranceCount struct {
	Name     string `json:"name"`
	Admitted int    `json:"admitted"`
}

// Counts reads an event's figures at the door (staff and door staff).
func (d *Door) Counts(ctx context.Context, a hold.Actor, event uuid.UUID) (Counts, error) {
	if err := scanner(a); err != nil {
		return Counts{}, err
	}
	if err := d.st.EventExists(ctx, a.Org, event); err != nil {
		return Counts{}, err
	}
	c, err := d.st.Counts(ctx, a.Org, event)
	if err != nil {
		return Counts{}, err
	}
	out := Counts{Admitted: c.Admitted, Expected: c.Expected, Conflicts: c.Conflicts, Entrances: make([]EntranceCount, len(c.Entrances))}
	for i, e := range c.Entrances {
		out.Entrances[i] = EntranceCount{Name: e.Name, Admitted: e.Admitted}
	}
	return out, nil
}

// Conflict is a scan that let someone in who should not have been: a
// ticket admitted again while scanners were offline ("duplicate"), or a
// cancelled ticket an offline scanner did not know about ("cancelled").
type Conflict struct {
	ID        uuid.UUID `json:"id"`
	Ticket    uuid.UUID `json:"ticket"`
	Seat      string    `json:"seat"`
	Reason    string    `json:"reason"`
	Entrance  string    `json:"entrance"`
	ScannedAt time.Time `json:"scanned_at"`
	ScannedBy string    `json:"scanned_by"` // the scanner's email
	// Admission is the ticket's admission that stands (duplicates).
	Admission  *Admission `json:"admission,omitempty"`
	RecordedAt time.Time  `json:"recorded_at"`
}

// Admission is where and when a ticket got in.
type Admission struct {
	Entrance string    `json:"entrance"`
	At       time.Time `json:"at"`
}

// Conflicts lists an event's flagged scans, oldest first (staff).
func (d *Door) Conflicts(ctx context.Context, a hold.Actor, event uuid.UUID) ([]Conflict, error) {
	if !a.Staff() {
		return nil, apperr.E(apperr.Forbidden, "only the box office and organizers see conflicts at the door")
	}
	if err := d.st.EventExists(ctx, a.Org, event); err != nil {
		return nil, err
	}
	cs, err := d.st.Conflicts(ctx, a.Org, event)
	if err != nil {
		return nil, err
	}
	out := make([]Conflict, len(cs))
	for i, c := range cs {
		out[i] = Conflict{ID: c.ID, Ticket: c.Ticket, Seat: c.Seat, Reason: c.Reason, Entrance: c.Entrance,
			ScannedAt: c.ScannedAt, ScannedBy: c.ByEmail, RecordedAt: c.RecordedAt}
		if !c.AdmittedScannedAt.IsZero() {
			out[i].Admission = &Admission{Entrance: c.AdmittedEntrance, At: c.AdmittedScannedAt}
		}
	}
	return out, nil
}

// attendeePage bounds a page of the attendee list.
const attendeePage = 100

// Attendees reads a page of an event's attendee list for the organizer
// and the box office (door staff see who a ticket is for only as they
// scan it): every ticket in seat order with its holder and admission,
// after the seat idx given (-1 for the first page), filtered by query.
// more says a further page follows.
func (d *Door) Attendees(ctx context.Context, a hold.Actor, event uuid.UUID, query string, after int) (list []store.Attendee, more bool, err error) {
	if a.Role != hold.RoleOrganizer && a.Role != hold.RoleBoxOffice {
		return nil, false, apperr.E(apperr.Forbidden, "only organizers and the box office see the attendee list")
	}
	if err := d.st.EventExists(ctx, a.Org, event); err != nil {
		return nil, false, err
	}
	list, err = d.st.Attendees(ctx, a.Org, event, store.AttendeeFilter{Query: query, After: after, Limit: attendeePage + 1})
	if len(list) > attendeePage {
		return list[:attendeePage], true, err
	}
	return list, false, err
}
