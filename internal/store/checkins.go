package store

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/apperr"
	"seatd/internal/coalesce"
	"seatd/internal/pg"
)

// Checkins stores admissions at the door and the scans flagged as
// conflicts (migration 031). Postgres decides: at most one admission per
// ticket, whatever the scanners and processes.
type Checkins struct {
	db     *pgxpool.Pool
	admits *coalesce.Batcher[Admission, admitResult] // see admitbatch.go

	statements, admissions atomic.Int64 // sent by the batcher, for metrics
}

// NewCheckins returns the check-ins stored in db.
func NewCheckins(db *pgxpool.Pool) *Checkins {
	s := &Checkins{db: db}
	s.admits = coalesce.New(admitSlots, admitMax, s.runAdmits)
	return s
}

// Admission is a scan that lets someone in, to record.
type Admission struct {
	Org, Event, Ticket, Seat uuid.UUID
	Entrance                 string
	ScannedAt                time.Time // the scanner's clock
	By                       uuid.UUID // who scanned
	Offline                  bool      // the scanner admitted it offline and synced it later
}

// Checkin is a ticket's admission as recorded.
type Checkin struct {
	Ticket     uuid.UUID
	Entrance   string
	ScannedAt  time.Time // the scanner's clock
	AdmittedAt time.Time // the server's, when it was recorded
	By         uuid.UUID
	Offline    bool
}

// DoorTicket is what the door shows of a ticket.
type DoorTicket struct {
	ID, SeatID uuid.UUID
	// Seat is the seat's label ("A-3-12"), or a standing place's ("G
	// place 94").
	Seat      string
	Category  string // the seat category's name; "" without one
	Holder    string // the box-office customer's name; "" when not known
	Cancelled bool
}

// Conflict reasons.
const (
	ConflictDuplicate = "duplicate" // admitted again while scanners were offline
	ConflictCancelled = "cancelled" // admitted offline by a scanner that did not know it was cancelled
)

// CheckinConflict is a scan that let someone in who should not have been.
type CheckinConflict struct {
	ID         uuid.UUID
	Ticket     uuid.UUID
	Reason     string // ConflictDuplicate or ConflictCancelled
	Entrance   string
	ScannedAt  time.Time
	By         uuid.UUID
	RecordedAt time.Time
	// Set in lists (Conflicts): the seat's label, the scanner's email, and
	// for a duplicate the admission it lost to.
	Seat              string
	ByEmail           string
	AdmittedEntrance  string
	AdmittedScannedAt time.Time
}

// AdmitOutcome is what recording an admission found.
type AdmitOutcome struct {
	Ticket DoorTicket
	// Admitted: the scan is the ticket's admission (recorded by this call,
	// or, in a sync, recorded before by the same scan).
	Admitted bool
	// Checkin is the ticket's admission: the scan's, or the earlier one
	// that stands (zero for a cancelled ticket).
	Checkin Checkin
	// Conflict is set by Sync when the ticket has a flagged scan: this
	// one, or the later admission this earlier scan displaced. Nil if
	// none.
	Conflict *CheckinConflict
}

// Admit records a's ticket as admitted unless it is cancelled or was
// admitted before, and returns what it found. A ticket that is not a's
// event's (or not of a's seat) is NotFound.
func (s *Checkins) Admit(ctx context.Context, a Admission) (AdmitOutcome, error) {
	r, err := s.admits.Do(ctx, a)
	if err != nil {
		return AdmitOutcome{}, err
	}
	out := r.out
	if err = r.err; err != nil || out.Admitted || out.Ticket.Cancelled {
		return out, err
	}
	// The admission that stands was committed before ours found it.
	out.Checkin, err = checkin(ctx, s.db, a.Org, a.Ticket, false)
	return out, err
}

// admit records one admission in its own statement (admitSQL), on db:
// the pool, or Sync's transaction.
func admit(ctx context.Context, db pg.DBTX, a Admission) (AdmitOutcome, error) {
	outs, err := admitMany(ctx, db, []Admission{a})
	if err != nil {
		return AdmitOutcome{}, err
	}
	if outs[0] == nil {
		return AdmitOutcome{}, apperr.E(apperr.NotFound, "ticket not found")
	}
	return *outs[0], nil
}

// doorSeatLabel is a seat's label, or a standing place's.
func doorSeatLabel(section string, ga bool, row string, number int) string {
	if ga {
		return PlaceLabel(section, number)
	}
	return section + "-" + row + "-" + strconv.Itoa(number)
}

func checkin(ctx context.Context, db pg.DBTX, org, ticket uuid.UUID, lock bool) (Checkin, error) {
	q := `SELECT entrance, scanned_at, admitted_at, scanned_by, offline FROM checkins WHERE ticket_id = $2 AND org_id = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	c := Checkin{Ticket: ticket}
	err := db.QueryRow(ctx, q, org, ticket).Scan(&c.Entrance, &c.ScannedAt, &c.AdmittedAt, &c.By, &c.Offline)
	c.ScannedAt, c.AdmittedAt = c.ScannedAt.UTC(), c.AdmittedAt.UTC()
	return c, notFoundIfNoRows(err, "check-in")
}

// Sync records a scan an offline scanner admitted. The first admission of
// a ticket by scanned_at stands: a scan later than the recorded one is
// flagged as a duplicate; one earlier replaces it, and the one it replaces
// is flagged. A cancelled ticket's scan is flagged as cancelled. The same
// scan synced again (same ticket, entrance and scanned_at) changes
// nothing and gets the same answer.
func (s *Checkins) Sync(ctx context.Context, a Admission) (AdmitOutcome, error) {
	var out AdmitOutcome
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var err error
		if out, err = admit(ctx, tx, a); err != nil || out.Admitted {
			return err
		}
		if out.Ticket.Cancelled {
			out.Conflict, err = addConflict(ctx, tx, a, ConflictCancelled)
			return err
		}
		cur, err := checkin(ctx, tx, a.Org, a.Ticket, true)
		if err != nil {
			return err
		}
		switch {
		case cur.Entrance == a.Entrance && cur.ScannedAt.Equal(a.ScannedAt):
			// The same scan, synced again: the same answer, with the
			// scan it displaced, if it did.
			out.Admitted, out.Checkin = true, cur
			out.Conflict, err = ticketConflict(ctx, tx, a.Org, a.Ticket)
		case !a.ScannedAt.Before(cur.ScannedAt):
			out.Checkin = cur
			out.Conflict, err = addConflict(ctx, tx, a, ConflictDuplicate)
		default:
			lost := a
			lost.Entrance, lost.ScannedAt, lost.By = cur.Entrance, cur.ScannedAt, cur.By
			if out.Conflict, err = addConflict(ctx, tx, lost, ConflictDuplicate); err != nil {
				return err
			}
			out.Admitted = true
			out.Checkin = Checkin{Ticket: a.Ticket, Entrance: a.Entrance, ScannedAt: a.ScannedAt.UTC(), By: a.By, Offline: a.Offline}
			err = tx.QueryRow(ctx, `
				UPDATE checkins SET entrance = $3, scanned_at = $4, scanned_by = $5, offline = $6, admitted_at = now()
				WHERE ticket_id = $2 AND org_id = $1 RETURNING admitted_at`,
				a.Org, a.Ticket, a.Entrance, a.ScannedAt, a.By, a.Offline).Scan(&out.Checkin.AdmittedAt)
			out.Checkin.AdmittedAt = out.Checkin.AdmittedAt.UTC()
		}
		return err
	})
	if err != nil {
		return AdmitOutcome{}, err
	}
	return out, nil
}

// addConflict flags a scan; flagging the same scan again returns the
// first flag.
func addConflict(ctx context.Context, tx pgx.Tx, a Admission, reason string) (*CheckinConflict, error) {
	c := &CheckinConflict{Ticket: a.Ticket, Reason: reason, Entrance: a.Entrance, ScannedAt: a.ScannedAt.UTC(), By: a.By}
	err := tx.QueryRow(ctx, `
		INSERT INTO checkin_conflicts (org_id, event_id, ticket_id, reason, entrance, scanned_at, scanned_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (ticket_id, entrance, scanned_at, org_id) DO UPDATE SET recorded_at = checkin_conflicts.recorded_at
		RETURNING id, reason, scanned_by, recorded_at`,
		a.Org, a.Event, a.Ticket, reason, a.Entrance, a.ScannedAt, a.By).Scan(&c.ID, &c.Reason, &c.By, &c.RecordedAt)
	c.RecordedAt = c.RecordedAt.UTC()
	return c, err
}

// ticketConflict is a ticket's first flagged scan, or nil.
func ticketConflict(ctx context.Context, tx pgx.Tx, org, ticket uuid.UUID) (*CheckinConflict, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, reason, entrance, scanned_at, scanned_by, recorded_at FROM checkin_conflicts
		WHERE org_id = $1 AND ticket_id = $2 ORDER BY recorded_at, id LIMIT 1`, org, ticket)
	if err != nil {
		return nil, err
	}
	cs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CheckinConflict, error) {
		c := CheckinConflict{Ticket: ticket}
		err := r.Scan(&c.ID, &c.Reason, &c.Entrance, &c.ScannedAt, &c.By, &c.RecordedAt)
		c.ScannedAt, c.RecordedAt = c.ScannedAt.UTC(), c.RecordedAt.UTC()
		return c, err
	})
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	return &cs[0], nil
}

// Conflicts lists an event's flagged scans, by scanned_at.
func (s *Checkins) Conflicts(ctx context.Context, org, event uuid.UUID) ([]CheckinConflict, error) {
	rows, err := s.db.Query(ctx, `
		SELECT f.id, f.ticket_id, f.reason, f.entrance, f.scanned_at, f.scanned_by, f.recorded_at,
		       sec.label, sec.kind = 'ga', s.row_label, s.number, coalesce(u.email, ''),
		       coalesce(c.entrance, ''), coalesce(c.scanned_at, 'epoch'::timestamptz)
		FROM checkin_conflicts f
		JOIN tickets t ON t.org_id = f.org_id AND t.id = f.ticket_id
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		LEFT JOIN users u ON u.org_id = f.org_id AND u.id = f.scanned_by
		LEFT JOIN checkins c ON c.org_id = f.org_id AND c.ticket_id = f.ticket_id
		WHERE f.org_id = $1 AND f.event_id = $2
		ORDER BY f.scanned_at, f.id`, org, event)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (CheckinConflict, error) {
		var c CheckinConflict
		var section, row string
		var ga bool
		var number int
		err := r.Scan(&c.ID, &c.Ticket, &c.Reason, &c.Entrance, &c.ScannedAt, &c.By, &c.RecordedAt,
			&section, &ga, &row, &number, &c.ByEmail, &c.AdmittedEntrance, &c.AdmittedScannedAt)
		c.Seat = doorSeatLabel(section, ga, row, number)
		c.ScannedAt, c.RecordedAt = c.ScannedAt.UTC(), c.RecordedAt.UTC()
		if c.AdmittedScannedAt.Unix() == 0 {
			c.AdmittedScannedAt = time.Time{}
		}
		c.AdmittedScannedAt = c.AdmittedScannedAt.UTC()
		return c, err
	})
}

// DoorList is what an offline scanner downloads of an event, read in one
// snapshot.
type DoorList struct {
	Revoked  []uuid.UUID          // the cancelled tickets
	Admitted []uuid.UUID          // the tickets admitted so far
	Seats    map[uuid.UUID]string // the labels of the live tickets' seats, by seat id
}

// DoorList reads an event's revoked and admitted tickets and its live
// tickets' seats.
func (s *Checkins) DoorList(ctx context.Context, org, event uuid.UUID) (DoorList, error) {
	l := DoorList{Revoked: []uuid.UUID{}, Admitted: []uuid.UUID{}, Seats: map[uuid.UUID]string{}}
	tx, err := s.db.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return l, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	ids := func(q string) ([]uuid.UUID, error) {
		rows, err := tx.Query(ctx, q, org, event)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	}
	if l.Revoked, err = ids(`SELECT id FROM tickets WHERE org_id = $1 AND event_id = $2 AND cancelled_at IS NOT NULL ORDER BY id`); err != nil {
		return l, err
	}
	if l.Admitted, err = ids(`SELECT ticket_id FROM checkins WHERE org_id = $1 AND event_id = $2 ORDER BY ticket_id`); err != nil {
		return l, err
	}
	rows, err := tx.Query(ctx, `
		SELECT s.id, sec.label, sec.kind = 'ga', s.row_label, s.number
		FROM tickets t
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		WHERE t.org_id = $1 AND t.event_id = $2 AND t.cancelled_at IS NULL`, org, event)
	if err != nil {
		return l, err
	}
	var id uuid.UUID
	var section, row string
	var ga bool
	var number int
	_, err = pgx.ForEachRow(rows, []any{&id, &section, &ga, &row, &number}, func() error {
		l.Seats[id] = doorSeatLabel(section, ga, row, number)
		return nil
	})
	return l, err
}

// CheckinCounts are an event's figures at the door.
type CheckinCounts struct {
	Expected  int // live tickets
	Admitted  int
	Conflicts int
	Entrances []EntranceCount // by name
}

// EntranceCount is how many were admitted at one entrance.
type EntranceCount struct {
	Name     string
	Admitted int
}

// Counts reads an event's figures at the door.
func (s *Checkins) Counts(ctx context.Context, org, event uuid.UUID) (CheckinCounts, error) {
	c := CheckinCounts{Entrances: []EntranceCount{}}
	err := s.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM tickets WHERE org_id = $1 AND event_id = $2 AND cancelled_at IS NULL),
		       (SELECT count(*) FROM checkin_conflicts WHERE org_id = $1 AND event_id = $2)`,
		org, event).Scan(&c.Expected, &c.Conflicts)
	if err != nil {
		return c, err
	}
	rows, err := s.db.Query(ctx, `
		SELECT entrance, count(*) FROM checkins WHERE org_id = $1 AND event_id = $2 GROUP BY entrance ORDER BY entrance`,
		org, event)
	if err != nil {
		return c, err
	}
	var e EntranceCount
	_, err = pgx.ForEachRow(rows, []any{&e.Name, &e.Admitted}, func() error {
		c.Entrances = append(c.Entrances, e)
		c.Admitted += e.Admitted
		return nil
	})
	return c, err
}

// CheckinExportColumns are the columns of checkins.csv, in order.
var CheckinExportColumns = []string{"ticket_id", "seat", "category", "booking_reference", "holder_name", "holder_email",
	"entrance", "scanned_at", "admitted_at", "scanned_by", "offline"}

// ExportCheckins streams an event's admissions to row, as text in the
// order of CheckinExportColumns, by scanned_at, in constant memory.
func (s *Checkins) ExportCheckins(ctx context.Context, org, event uuid.UUID, row func([]string) error) error {
	rows, err := s.db.Query(ctx, `
		SELECT c.ticket_id::text,
		       CASE WHEN sec.kind = 'ga' THEN sec.label || ' place ' || s.number
		            ELSE sec.label || '-' || s.row_label || '-' || s.number END,
		       coalesce(cat.name, ''), b.reference, coalesce(b.customer_name, ''), coalesce(b.customer_email, bu.email),
		       c.entrance,
		       to_char(c.scanned_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
		       to_char(c.admitted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
		       coalesce(u.email, ''), c.offline::text
		FROM checkins c
		JOIN tickets t ON t.org_id = c.org_id AND t.id = c.ticket_id
		JOIN bookings b ON b.org_id = t.org_id AND b.id = t.booking_id
		JOIN users bu ON bu.org_id = b.org_id AND bu.id = b.user_id
		JOIN seats s ON s.org_id = t.org_id AND s.id = t.seat_id
		JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
		LEFT JOIN event_categories cat ON cat.org_id = s.org_id AND cat.event_id = s.event_id AND cat.key = s.category
		LEFT JOIN users u ON u.org_id = c.org_id AND u.id = c.scanned_by
		WHERE c.org_id = $1 AND c.event_id = $2
		ORDER BY c.scanned_at, c.ticket_id`, org, event)
	if err != nil {
		return err
	}
	vals := make([]string, len(CheckinExportColumns))
	dest := make([]any, len(vals))
	for i := range vals {
		dest[i] = &vals[i]
	}
	_, err = pgx.ForEachRow(rows, dest, func() error { return row(vals) })
	return err
}

// EventExists is nil when event is org's and not deleted, else NotFound.
func (s *Checkins) EventExists(ctx context.Context, org, event uuid.UUID) error {
	var one int
	err := s.db.QueryRow(ctx, `SELECT 1 FROM events WHERE org_id = $1 AND id = $2 AND status <> 'deleted'`, org, event).Scan(&one)
	return notFoundIfNoRows(err, "event")
}
