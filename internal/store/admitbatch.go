package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/coalesce"
	"seatd/internal/pg"
)

// Admissions at the door are durable writes, and one alone waits mostly
// on its commit's WAL flush, not on its statement. While scanners queue,
// one statement records many admissions (admitSQL): one commit and one
// flush for all of them. Each admission's outcome is its own, exactly as
// from a statement of its own.
const (
	admitSlots = 1  // statements in flight at once
	admitMax   = 64 // admissions in one statement
)

type admitResult struct {
	out AdmitOutcome
	err error
}

type admitCall = coalesce.Call[Admission, admitResult]

// admitSQL records admissions of live tickets that have none, with their
// audit rows (ticket.checked_in: no seat_id, so the seat change feed
// leaves them alone; the outbox trigger makes them webhooks), in one
// statement, and reads what the door shows of each ticket. Row n of the
// arrays is one admission. FOR SHARE orders an admission against a
// cancellation of its ticket: whichever commits second sees the first (an
// admission is never recorded for a ticket whose cancellation committed
// before it). ON CONFLICT waits for a concurrent admission of the ticket
// and then records nothing. Tickets are locked and their check-ins
// inserted in ticket order, so two such statements that meet on tickets,
// or one and a cancellation (which locks a booking's tickets in the same
// order), wait rather than deadlock. A ticket must appear once in a
// statement (runAdmits sends a repeat apart).
const admitSQL = `
WITH r AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::timestamptz[], $7::uuid[], $8::boolean[])
        WITH ORDINALITY AS r(org_id, event_id, ticket_id, seat_id, entrance, scanned_at, scanned_by, offline, n)
), t AS (
    SELECT r.n, r.org_id, r.event_id, r.entrance, r.scanned_at, r.scanned_by, r.offline,
           tk.id, tk.seat_id, tk.booking_id, tk.cancelled_at IS NOT NULL AS cancelled
    FROM r JOIN tickets tk ON tk.id = r.ticket_id AND tk.org_id = r.org_id AND tk.event_id = r.event_id AND tk.seat_id = r.seat_id
    ORDER BY tk.id
    FOR SHARE OF tk
), c AS (
    INSERT INTO checkins (org_id, ticket_id, event_id, seat_id, entrance, scanned_at, scanned_by, offline)
    SELECT org_id, id, event_id, seat_id, entrance, scanned_at, scanned_by, offline FROM t WHERE NOT cancelled ORDER BY id
    ON CONFLICT (ticket_id, org_id) DO NOTHING
    RETURNING ticket_id, admitted_at
), a AS (
    INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
    SELECT t.org_id, t.event_id, t.scanned_by, 'ticket.checked_in', 'ticket', t.id,
           jsonb_build_object('seat_id', t.seat_id, 'booking_id', t.booking_id, 'entrance', t.entrance,
                              'scanned_at', t.scanned_at, 'offline', t.offline)
    FROM t JOIN c ON c.ticket_id = t.id
)
SELECT t.n, t.cancelled, c.admitted_at, sec.label, sec.kind = 'ga', s.row_label, s.number,
       coalesce(cat.name, ''), coalesce(b.customer_name, '')
FROM t
LEFT JOIN c ON c.ticket_id = t.id
JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
JOIN bookings b ON b.org_id = t.org_id AND b.id = t.booking_id
LEFT JOIN event_categories cat ON cat.org_id = s.org_id AND cat.event_id = s.event_id AND cat.key = s.category`

// BatchStats reports how many admission statements the door's scans
// went in and how many scans they carried.
func (s *Checkins) BatchStats() (statements, admissions int64) {
	return s.statements.Load(), s.admissions.Load()
}

// runAdmits records a batch of admissions and answers each. The statement
// does not inherit the sender's cancellation: it carries other scans.
func (s *Checkins) runAdmits(ctx context.Context, batch []*admitCall) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	s.admissions.Add(int64(len(batch)))
	if len(batch) == 1 {
		s.admitAlone(ctx, batch[0])
		return
	}
	// A ticket scanned twice at once goes in once; the repeat follows in
	// a statement of its own, which finds the first's admission.
	uniq, repeats := byKey(batch, func(c *admitCall) uuid.UUID { return c.Req.Ticket })
	defer func() {
		for _, c := range repeats {
			s.admitAlone(ctx, c)
		}
	}()
	as := make([]Admission, len(uniq))
	for i, c := range uniq {
		as[i] = c.Req
	}
	s.statements.Add(1)
	outs, err := admitMany(ctx, s.db, as)
	if err != nil && pg.Refused(err) {
		// Postgres refused the statement, which rolled it back whole:
		// decide each admission on its own.
		for _, c := range uniq {
			s.admitAlone(ctx, c)
		}
		return
	}
	for i, c := range uniq {
		switch {
		case err != nil:
			// Postgres did not answer: the statement may have committed.
			c.Answer(admitResult{err: err})
		case outs[i] == nil:
			c.Answer(admitResult{err: apperr.E(apperr.NotFound, "ticket not found")})
		default:
			c.Answer(admitResult{out: *outs[i]})
		}
	}
}

// admitAlone records one admission in a statement of its own.
func (s *Checkins) admitAlone(ctx context.Context, c *admitCall) {
	s.statements.Add(1)
	out, err := admit(ctx, s.db, c.Req)
	c.Answer(admitResult{out, err})
}

// admitMany sends admitSQL for as; outs[i] is as[i]'s outcome, nil for a
// ticket that is not there.
func admitMany(ctx context.Context, db pg.DBTX, as []Admission) ([]*AdmitOutcome, error) {
	n := len(as)
	orgs, events, tickets, seats, bys := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	entrances, at, offline := make([]string, n), make([]time.Time, n), make([]bool, n)
	for i, a := range as {
		orgs[i], events[i], tickets[i], seats[i], bys[i] = a.Org, a.Event, a.Ticket, a.Seat, a.By
		entrances[i], at[i], offline[i] = a.Entrance, a.ScannedAt, a.Offline
	}
	rows, err := db.Query(ctx, admitSQL, orgs, events, tickets, seats, entrances, at, bys, offline)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	outs := make([]*AdmitOutcome, n)
	for rows.Next() {
		var i int
		var admittedAt *time.Time
		var section, row, category, holder string
		var ga, cancelled bool
		var number int
		if err := rows.Scan(&i, &cancelled, &admittedAt, &section, &ga, &row, &number, &category, &holder); err != nil {
			return nil, err
		}
		if i < 1 || i > n {
			continue
		}
		a := as[i-1]
		out := AdmitOutcome{Ticket: DoorTicket{ID: a.Ticket, SeatID: a.Seat, Seat: doorSeatLabel(section, ga, row, number),
			Category: category, Holder: holder, Cancelled: cancelled}}
		if admittedAt != nil {
			out.Admitted = true
			out.Checkin = Checkin{Ticket: a.Ticket, Entrance: a.Entrance, ScannedAt: a.ScannedAt.UTC(),
				AdmittedAt: admittedAt.UTC(), By: a.By, Offline: a.Offline}
		}
		outs[i-1] = &out
	}
	return outs, rows.Err()
}
