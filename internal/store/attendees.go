package store

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Attendee is one ticket of an event as the organizer's attendee list
// shows it: whose it is, where, and whether it was admitted.
type Attendee struct {
	Ticket    uuid.UUID
	Idx       int    // the seat's place in the event's order: the list's order and cursor
	Seat      string // B-A-12, or a standing place's label
	Category  string // the category's name; "" without one
	Reference string // the booking's, XXXXXXXX
	Name      string // the box-office customer's; "" for a sale on the web
	Email     string // the box-office customer's, or the buyer's account
	Cancelled bool
	// AdmittedAt and Entrance say when and where the ticket was admitted;
	// zero and "" until it is.
	AdmittedAt time.Time
	Entrance   string
}

// AttendeeFilter picks a page of an event's attendee list.
type AttendeeFilter struct {
	// Query matches the start of an email, a booking reference (with or
	// without its dash) or part of a customer's name; "" matches all.
	Query string
	After int // the Idx of the previous page's last attendee; -1 for the first page
	Limit int
}

// likeEscaper escapes LIKE's wildcards in what a person typed.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// Attendees reads a page of an event's tickets in seat order, cancelled
// ones included, each with its holder and its admission.
func (s *Checkins) Attendees(ctx context.Context, org, event uuid.UUID, f AttendeeFilter) ([]Attendee, error) {
	q := strings.ToLower(strings.TrimSpace(f.Query))
	ref := strings.ToUpper(strings.ReplaceAll(q, "-", ""))
	rows, err := s.db.Query(ctx, `
		SELECT t.id, s.idx, sec.label, sec.kind = 'ga', s.row_label, s.number, coalesce(ec.name, s.category, ''),
		       b.reference, coalesce(b.customer_name, ''), coalesce(b.customer_email, u.email),
		       t.cancelled_at IS NOT NULL, c.admitted_at, coalesce(c.entrance, '')
		FROM tickets t
		JOIN bookings b ON b.org_id = t.org_id AND b.id = t.booking_id
		JOIN users u ON u.org_id = b.org_id AND u.id = b.user_id
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		LEFT JOIN event_categories ec ON ec.org_id = s.org_id AND ec.event_id = s.event_id AND ec.key = s.category
		LEFT JOIN checkins c ON c.org_id = t.org_id AND c.ticket_id = t.id
		WHERE t.org_id = $1 AND t.event_id = $2 AND s.idx > $3
		  AND ($4 = '' OR coalesce(b.customer_email, u.email) LIKE $5 || '%'
		       OR b.reference = $6 OR lower(coalesce(b.customer_name, '')) LIKE '%' || $5 || '%')
		ORDER BY s.idx LIMIT $7`,
		org, event, f.After, q, likeEscaper.Replace(q), ref, f.Limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Attendee, error) {
		var a Attendee
		var section, row string
		var ga bool
		var number int
		var admitted *time.Time
		err := r.Scan(&a.Ticket, &a.Idx, &section, &ga, &row, &number, &a.Category, &a.Reference, &a.Name, &a.Email,
			&a.Cancelled, &admitted, &a.Entrance)
		a.Seat = doorSeatLabel(section, ga, row, number)
		if admitted != nil {
			a.AdmittedAt = *admitted
		}
		return a, err
	})
}
