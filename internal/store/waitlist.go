package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/apperr"
	"seatd/internal/pg"
)

// The audit actions of a waitlist entry (entity waitlist_entry, no seat):
// a buyer joined the line, left it, or was offered seats (not a seat
// change: the offer's holds write their own rows). The change feed reads
// them as the line's changes (LineChange), and each is a webhook type of
// the same name, its data the row's: the buyer (holder) always; a join
// also what was asked for (seats and accessible, and category and
// section_id when given).
const (
	ActionWaitlistJoined  = "waitlist.joined"
	ActionWaitlistLeft    = "waitlist.left"
	ActionWaitlistOffered = "waitlist.offered"
)

// SourceWaitlist is the source of an offer's holds.
const SourceWaitlist = "waitlist"

// Waitlist entry statuses.
const (
	WaitlistWaiting = "waiting"
	WaitlistOffered = "offered"
	WaitlistLeft    = "left"
)

// What became of an offer (WaitlistEntry.Offer), read from its holds: an
// offered entry stays offered, and its holds say whether the seats are
// still in the buyer's cart, were bought, or went back (released, or
// lapsed).
const (
	OfferHeld   = "held"
	OfferBought = "bought"
	OfferEnded  = "ended"
)

// WaitlistEntry is a buyer's place in an event's line.
type WaitlistEntry struct {
	ID, Org, Event, User uuid.UUID
	Seats                int
	Category             string    // "" for any
	Section              uuid.UUID // uuid.Nil for any
	SectionLabel         string
	// Accessible: the buyer needs accessible seating, so seats kept back
	// for it until the event's accessible_release_at may be offered.
	Accessible bool
	Status     string
	// Position is the place in line among waiting entries, from 1; 0 once
	// offered or left.
	Position   int
	HoldIDs    []uuid.UUID
	OfferUntil time.Time
	// Offer is what became of an offered entry's seats (OfferHeld,
	// OfferBought or OfferEnded); "" for other entries.
	Offer     string
	CreatedAt time.Time
}

// WaitlistRequest is what a buyer asks to wait for.
type WaitlistRequest struct {
	Org, Event, User uuid.UUID
	Seats            int
	Category         string
	// Section is a section id or label of the event; "" for any.
	Section    string
	Accessible bool
}

// Join puts the buyer at the end of the event's line. The section
// and category must be the event's (422 otherwise); a buyer already
// waiting is refused (409). A work item is queued with the entry, so seats
// that are free right now are offered too.
func (s *Waitlist) Join(ctx context.Context, r WaitlistRequest) (WaitlistEntry, error) {
	fields := map[string]string{}
	var section *uuid.UUID
	if r.Section != "" {
		var id uuid.UUID
		err := s.db.QueryRow(ctx, `SELECT id FROM sections WHERE org_id = $1 AND event_id = $2 AND (id::text = $3 OR label = $3)`,
			r.Org, r.Event, r.Section).Scan(&id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			fields["section"] = "no such section in this event"
		case err != nil:
			return WaitlistEntry{}, err
		default:
			section = &id
		}
	}
	var category *string
	if r.Category != "" {
		var n int
		if err := s.db.QueryRow(ctx, `SELECT count(*) FROM event_categories WHERE org_id = $1 AND event_id = $2 AND key = $3`,
			r.Org, r.Event, r.Category).Scan(&n); err != nil {
			return WaitlistEntry{}, err
		}
		if n == 0 {
			fields["category"] = "no such category in this event"
		}
		category = &r.Category
	}
	if len(fields) > 0 {
		return WaitlistEntry{}, &apperr.Error{Code: apperr.Invalid, Message: "the waitlist request names what the event does not have", Fields: fields}
	}
	var e WaitlistEntry
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO waitlist_entries (org_id, event_id, user_id, seats, category, section_id, accessible)
			VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id, created_at`,
			r.Org, r.Event, r.User, r.Seats, category, section, r.Accessible).Scan(&e.ID, &e.CreatedAt)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO waitlist_work (org_id, event_id) VALUES ($1, $2)`, r.Org, r.Event); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			VALUES ($1, $2, $3, $4, 'waitlist_entry', $5, jsonb_strip_nulls(jsonb_build_object('holder', $3::uuid,
			        'seats', $6::int, 'category', $7::text, 'section_id', $8::uuid, 'accessible', $9::bool)))`,
			r.Org, r.Event, r.User, ActionWaitlistJoined, e.ID, r.Seats, category, section, r.Accessible)
		return err
	})
	if pg.IsUniqueViolation(err) {
		return WaitlistEntry{}, apperr.E(apperr.Conflict, "you are already on the waitlist for this event")
	}
	if err != nil {
		return WaitlistEntry{}, err
	}
	return s.Entry(ctx, r.Org, e.ID)
}

const waitlistColumns = `
	SELECT w.id, w.org_id, w.event_id, w.user_id, w.seats, coalesce(w.category, ''), coalesce(w.section_id, '00000000-0000-0000-0000-000000000000'),
	       coalesce(sc.label, ''), w.accessible, w.status, coalesce(w.hold_ids, '{}'), coalesce(w.offer_until, 'epoch'), ` + offerSQL + `, w.created_at,
	       CASE WHEN w.status = 'waiting' THEN
	           (SELECT count(*) FROM waitlist_entries o
	            WHERE o.org_id = w.org_id AND o.event_id = w.event_id AND o.status = 'waiting' AND o.seq <= w.seq)
	       ELSE 0 END
	FROM waitlist_entries w LEFT JOIN sections sc ON sc.org_id = w.org_id AND sc.id = w.section_id`

// offerSQL is what became of an offered entry w's seats, from its holds:
// held while any is active, bought when any was converted, else ended.
// A seat bought at the box office after the offer lapsed is not the
// buyer's purchase: only the offer's own holds count.
const offerSQL = `CASE WHEN w.status = 'offered' THEN coalesce((
	           SELECT CASE WHEN bool_or(h.status = 'active') THEN 'held' WHEN bool_or(h.status = 'converted') THEN 'bought' ELSE 'ended' END
	           FROM seat_holds h WHERE h.org_id = w.org_id AND h.id = ANY(w.hold_ids)), 'ended') ELSE '' END`

func scanWaitlist(r pgx.CollectableRow) (WaitlistEntry, error) {
	var e WaitlistEntry
	err := r.Scan(&e.ID, &e.Org, &e.Event, &e.User, &e.Seats, &e.Category, &e.Section, &e.SectionLabel, &e.Accessible, &e.Status,
		&e.HoldIDs, &e.OfferUntil, &e.Offer, &e.CreatedAt, &e.Position)
	e.OfferUntil, e.CreatedAt = e.OfferUntil.UTC(), e.CreatedAt.UTC()
	if e.Status != WaitlistOffered {
		e.OfferUntil = time.Time{}
	}
	return e, err
}

// Entry returns one entry of org.
func (s *Waitlist) Entry(ctx context.Context, org, id uuid.UUID) (WaitlistEntry, error) {
	rows, err := s.db.Query(ctx, waitlistColumns+` WHERE w.org_id = $1 AND w.id = $2`, org, id)
	if err != nil {
		return WaitlistEntry{}, err
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanWaitlist)
	return e, notFoundIfNoRows(err, "waitlist entry")
}

// OfUser lists the buyer's waiting and offered entries for an event,
// newest first.
func (s *Waitlist) OfUser(ctx context.Context, org, event, user uuid.UUID) ([]WaitlistEntry, error) {
	rows, err := s.db.Query(ctx, waitlistColumns+`
		WHERE w.org_id = $1 AND w.event_id = $2 AND w.user_id = $3 AND w.status <> 'left' ORDER BY w.seq DESC`, org, event, user)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanWaitlist)
}

// OfEvent returns how many buyers wait for an event and the first
// limit of them in line.
func (s *Waitlist) OfEvent(ctx context.Context, org, event uuid.UUID, limit int) (int, []WaitlistEntry, error) {
	var n int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM waitlist_entries WHERE org_id = $1 AND event_id = $2 AND status = 'waiting'`,
		org, event).Scan(&n); err != nil {
		return 0, nil, err
	}
	rows, err := s.db.Query(ctx, waitlistColumns+`
		WHERE w.org_id = $1 AND w.event_id = $2 AND w.status = 'waiting' ORDER BY w.seq LIMIT $3`, org, event, limit)
	if err != nil {
		return 0, nil, err
	}
	first, err := pgx.CollectRows(rows, scanWaitlist)
	return n, first, err
}

// Leave takes a waiting entry out of line and returns its event
// and buyer (whose places in line changed). Only its buyer may, or staff
// of the org; an offered entry has nothing left to leave (its holds are
// released like any other).
func (s *Waitlist) Leave(ctx context.Context, org, id, actor uuid.UUID, staff bool) (event, user uuid.UUID, err error) {
	err = s.db.QueryRow(ctx, `
		WITH gone AS (
			UPDATE waitlist_entries SET status = 'left'
			WHERE org_id = $1 AND id = $2 AND status = 'waiting' AND ($4 OR user_id = $3)
			RETURNING event_id, user_id
		), aud AS (
			INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
			SELECT $1, event_id, $3, $5, 'waitlist_entry', $2, jsonb_build_object('holder', user_id) FROM gone
		)
		SELECT event_id, user_id FROM gone`, org, id, actor, staff, ActionWaitlistLeft).Scan(&event, &user)
	if !errors.Is(err, pgx.ErrNoRows) {
		return event, user, err
	}
	cur, err := s.Entry(ctx, org, id)
	switch {
	case err != nil:
		return uuid.Nil, uuid.Nil, err
	case !staff && cur.User != actor:
		// Another buyer's entry is none of this buyer's business.
		return uuid.Nil, uuid.Nil, apperr.E(apperr.NotFound, "waitlist entry not found")
	default:
		return uuid.Nil, uuid.Nil, apperr.E(apperr.Conflict, "this waitlist entry is %s, not waiting", cur.Status)
	}
}

// OfUsers lists the waiting and offered entries of several buyers of
// an event in one query (for the live panels of every buyer connected to
// a process), each buyer's newest first. Places in line come from one
// pass over the line rather than a count per entry.
func (s *Waitlist) OfUsers(ctx context.Context, org, event uuid.UUID, users []uuid.UUID) ([]WaitlistEntry, error) {
	rows, err := s.db.Query(ctx, `
		WITH line AS (
			SELECT id, row_number() OVER (ORDER BY seq) AS position
			FROM waitlist_entries WHERE org_id = $1 AND event_id = $2 AND status = 'waiting')
		SELECT w.id, w.org_id, w.event_id, w.user_id, w.seats, coalesce(w.category, ''),
		       coalesce(w.section_id, '00000000-0000-0000-0000-000000000000'), coalesce(sc.label, ''), w.accessible, w.status,
		       coalesce(w.hold_ids, '{}'), coalesce(w.offer_until, 'epoch'), `+offerSQL+`, w.created_at, coalesce(l.position, 0)
		FROM waitlist_entries w LEFT JOIN sections sc ON sc.org_id = w.org_id AND sc.id = w.section_id LEFT JOIN line l ON l.id = w.id
		WHERE w.org_id = $1 AND w.event_id = $2 AND w.user_id = ANY($3::uuid[]) AND w.status <> 'left'
		ORDER BY w.user_id, w.seq DESC`, org, event, users)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanWaitlist)
}
