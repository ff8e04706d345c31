package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Cursor is a position in the change feed: the Postgres snapshot
// (pg_snapshot text) a reader last read at. The next read returns the
// changes committed since — visible now, not visible then — so every
// committed change is read once, in no particular order within a read,
// and a transaction still in flight at one read is picked up by a later
// one. See migrations/003_change_feed.sql.
type Cursor string

// Change is one seat changed since a cursor: its state as of the read,
// and the last change that brought it there.
type Change struct {
	Seat   Seat
	Action string // the audit action: hold.created, hold.released, hold.expired, hold.extended, seat.sold, seat.blocked, seat.unblocked; waitlist.offered for a hold made as a waitlist offer
	// Hold is the hold the change was about (created, ended, extended or
	// sold); Holder is its buyer.
	Hold   uuid.UUID
	Holder uuid.UUID
	Actor  uuid.UUID
	// Offer says Hold is a waitlist offer's: its buyer's waitlist panel
	// shows what became of it.
	Offer bool
}

// LineChange is one change of an event's waitlist since a cursor: whose
// entry joined the line, left it or was offered seats.
type LineChange struct {
	Action string // ActionWaitlistJoined, ActionWaitlistLeft or ActionWaitlistOffered
	User   uuid.UUID
}

// EventFeed is what one read of an event's feed found: the changes of its
// seats and of its waitlist.
type EventFeed struct {
	Changes []Change
	Line    []LineChange
}

// FeedRead asks for one event's changes since a cursor.
type FeedRead struct {
	Org, Event uuid.UUID
	From       Cursor
}

// readSnapshot runs fn in a read-only repeatable-read transaction, whose
// statements all see the snapshot it returns.
func (s *Feed) readSnapshot(ctx context.Context, fn func(tx pgx.Tx) error) (Cursor, error) {
	var at Cursor
	err := pgx.BeginTxFunc(ctx, s.db, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&at); err != nil {
			return err
		}
		return fn(tx)
	})
	return at, err
}

// LoadEvent reads an event's sections and every seat with its current
// hold, in idx order, and the feed cursor they are current at.
func (s *Feed) LoadEvent(ctx context.Context, org, event uuid.UUID) ([]Section, []Seat, Cursor, error) {
	var secs []Section
	var seats []Seat
	at, err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		var err error
		if secs, err = sections(ctx, tx, org, event); err != nil {
			return err
		}
		// Seats are numbered 0..n-1 (Events.Create), so the top of the
		// (org_id, event_id, idx) index sizes the slice without a count.
		var n int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(idx) + 1, 0) FROM seats WHERE event_id = $2 AND org_id = $1`,
			org, event).Scan(&n); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, seatColumns+`
			WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`, org, event)
		if err != nil {
			return err
		}
		seats, err = collectSeats(rows, n)
		return err
	})
	return secs, seats, at, err
}

// HeldState reads what Redis should hold of an event: its held seats with
// their holds, the highest fence of the event, and the cursor they are
// current at.
func (s *Feed) HeldState(ctx context.Context, org, event uuid.UUID) ([]Seat, int64, Cursor, error) {
	var held []Seat
	var maxFence int64
	at, err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, seatColumns+`
			WHERE s.org_id = $1 AND s.event_id = $2 AND s.status = 'held'`, org, event)
		if err != nil {
			return err
		}
		if held, err = pgx.CollectRows(rows, scanSeat); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT coalesce(max(fence), 0) FROM seats WHERE org_id = $1 AND event_id = $2`,
			org, event).Scan(&maxFence)
	})
	return held, maxFence, at, err
}

// changesSQL reads, for each (org, event, cursor), the seats whose audit
// rows were committed after the cursor, each with its state now and its
// latest change. Each seat is looked up by its key (the LATERAL with LIMIT
// keeps the planner from hashing every seat of the table when it
// overestimates how many changes a range holds), and so is each hold.
// Each event's range is read by the feed index, one event after the
// other: OFFSET 0 keeps the audit LATERAL from being pulled up into a
// join, which the planner, unable to tell how much of an event's history
// lies past the cursor (it guesses a third), answered with a parallel
// scan of the whole audit log on every round once the log held a few
// hundred thousand rows (100-500 ms a read, against 0.03 ms). One seat's changes are serialized by its row lock, so
// their ids are in commit order. The partial feed index answers each
// event's range; rows at or above the cursor's xmin that it already saw
// are filtered out by the visibility test.
const changesSQL = `
WITH q AS (
    SELECT * FROM unnest($1::int[], $2::uuid[], $3::uuid[], $4::text[]) AS q(i, org_id, event_id, snap)
), ch AS (
    SELECT DISTINCT ON (a.seat_id) q.i, a.org_id, a.seat_id, a.action, a.actor_id,
           CASE WHEN a.entity = 'seat_hold' THEN a.entity_id
                WHEN a.data ? 'hold_id' THEN (a.data->>'hold_id')::uuid END AS hold_ref
    FROM q JOIN LATERAL (
        SELECT * FROM audit_log a
        WHERE a.org_id = q.org_id AND a.event_id = q.event_id AND a.seat_id IS NOT NULL
          AND a.xid >= pg_snapshot_xmin(q.snap::pg_snapshot)
          AND NOT pg_visible_in_snapshot(a.xid, q.snap::pg_snapshot)
        OFFSET 0
    ) a ON true
    ORDER BY a.seat_id, a.id DESC
), rest AS (
    -- Every change but the caller's own holds, written on its fast path:
    -- its cache and Redis have the state they left, so a seat whose last
    -- change is one of them needs neither the lookups below nor a sync.
    SELECT * FROM ch
    WHERE ch.hold_ref IS NULL OR ch.action <> 'hold.created' OR ch.hold_ref NOT IN (SELECT unnest($5::uuid[]))
)
SELECT ch.i, s.id, s.section_id, s.row_label, s.number, s.idx, s.x, s.y, s.status, s.version, s.fence,
       h.id, h.user_id, h.held_until,
       -- A waitlist offer is written as a hold; its buyer's cart says it
       -- is an offer, so the feed names it as one too.
       CASE WHEN ch.action = 'hold.created' AND eh.source = 'waitlist' THEN 'waitlist.offered' ELSE ch.action END,
       ch.hold_ref, eh.user_id, ch.actor_id, coalesce(eh.source = 'waitlist', false)
FROM rest ch
CROSS JOIN LATERAL (SELECT * FROM seats s WHERE s.id = ch.seat_id AND s.org_id = ch.org_id LIMIT 1) s
LEFT JOIN LATERAL (` + seatHoldSQL + `) h ON h.status = 'active'
LEFT JOIN LATERAL (SELECT user_id, source FROM seat_holds eh WHERE eh.org_id = ch.org_id AND eh.id = ch.hold_ref LIMIT 1) eh ON true`

// lineSQL reads, for each (org, event, cursor) as changesSQL does, the
// waitlist's audit rows committed after the cursor, oldest first, each
// with the buyer whose entry it was (a leave by staff names the buyer in
// its data; the others are the buyer's own).
const lineSQL = `
SELECT q.i, a.action, coalesce((a.data->>'holder')::uuid, a.actor_id)
FROM unnest($1::int[], $2::uuid[], $3::uuid[], $4::text[]) AS q(i, org_id, event_id, snap)
JOIN LATERAL (
    SELECT a.id, a.action, a.data, a.actor_id FROM audit_log a
    WHERE a.org_id = q.org_id AND a.event_id = q.event_id AND a.entity = 'waitlist_entry'
      AND a.xid >= pg_snapshot_xmin(q.snap::pg_snapshot)
      AND NOT pg_visible_in_snapshot(a.xid, q.snap::pg_snapshot)
    OFFSET 0
) a ON true
ORDER BY q.i, a.id`

// Changes reads the feed of several events, in one snapshot, and returns
// each one's changes (in the order of reads) and the cursor every one of
// them is now at. A seat whose last change is the creation of a hold in
// known is left out: known lists holds the caller made itself and whose
// state it has (in its cache and in Redis), committed before this call.
// Every change of a waitlist is returned, the caller's own too.
func (s *Feed) Changes(ctx context.Context, reads []FeedRead, known []uuid.UUID) ([]EventFeed, Cursor, error) {
	out := make([]EventFeed, len(reads))
	at, err := s.readSnapshot(ctx, func(tx pgx.Tx) error {
		if len(reads) == 0 {
			return nil
		}
		idx := make([]int32, len(reads))
		orgs, events := make([]uuid.UUID, len(reads)), make([]uuid.UUID, len(reads))
		snaps := make([]string, len(reads))
		for i, r := range reads {
			idx[i], orgs[i], events[i], snaps[i] = int32(i), r.Org, r.Event, string(r.From) // #nosec G115 -- a few events
		}
		rows, err := tx.Query(ctx, changesSQL, idx, orgs, events, snaps, known)
		if err != nil {
			return err
		}
		var c Change
		var i int32
		var holdID, holderID, ref, refHolder, actor *uuid.UUID
		var until *time.Time
		_, err = pgx.ForEachRow(rows, []any{&i, &c.Seat.ID, &c.Seat.SectionID, &c.Seat.Row, &c.Seat.Number, &c.Seat.Idx,
			&c.Seat.X, &c.Seat.Y, &c.Seat.Status, &c.Seat.Version, &c.Seat.Fence, &holdID, &holderID, &until,
			&c.Action, &ref, &refHolder, &actor, &c.Offer}, func() error {
			x := c
			x.Seat.HoldID, x.Seat.HolderID, x.Hold, x.Holder, x.Actor = orNil(holdID), orNil(holderID), orNil(ref), orNil(refHolder), orNil(actor)
			if until != nil {
				x.Seat.HeldUntil = until.UTC()
			}
			out[i].Changes = append(out[i].Changes, x)
			return nil
		})
		if err != nil {
			return err
		}
		if rows, err = tx.Query(ctx, lineSQL, idx, orgs, events, snaps); err != nil {
			return err
		}
		var l LineChange
		_, err = pgx.ForEachRow(rows, []any{&i, &l.Action, &l.User}, func() error {
			out[i].Line = append(out[i].Line, l)
			return nil
		})
		return err
	})
	return out, at, err
}

func orNil(id *uuid.UUID) uuid.UUID {
	if id == nil {
		return uuid.Nil
	}
	return *id
}
