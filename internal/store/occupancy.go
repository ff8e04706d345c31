package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Counts is the number of seats in each state.
type Counts struct {
	Available int `json:"available"`
	Held      int `json:"held"`
	Sold      int `json:"sold"`
	Blocked   int `json:"blocked"`
}

// Total is the number of seats counted.
func (c Counts) Total() int { return c.Available + c.Held + c.Sold + c.Blocked }

// Add moves one seat into status (n=+1) or out of it (n=-1).
func (c *Counts) Add(status SeatStatus, n int) {
	switch status {
	case Available:
		c.Available += n
	case Held:
		c.Held += n
	case Sold:
		c.Sold += n
	case Blocked:
		c.Blocked += n
	}
}

// occupancySQL counts an event's seats by section, price category and
// status, reading the event's rows (no index has status: see migration
// 013).
const occupancySQL = `SELECT section_id, coalesce(category, ''), status, count(*) FROM seats
	WHERE org_id = $1 AND event_id = $2 GROUP BY 1, 2, 3`

// OccupancyStatement is the SQL Occupancy sends (org, event), for the
// bench to time.
func OccupancyStatement() string { return occupancySQL }

// Occupancy aggregates an event's seats by section and status, and by
// price category ("" for seats without one) and status, in SQL.
func (s *Events) Occupancy(ctx context.Context, org, event uuid.UUID) (bySection map[uuid.UUID]Counts, byCategory map[string]Counts, err error) {
	rows, err := s.db.Query(ctx, occupancySQL, org, event)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	bySection, byCategory = map[uuid.UUID]Counts{}, map[string]Counts{}
	for rows.Next() {
		var sec uuid.UUID
		var cat string
		var status SeatStatus
		var n int
		if err := rows.Scan(&sec, &cat, &status, &n); err != nil {
			return nil, nil, err
		}
		c := bySection[sec]
		c.Add(status, n)
		bySection[sec] = c
		c = byCategory[cat]
		c.Add(status, n)
		byCategory[cat] = c
	}
	return bySection, byCategory, rows.Err()
}

// ActiveHoldCount counts an event's active holds.
func (s *Events) ActiveHoldCount(ctx context.Context, org, event uuid.UUID) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE org_id = $1 AND event_id = $2 AND status = 'active'`,
		org, event).Scan(&n)
	return n, err
}

// Snapshot is one point of the occupancy chart.
type Snapshot struct {
	At time.Time
	Counts
}

// SaveSnapshot records an event's occupancy now.
func (s *Events) SaveSnapshot(ctx context.Context, org, event uuid.UUID, c Counts) error {
	_, err := s.db.Exec(ctx, `
		INSERT INTO occupancy_snapshots (org_id, event_id, available, held, sold, blocked)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`, org, event, c.Available, c.Held, c.Sold, c.Blocked)
	return err
}

// Snapshots returns an event's occupancy points since a time, oldest first.
func (s *Events) Snapshots(ctx context.Context, org, event uuid.UUID, since time.Time) ([]Snapshot, error) {
	rows, err := s.db.Query(ctx, `
		SELECT at, available, held, sold, blocked FROM occupancy_snapshots
		WHERE org_id = $1 AND event_id = $2 AND at >= $3 ORDER BY at`, org, event, since)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Snapshot, error) {
		var x Snapshot
		err := r.Scan(&x.At, &x.Available, &x.Held, &x.Sold, &x.Blocked)
		x.At = x.At.UTC()
		return x, err
	})
}

// Paid is what an event's live tickets of one price category were paid,
// by currency (a category's currency may change between sales).
type Paid map[string]int64

// PaidRevenue is what an event's live (not cancelled) tickets were paid,
// by the price category of their seat and currency: not the categories'
// prices today. Tickets of seats without a category are left out. The
// counters are kept with every sale and cancellation (migration 026), so
// this reads a few rows whatever the number of tickets.
func (s *Events) PaidRevenue(ctx context.Context, org, event uuid.UUID) (map[string]Paid, error) {
	rows, err := s.db.Query(ctx, `
		SELECT category, currency, sum(paid_minor)::bigint FROM event_revenue
		WHERE org_id = $1 AND event_id = $2
		GROUP BY category, currency HAVING sum(paid_minor) <> 0`, org, event)
	if err != nil {
		return nil, err
	}
	out := map[string]Paid{}
	var cat, cur string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&cat, &cur, &n}, func() error {
		if out[cat] == nil {
			out[cat] = Paid{}
		}
		out[cat][cur] = n
		return nil
	})
	return out, err
}
