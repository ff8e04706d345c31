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

// attendeesAll reads a page of an event's tickets in seat order. $1 org,
// $2 event, $3 after, $4 limit. The page is one range of
// tickets_event_idx, which orders an event's tickets by their seat's
// place (migration 044): its cost is the page's, not the event's.
const attendeesAll = attendeesSelect + ` ORDER BY t.seat_idx LIMIT $4`

// attendeesFound reads a page of the tickets of the bookings a search
// matches ($5: the query, LIKE-escaped; $6: as a reference). It finds
// the bookings first, each way through an index: a name anywhere in the
// customer's name and an email's start through the trigram index of
// migration 041, a buyer's account email's start through users'
// pattern index, the reference through its unique index; then their
// tickets through tickets_booking_idx.
const attendeesFound = attendeesSelect + ` AND t.booking_id IN (
		SELECT id FROM bookings WHERE org_id = $1 AND event_id = $2 AND customer_email IS NOT NULL
		    AND (lower(customer_name) LIKE '%' || $5 || '%' OR customer_email LIKE $5 || '%')
		UNION ALL SELECT id FROM bookings WHERE org_id = $1 AND reference = $6 AND event_id = $2
		UNION ALL SELECT b.id FROM users u JOIN bookings b ON b.org_id = u.org_id AND b.user_id = u.id
		    WHERE u.org_id = $1 AND u.email LIKE $5 || '%' AND b.event_id = $2 AND b.customer_email IS NULL)
		ORDER BY t.seat_idx LIMIT $4`

const attendeesSelect = `
		SELECT t.id, t.seat_idx, sec.label, sec.kind = 'ga', s.row_label, s.number, coalesce(ec.name, s.category, ''),
		       b.reference, coalesce(b.customer_name, ''), coalesce(b.customer_email, u.email),
		       t.cancelled_at IS NOT NULL, c.admitted_at, coalesce(c.entrance, '')
		FROM tickets t
		JOIN bookings b ON b.org_id = t.org_id AND b.id = t.booking_id
		JOIN users u ON u.org_id = b.org_id AND u.id = b.user_id
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		LEFT JOIN event_categories ec ON ec.org_id = s.org_id AND ec.event_id = s.event_id AND ec.key = s.category
		LEFT JOIN checkins c ON c.org_id = t.org_id AND c.ticket_id = t.id
		WHERE t.org_id = $1 AND t.event_id = $2 AND t.seat_idx > $3`

// Attendees reads a page of an event's tickets in seat order, cancelled
// ones included, each with its holder and its admission.
func (s *Checkins) Attendees(ctx context.Context, org, event uuid.UUID, f AttendeeFilter) ([]Attendee, error) {
	q := strings.ToLower(strings.TrimSpace(f.Query))
	ref := strings.ToUpper(strings.ReplaceAll(q, "-", ""))
	sql, args := attendeesAll, []any{org, event, f.After, f.Limit}
	if q != "" {
		sql, args = attendeesFound, append(args, likeEscaper.Replace(q), ref)
	}
	rows, err := s.db.Query(ctx, sql, args...)
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
