package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// UserBooking is one of a buyer's bookings as their list shows it.
type UserBooking struct {
	ID, Event         uuid.UUID
	Reference, Status string
	EventName, Venue  string
	StartsAt          time.Time
	TimeZone          string
	CreatedAt         time.Time
	LiveTickets       int
}

// OfUser lists the bookings user of org made online, newest first, at
// most limit.
func (s *Bookings) OfUser(ctx context.Context, org, user uuid.UUID, limit int) ([]UserBooking, error) {
	rows, err := s.db.Query(ctx, `
		SELECT b.id, b.event_id, b.reference, b.status, e.name, e.venue, e.starts_at, e.time_zone, b.created_at,
		       (SELECT count(*) FROM tickets t WHERE t.org_id = b.org_id AND t.booking_id = b.id AND t.cancelled_at IS NULL)
		FROM bookings b JOIN events e ON e.org_id = b.org_id AND e.id = b.event_id
		WHERE b.org_id = $1 AND b.user_id = $2 AND b.channel = 'web'
		ORDER BY b.created_at DESC, b.id LIMIT $3`, org, user, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (UserBooking, error) {
		var b UserBooking
		err := r.Scan(&b.ID, &b.Event, &b.Reference, &b.Status, &b.EventName, &b.Venue, &b.StartsAt, &b.TimeZone,
			&b.CreatedAt, &b.LiveTickets)
		return b, err
	})
}

// CheckedIn returns when each listed ticket of org was admitted, for those
// that were.
func (s *Bookings) CheckedIn(ctx context.Context, org uuid.UUID, tickets []uuid.UUID) (map[uuid.UUID]time.Time, error) {
	rows, err := s.db.Query(ctx, `
		SELECT ticket_id, admitted_at FROM checkins WHERE org_id = $1 AND ticket_id = ANY($2)`, org, tickets)
	if err != nil {
		return nil, err
	}
	out := map[uuid.UUID]time.Time{}
	var id uuid.UUID
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error {
		out[id] = at.UTC()
		return nil
	})
	return out, err
}
