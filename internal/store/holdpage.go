package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// HoldCursor is where a page of active holds ends: the next page starts
// after it. Holds are ordered by (held_until, id), so a hold created
// later (held until later) is never skipped; an extended one may be
// listed again on a later page.
type HoldCursor struct {
	HeldUntil time.Time
	ID        uuid.UUID
}

// IsZero reports whether c is the start (no cursor).
func (c HoldCursor) IsZero() bool { return c.ID == uuid.Nil }

// HoldPage is one page of an event's active holds.
type HoldPage struct {
	Holds []StaffHold
	// Next is the cursor of the following page; zero on the last one.
	Next HoldCursor
	// Total counts every hold the filter matches, across pages; only set
	// when asked for (it costs a count of them all).
	Total int
}

// ActiveHoldsPage lists up to limit of an event's active holds that
// match f (Section, Holder; f.Limit is ignored), soonest expiry first,
// after the cursor: keyset pagination, so a page costs an index range
// whatever the number of holds before it.
func (s *Audit) ActiveHoldsPage(ctx context.Context, org, event uuid.UUID, f HoldFilter, after HoldCursor, limit int, total bool) (HoldPage, error) {
	var q strings.Builder
	args := []any{org, event}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var where strings.Builder
	where.WriteString(`h.org_id = $1 AND h.event_id = $2 AND h.status = 'active'`)
	if f.Section != "" {
		where.WriteString(" AND sec.label = " + arg(f.Section))
	}
	if f.Holder != "" {
		where.WriteString(holderLike(arg(likeEscape(strings.ToLower(f.Holder)))))
	}
	from := `
		FROM seat_holds h
		JOIN users u ON u.id = h.user_id AND u.org_id = h.org_id
		JOIN seats s ON s.id = h.seat_id AND s.org_id = h.org_id
		JOIN sections sec ON sec.id = s.section_id AND sec.org_id = s.org_id
		LEFT JOIN hold_customers hc ON hc.org_id = h.org_id AND hc.hold_id = h.id
		WHERE `
	count := "0"
	if total {
		count = "(SELECT count(*)" + from + where.String() + ")"
	}
	q.WriteString(`SELECT h.id, h.seat_id, h.user_id, h.held_until, h.created_at, h.extensions, h.fence, h.source,
		       u.email, sec.label, s.row_label, s.number, hc.name, hc.email, hc.note, ` + count + from + where.String())
	if !after.IsZero() {
		q.WriteString(" AND (h.held_until, h.id) > (" + arg(after.HeldUntil) + ", " + arg(after.ID) + ")")
	}
	q.WriteString(" ORDER BY h.held_until, h.id LIMIT " + arg(limit+1))
	rows, err := s.db.Query(ctx, q.String(), args...)
	if err != nil {
		return HoldPage{}, err
	}
	hs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (StaffHold, error) {
		h := StaffHold{Hold: Hold{OrgID: org, EventID: event, Status: HoldActive}}
		var cust nullCustomer
		err := r.Scan(&h.ID, &h.SeatID, &h.UserID, &h.HeldUntil, &h.CreatedAt, &h.Extensions, &h.Fence, &h.Source,
			&h.Email, &h.Section, &h.Row, &h.Number, &cust.name, &cust.email, &cust.note, &h.Total)
		h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
		h.Customer = cust.customer()
		return h, err
	})
	if err != nil {
		return HoldPage{}, err
	}
	p := HoldPage{Holds: hs}
	if len(hs) > limit {
		p.Holds = hs[:limit]
		last := p.Holds[limit-1]
		p.Next = HoldCursor{HeldUntil: last.HeldUntil, ID: last.ID}
	}
	if len(hs) > 0 {
		p.Total = hs[0].Total
	}
	return p, nil
}

// holderLike matches a holder filter (a LIKE pattern argument) against
// the holding account's email and a box-office customer's name and email.
func holderLike(pattern string) string {
	return ` AND (u.email LIKE '%' || ` + pattern + ` || '%' OR hc.email LIKE '%' || ` + pattern +
		` || '%' OR lower(hc.name) LIKE '%' || ` + pattern + ` || '%')`
}

// nullCustomer scans a customer that may be absent (a LEFT JOIN).
type nullCustomer struct{ name, email, note *string }

func (c nullCustomer) customer() *Customer {
	if c.name == nil || c.email == nil || c.note == nil {
		return nil
	}
	return &Customer{Name: *c.name, Email: *c.email, Note: *c.note}
}
