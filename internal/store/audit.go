package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The queries behind the staff pages: the audit log, the box office's
// active holds, a buyer's activity, and the numbers the dashboard shows
// next to the live counters.

// Audit actions, as the hold transactions write them.
const (
	ActionHoldCreated   = "hold.created"
	ActionHoldReleased  = "hold.released"
	ActionHoldExpired   = "hold.expired"
	ActionHoldExtended  = "hold.extended"
	ActionSeatSold      = "seat.sold"
	ActionSeatBlocked   = "seat.blocked"
	ActionSeatUnblocked = "seat.unblocked"
	// ActionBookingCancelled frees a sold seat (one row per seat).
	ActionBookingCancelled = "booking.cancelled"
)

// AuditActions lists every action the log holds, for filters.
var AuditActions = []string{ActionHoldCreated, ActionHoldReleased, ActionHoldExpired, ActionHoldExtended,
	ActionSeatSold, ActionSeatBlocked, ActionSeatUnblocked, ActionBookingCancelled, ActionWaitlistJoined, ActionWaitlistLeft,
	ActionWaitlistOffered}

// AuditFilter narrows an event's audit log. Zero fields match everything.
type AuditFilter struct {
	Seat   uuid.UUID // the seat acted on
	User   uuid.UUID // the actor, or the holder the action concerned
	Action string
	// Before is the keyset cursor: only entries with a smaller id (older).
	Before int64
	// Limit caps the entries returned (50 when zero).
	Limit int
}

// AuditEntry is one audit_log row with the names people read.
type AuditEntry struct {
	ID     int64
	At     time.Time
	Action string
	// Actor is the email of who acted; empty for the system (the reaper).
	Actor string
	// Holder is the email of the buyer whose hold it was, when that is not
	// the actor (staff releases, expiries).
	Holder string
	// Seat is the seat's label ("B-A-12"); empty if the entry has no seat.
	Seat   string
	Reason string
}

// Log returns a page of an event's audit log, newest first. Pages are
// keyed on id, so entries written meanwhile never shift a page.
func (s *Audit) Log(ctx context.Context, org, event uuid.UUID, f AuditFilter) ([]AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	var q strings.Builder
	args := []any{org, event}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	// Names are looked up by primary key per row shown (correlated
	// subqueries run only for the rows the LIMIT keeps). Joining seats on
	// the event instead lets the planner scan every seat of the event per
	// row when its statistics are stale, as they are for a new event.
	q.WriteString(`
		SELECT a.id, a.at, a.action,
		       coalesce((SELECT u.email FROM users u WHERE u.id = a.actor_id AND u.org_id = a.org_id), ''),
		       coalesce((SELECT sec.label || '-' || s.row_label || '-' || s.number
		                 FROM seats s JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		                 WHERE s.id = a.seat_id AND s.org_id = a.org_id), ''),
		       coalesce((SELECT u.email FROM users u WHERE u.org_id = a.org_id AND u.id = CASE
		                 WHEN a.data->>'holder' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
		                 THEN (a.data->>'holder')::uuid END), ''),
		       coalesce(a.data->>'reason', '')
		FROM audit_log a
		WHERE a.org_id = $1 AND a.event_id = $2`)
	// Only the conditions in use go into the SQL: "$n = 0 OR ..." forms
	// keep the planner from using what it could.
	if f.Before > 0 {
		q.WriteString(" AND a.id < " + arg(f.Before))
	}
	if f.Seat != uuid.Nil {
		q.WriteString(" AND a.seat_id = " + arg(f.Seat))
	}
	if f.User != uuid.Nil {
		p := arg(f.User)
		q.WriteString(" AND (a.actor_id = " + p + " OR a.data->>'holder' = " + p + "::text)")
	}
	if f.Action != "" {
		q.WriteString(" AND a.action = " + arg(f.Action))
	}
	q.WriteString(" ORDER BY a.id DESC LIMIT " + arg(f.Limit))
	rows, err := s.db.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (AuditEntry, error) {
		var e AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Action, &e.Actor, &e.Seat, &e.Holder, &e.Reason)
		e.At = e.At.UTC()
		if e.Holder == e.Actor {
			e.Holder = ""
		}
		return e, err
	})
}

// SeatByLabel finds a seat of an event by its label, section-row-number
// ("B-A-12"; the section label may itself contain dashes). Letter case is
// ignored.
func (s *Audit) SeatByLabel(ctx context.Context, org, event uuid.UUID, label string) (uuid.UUID, error) {
	label = strings.TrimSpace(label)
	i := strings.LastIndexByte(label, '-')
	if i <= 0 {
		return uuid.Nil, notFoundIfNoRows(pgx.ErrNoRows, "seat")
	}
	rest, num := label[:i], label[i+1:]
	j := strings.LastIndexByte(rest, '-')
	n, err := strconv.Atoi(num)
	if j <= 0 || err != nil || n <= 0 {
		return uuid.Nil, notFoundIfNoRows(pgx.ErrNoRows, "seat")
	}
	var id uuid.UUID
	err = s.db.QueryRow(ctx, `
		SELECT s.id FROM seats s
		JOIN sections sec ON sec.org_id = s.org_id AND sec.event_id = s.event_id AND sec.id = s.section_id
		WHERE s.org_id = $1 AND s.event_id = $2 AND upper(sec.label) = upper($3)
		  AND upper(s.row_label) = upper($4) AND s.number = $5`,
		org, event, rest[:j], rest[j+1:], n).Scan(&id)
	return id, notFoundIfNoRows(err, "seat")
}

// HoldFilter narrows an event's active holds. Zero fields match everything.
type HoldFilter struct {
	Section string // section label, exactly
	// Holder matches holders whose email contains it (case-insensitive).
	Holder string
	User   uuid.UUID   // holds of this user only
	Seats  []uuid.UUID // holds on these seats only
	// Limit caps the holds returned (no cap when zero); Total still counts
	// them all.
	Limit int
}

// StaffHold is an active hold as the box office sees it.
type StaffHold struct {
	Hold
	Email   string
	Section string
	Row     string
	Number  int
	// Total is how many holds matched the filter, Limit aside.
	Total int
}

// Label is the seat's label, "B-A-12".
func (h StaffHold) Label() string { return SeatLabel(h.Section, h.Row, h.Number) }

// SeatLabel names a seat for people: section-row-number ("B-A-12"), the
// form SeatByLabel reads back.
func SeatLabel(section, row string, number int) string {
	return section + "-" + row + "-" + strconv.Itoa(number)
}

// ActiveHolds lists an event's active holds with their holders' emails and
// seat labels, soonest expiry first.
func (s *Audit) ActiveHolds(ctx context.Context, org, event uuid.UUID, f HoldFilter) ([]StaffHold, error) {
	var q strings.Builder
	args := []any{org, event}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	q.WriteString(`
		SELECT h.id, h.seat_id, h.user_id, h.held_until, h.created_at, h.extensions, h.fence, h.source,
		       u.email, sec.label, s.row_label, s.number, hc.name, hc.email, hc.note, count(*) OVER ()
		FROM seat_holds h
		JOIN users u ON u.id = h.user_id AND u.org_id = h.org_id
		JOIN seats s ON s.id = h.seat_id AND s.org_id = h.org_id
		JOIN sections sec ON sec.id = s.section_id AND sec.org_id = s.org_id
		LEFT JOIN hold_customers hc ON hc.org_id = h.org_id AND hc.hold_id = h.id
		WHERE h.org_id = $1 AND h.event_id = $2 AND h.status = 'active'`)
	if f.Section != "" {
		q.WriteString(" AND sec.label = " + arg(f.Section))
	}
	if f.Holder != "" {
		q.WriteString(holderLike(arg(likeEscape(strings.ToLower(f.Holder)))))
	}
	if f.User != uuid.Nil {
		q.WriteString(" AND h.user_id = " + arg(f.User))
	}
	if f.Seats != nil {
		q.WriteString(" AND h.seat_id = ANY(" + arg(f.Seats) + "::uuid[])")
	}
	q.WriteString(" ORDER BY h.held_until, sec.position, s.idx")
	if f.Limit > 0 {
		q.WriteString(" LIMIT " + arg(f.Limit))
	}
	rows, err := s.db.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StaffHold, error) {
		h := StaffHold{Hold: Hold{OrgID: org, EventID: event, Status: HoldActive}}
		var cust nullCustomer
		err := r.Scan(&h.ID, &h.SeatID, &h.UserID, &h.HeldUntil, &h.CreatedAt, &h.Extensions, &h.Fence, &h.Source,
			&h.Email, &h.Section, &h.Row, &h.Number, &cust.name, &cust.email, &cust.note, &h.Total)
		h.HeldUntil, h.CreatedAt = h.HeldUntil.UTC(), h.CreatedAt.UTC()
		h.Customer = cust.customer()
		return h, err
	})
}

// likeEscape makes s match literally inside a LIKE pattern (the default
// escape character is the backslash).
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// BookingSummary is a booking with the labels of its seats.
type BookingSummary struct {
	ID        uuid.UUID
	CreatedAt time.Time
	Seats     []string
}

// BuyerActivity is what the box office sees of one customer for an event.
type BuyerActivity struct {
	User     User
	Holds    []StaffHold
	Bookings []BookingSummary
}

// BuyerActivity finds a user of org by email (normalized to lower case)
// with their active holds and their bookings for the event.
func (s *Audit) BuyerActivity(ctx context.Context, org, event uuid.UUID, email string) (BuyerActivity, error) {
	u, err := userByEmail(ctx, s.db, org, strings.ToLower(strings.TrimSpace(email)))
	if err != nil {
		return BuyerActivity{}, err
	}
	u.PasswordHash = ""
	out := BuyerActivity{User: u}
	if out.Holds, err = s.ActiveHolds(ctx, org, event, HoldFilter{User: u.ID}); err != nil {
		return BuyerActivity{}, err
	}
	rows, err := s.db.Query(ctx, `
		SELECT b.id, b.created_at,
		       array_agg(sec.label || '-' || s.row_label || '-' || s.number ORDER BY sec.position, s.idx)
		FROM bookings b
		JOIN tickets t ON t.booking_id = b.id AND t.org_id = b.org_id
		JOIN seats s ON s.id = t.seat_id AND s.org_id = t.org_id
		JOIN sections sec ON sec.id = s.section_id AND sec.org_id = s.org_id
		WHERE b.org_id = $1 AND b.event_id = $2 AND b.user_id = $3
		GROUP BY b.id, b.created_at
		ORDER BY b.created_at DESC, b.id`, org, event, u.ID)
	if err != nil {
		return BuyerActivity{}, err
	}
	out.Bookings, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (BookingSummary, error) {
		var b BookingSummary
		err := r.Scan(&b.ID, &b.CreatedAt, &b.Seats)
		b.CreatedAt = b.CreatedAt.UTC()
		return b, err
	})
	return out, err
}

// ExpiryCount is how many active holds end within one second.
type ExpiryCount struct {
	At time.Time // the second, truncated
	N  int
}

// HoldExpiries counts an event's active holds by the second their
// held_until falls in, soonest first. Holds live minutes, so the list is
// short (at most one entry per second of the hold TTL plus extension)
// whatever the number of holds.
func (s *Audit) HoldExpiries(ctx context.Context, org, event uuid.UUID) ([]ExpiryCount, error) {
	rows, err := s.db.Query(ctx, `
		SELECT date_trunc('second', held_until) AS t, count(*) FROM seat_holds
		WHERE org_id = $1 AND event_id = $2 AND status = 'active'
		GROUP BY t ORDER BY t`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ExpiryCount, error) {
		var c ExpiryCount
		err := r.Scan(&c.At, &c.N)
		c.At = c.At.UTC()
		return c, err
	})
}
