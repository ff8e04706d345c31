package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Export columns, in order, for each export.
var (
	SeatExportColumns = []string{"section", "row", "number", "status", "category", "price_minor", "currency",
		"accessible", "companion", "holder_email", "hold_id", "held_until"}
	// buyer_email is the box-office customer's for a box-office sale,
	// sold_by the staff member who sold it (empty for a sale on the web).
	BookingExportColumns = []string{"booking_id", "booked_at", "buyer_email", "status", "ticket_id", "section", "row",
		"number", "category", "price_minor", "currency", "reference", "channel", "buyer_name", "sold_by"}
	AuditExportColumns = []string{"id", "at", "action", "entity", "entity_id", "seat_id", "actor_email", "data"}
)

// Every export selects text columns only, so a row goes to the CSV writer
// as it comes from Postgres.
const (
	seatExportSQL = `
		SELECT sec.label, s.row_label, s.number::text, s.status, coalesce(s.category, ''),
		       coalesce(c.price_minor::text, ''), coalesce(c.currency, ''), s.accessible::text, s.companion::text,
		       coalesce(u.email, ''), coalesce(h.id::text, ''),
		       coalesce(to_char(h.held_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), '')
		FROM seats s
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		LEFT JOIN event_categories c ON c.org_id = s.org_id AND c.event_id = s.event_id AND c.key = s.category
		LEFT JOIN LATERAL (` + seatHoldSQL + `) h ON h.status = 'active'
		LEFT JOIN users u ON u.org_id = s.org_id AND u.id = h.user_id
		WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`
	bookingExportSQL = `
		SELECT b.id::text, to_char(b.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
		       coalesce(b.customer_email, u.email), b.status,
		       t.id::text, sec.label, s.row_label, s.number::text, coalesce(s.category, ''),
		       coalesce(t.price_minor::text, ''), coalesce(t.currency, ''),
		       left(b.reference, 4) || '-' || right(b.reference, 4), b.channel, coalesce(b.customer_name, ''),
		       CASE WHEN b.channel = 'box_office' THEN u.email ELSE '' END
		FROM bookings b
		JOIN users u ON u.org_id = b.org_id AND u.id = b.user_id
		JOIN tickets t ON t.org_id = b.org_id AND t.booking_id = b.id
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		WHERE b.org_id = $1 AND b.event_id = $2 ORDER BY b.created_at, b.id, s.idx`
	auditExportSQL = `
		SELECT a.id::text, to_char(a.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), a.action, a.entity,
		       coalesce(a.entity_id::text, ''), coalesce(a.seat_id::text, ''), coalesce(u.email, ''), a.data::text
		FROM audit_log a LEFT JOIN users u ON u.org_id = a.org_id AND u.id = a.actor_id
		WHERE a.org_id = $1 AND a.event_id = $2 ORDER BY a.id`
)

// Export kinds.
const (
	ExportSeats    = "seats"
	ExportBookings = "bookings"
	ExportAudit    = "audit"
)

// Export streams one export of an event of org to row, one row at a time
// as Postgres sends it, so an event of any size is exported in constant
// memory. The event must exist (the caller checks it for a 404).
func (s *Events) Export(ctx context.Context, org, event uuid.UUID, kind string, row func([]string) error) error {
	q, n := seatExportSQL, len(SeatExportColumns)
	switch kind {
	case ExportBookings:
		q, n = bookingExportSQL, len(BookingExportColumns)
	case ExportAudit:
		q, n = auditExportSQL, len(AuditExportColumns)
	}
	rows, err := s.db.Query(ctx, q, org, event)
	if err != nil {
		return err
	}
	vals := make([]string, n)
	dest := make([]any, n)
	for i := range vals {
		dest[i] = &vals[i]
	}
	_, err = pgx.ForEachRow(rows, dest, func() error { return row(vals) })
	return err
}
