package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Offer is seats held for a waiting buyer.
type Offer struct {
	Entry WaitlistEntry
	Holds []Hold
}

// OfferParams tune one offer round.
type OfferParams struct {
	TTL time.Duration
	// BeforeCommit, when set, runs after the offers are written and before
	// their transaction commits; an error rolls everything back (a test
	// uses it to stand for a process dying there).
	BeforeCommit func(ctx context.Context) error
}

// Offer does one unit of waitlist work: it claims the queued work
// of one event (FOR UPDATE SKIP LOCKED, so every process's worker can run
// at once), offers the event's free seats to its waiting entries in line
// order, and deletes the claimed work — all in one transaction, so a
// worker dying anywhere before the commit leaves the work for another,
// and the offers are made exactly once. It returns whether there was work
// and the offers made.
//
// Rules: entries are served in line order; an entry is offered seats only
// when all it asked for are free (count, category, section), otherwise the
// next entry whose request fits is served (the freed seats go to the first
// in line they match). The offer's holds go through the hold statement:
// one active hold per seat, only while the event is on sale.
func (s *Waitlist) Offer(ctx context.Context, p OfferParams) (bool, []Offer, error) {
	var offers []Offer
	found := false
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		var org, event uuid.UUID
		err := tx.QueryRow(ctx, `SELECT org_id, event_id FROM waitlist_work ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&org, &event)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		// One worker per event at a time keeps the line in order; another
		// worker leaves this event's work for its next round rather than
		// spin on it (found stays false).
		var mine bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended('waitlist:' || $1::text, 0))`, event).Scan(&mine); err != nil || !mine {
			return err
		}
		found = true
		rows, err := tx.Query(ctx, `SELECT id FROM waitlist_work WHERE org_id = $1 AND event_id = $2 FOR UPDATE SKIP LOCKED`, org, event)
		if err != nil {
			return err
		}
		work, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		offers, err = offerEvent(ctx, tx, org, event, p.TTL)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM waitlist_work WHERE org_id = $1 AND id = ANY($2::bigint[])`, org, work); err != nil {
			return err
		}
		if p.BeforeCommit != nil {
			return p.BeforeCommit(ctx)
		}
		return nil
	})
	if err != nil {
		return found, nil, err
	}
	return found, offers, nil
}

// offerEvent offers an event's free seats to its line, in order, under
// the event's choosing rules (docs/architecture.md#choosing-seats), read from its row in this
// transaction: no accessible or companion seat before the event's
// accessible_release_at unless the entry asked for accessible seating, and
// on a strict event no offer that leaves a seat alone in its row, checked
// with every row of the event locked against strict holds (the advisory
// locks of lockRows, taken in their order before any seat lock).
func offerEvent(ctx context.Context, tx pgx.Tx, org, event uuid.UUID, ttl time.Duration) ([]Offer, error) {
	rows, err := tx.Query(ctx, waitlistColumns+`
		WHERE w.org_id = $1 AND w.event_id = $2 AND w.status = 'waiting' ORDER BY w.seq FOR UPDATE OF w`, org, event)
	if err != nil {
		return nil, err
	}
	line, err := pgx.CollectRows(rows, scanWaitlist)
	if err != nil || len(line) == 0 {
		return nil, err
	}
	var strict bool
	if err := tx.QueryRow(ctx, `SELECT orphan_rule = 'strict' FROM events WHERE org_id = $1 AND id = $2`, org, event).Scan(&strict); err != nil {
		return nil, err
	}
	if strict {
		if _, err := tx.Exec(ctx, `
			SELECT count(pg_advisory_xact_lock(k)) FROM (
				SELECT DISTINCT `+rowKeyExpr+` AS k
				FROM seats s JOIN sections sc ON sc.org_id = s.org_id AND sc.id = s.section_id
				WHERE s.org_id = $1 AND s.event_id = $2 AND sc.kind = 'seated' ORDER BY k) x`, org, event); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	seats, err := offerSeats(ctx, tx, org, event, now)
	if err != nil {
		return nil, err
	}
	var offers []Offer
	for _, e := range line {
		o, ok, err := offerOne(ctx, tx, e, seats, strict, now, ttl)
		if err != nil {
			return nil, err
		}
		if ok {
			offers = append(offers, o)
		}
	}
	return offers, nil
}

// offerSeat is a seat, or a standing place, as an offer round sees it.
type offerSeat struct {
	RowSeat
	section  uuid.UUID
	category string
	ga       bool // a place of a general-admission section
	// heldBack: an accessible or companion seat before the event's
	// accessible_release_at.
	heldBack bool
}

// offerSeats reads the event's seats row by row in the order best
// available uses (section position, then seat order), each row's seats by
// number; a standing section's places are one row, after every seated
// row. Nothing is locked: the seats an offer picks are locked and read
// again before they are held.
func offerSeats(ctx context.Context, tx pgx.Tx, org, event uuid.UUID, now time.Time) ([][]*offerSeat, error) {
	rows, err := tx.Query(ctx, `
		SELECT s.id, s.number, s.status = 'available', s.section_id, s.row_label, coalesce(s.category, ''),
		       NOT accessible_open(s.accessible, s.companion, e.accessible_release_at, false, $3), sc.kind = 'ga'
		FROM seats s JOIN sections sc ON sc.org_id = s.org_id AND sc.id = s.section_id
		JOIN events e ON e.org_id = s.org_id AND e.id = s.event_id
		WHERE s.org_id = $1 AND s.event_id = $2
		ORDER BY sc.kind = 'ga', sc.position, s.section_id, s.idx`, org, event, now)
	if err != nil {
		return nil, err
	}
	type key struct {
		sec uuid.UUID
		row string
	}
	at := map[key]int{}
	var out [][]*offerSeat
	var row string
	var x offerSeat
	if _, err := pgx.ForEachRow(rows, []any{&x.ID, &x.Number, &x.Free, &x.section, &row, &x.category, &x.heldBack, &x.ga}, func() error {
		k := key{x.section, row}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		st := x
		out[i] = append(out[i], &st)
		return nil
	}); err != nil {
		return nil, err
	}
	for _, r := range out {
		slices.SortFunc(r, func(a, b *offerSeat) int { return a.Number - b.Number })
	}
	return out, nil
}

// pickOffer chooses n free seats that ok accepts, ranked as best available
// ranks them: n side by side in one row (consecutive numbers) in the
// frontmost row that has them, the block nearest the row's centre; any n
// places of one standing section; else the fewest rows, longest runs
// first, each run taken from its start (or its end, if the start would
// leave a seat alone). Under the strict rule a choice that would leave a
// seat alone in its row is passed over, and nil is returned when every
// choice would; standing places have no neighbours.
func pickOffer(rows [][]*offerSeat, n int, ok func(*offerSeat) bool, strict bool) []*offerSeat {
	fits := func(pick []*offerSeat) bool {
		if !strict {
			return true
		}
		take := map[uuid.UUID]bool{}
		for _, st := range pick {
			take[st.ID] = true
		}
		for _, r := range rows {
			if r[0].ga || !slices.ContainsFunc(r, func(st *offerSeat) bool { return take[st.ID] }) {
				continue
			}
			plain := make([]RowSeat, len(r))
			for i, st := range r {
				plain[i] = st.RowSeat
			}
			if len(NewOrphans(plain, take)) > 0 {
				return false
			}
		}
		return true
	}
	eligible := func(st *offerSeat) bool { return st.Free && ok(st) }
	// run is how many seats from r[i] on are eligible and side by side.
	run := func(r []*offerSeat, i int) int {
		j := i
		for j < len(r) && eligible(r[j]) && (j == i || r[j].Number == r[j-1].Number+1) {
			j++
		}
		return j - i
	}
	for _, r := range rows {
		if r[0].ga {
			var places []*offerSeat
			for _, st := range r {
				if len(places) < n && eligible(st) {
					places = append(places, st)
				}
			}
			if len(places) == n {
				return places
			}
			continue
		}
		centre := float64(r[0].Number+r[len(r)-1].Number) / 2
		var starts []int
		for i := 0; i+n <= len(r); i++ {
			if run(r, i) >= n {
				starts = append(starts, i)
			}
		}
		off := func(i int) float64 { return math.Abs(float64(r[i].Number+r[i+n-1].Number)/2 - centre) }
		slices.SortStableFunc(starts, func(a, b int) int { return cmp.Compare(off(a), off(b)) })
		for _, i := range starts {
			if block := r[i : i+n]; fits(block) {
				return slices.Clone(block)
			}
		}
	}
	// The split: runs of seats side by side, and each standing section's
	// places as one run, longest first.
	var spans [][]*offerSeat
	for _, r := range rows {
		if r[0].ga {
			if places := slices.DeleteFunc(slices.Clone(r), func(st *offerSeat) bool { return !eligible(st) }); len(places) > 0 {
				spans = append(spans, places)
			}
			continue
		}
		for i := 0; i < len(r); {
			k := run(r, i)
			if k == 0 {
				i++
				continue
			}
			spans = append(spans, r[i:i+k])
			i += k
		}
	}
	slices.SortStableFunc(spans, func(a, b []*offerSeat) int { return cmp.Compare(len(b), len(a)) })
	var pick []*offerSeat
	for _, sp := range spans {
		k := min(n-len(pick), len(sp))
		if k == 0 {
			break
		}
		part := sp[:k]
		if end := sp[len(sp)-k:]; !fits(part) && fits(end) {
			part = end
		}
		pick = append(pick, part...)
	}
	if len(pick) < n || !fits(pick) {
		return nil
	}
	return pick
}

// offerAttempts bounds how often one entry's offer picks again after
// seats it picked were taken (or locked) meanwhile.
const offerAttempts = 3

// offerOne holds the seats one entry asked for, if all are free, and
// marks the entry offered; view is the round's view of the event, which
// the seats offered (or found taken) leave.
func offerOne(ctx context.Context, tx pgx.Tx, e WaitlistEntry, view [][]*offerSeat, strict bool, now time.Time, ttl time.Duration) (Offer, bool, error) {
	// An entry that names no section waits for seats, not standing
	// places, unless the event has nothing but standing places.
	standingOnly := !slices.ContainsFunc(view, func(r []*offerSeat) bool { return !r[0].ga })
	ok := func(st *offerSeat) bool {
		if e.Section == uuid.Nil && st.ga && !standingOnly {
			return false
		}
		return (!st.heldBack || e.Accessible) && (e.Category == "" || st.category == e.Category) && (e.Section == uuid.Nil || st.section == e.Section)
	}
	var reqs []HoldRequest
	var picked []*offerSeat
	for attempt := 0; len(reqs) < e.Seats; attempt++ {
		picked = pickOffer(view, e.Seats, ok, strict)
		if picked == nil || attempt == offerAttempts {
			return Offer{}, false, nil
		}
		ids := make([]uuid.UUID, len(picked))
		for i, st := range picked {
			ids[i] = st.ID
		}
		// Seats being held right now by someone else are skipped, not
		// waited for: whoever locked them is about to take them.
		rows, err := tx.Query(ctx, `
			SELECT id, fence FROM seats WHERE org_id = $1 AND event_id = $2 AND id = ANY($3::uuid[]) AND status = 'available'
			ORDER BY id FOR UPDATE SKIP LOCKED`, e.Org, e.Event, ids)
		if err != nil {
			return Offer{}, false, err
		}
		reqs = reqs[:0]
		got := map[uuid.UUID]bool{}
		var id uuid.UUID
		var fence int64
		if _, err := pgx.ForEachRow(rows, []any{&id, &fence}, func() error {
			reqs = append(reqs, HoldRequest{SeatID: id, HoldID: NewID(), Fence: fence + 1})
			got[id] = true
			return nil
		}); err != nil {
			return Offer{}, false, err
		}
		for _, st := range picked {
			if !got[st.ID] {
				st.Free = false
			}
		}
	}
	// On a strict event the rule was checked just above, with the rows
	// locked; the hold statement still reads the rest of the rules.
	hp := HoldParams{Org: e.Org, Event: e.Event, User: e.User, Seats: reqs, Now: now, HeldUntil: now.Add(ttl), Source: SourceWaitlist,
		Accessible: e.Accessible, orphansChecked: strict}
	// All or none: a savepoint undoes a partial write (the event closed
	// since the seats were read).
	sp, err := tx.Begin(ctx)
	if err != nil {
		return Offer{}, false, err
	}
	created, err := insertHolds(ctx, sp, hp, reqs)
	if err != nil {
		_ = sp.Rollback(ctx)
		return Offer{}, false, err
	}
	if len(created) != len(reqs) {
		return Offer{}, false, sp.Rollback(ctx)
	}
	if err := sp.Commit(ctx); err != nil {
		return Offer{}, false, err
	}
	for _, st := range picked {
		st.Free = false
	}
	ids := make([]uuid.UUID, len(created))
	seats := make([]uuid.UUID, len(created))
	for i, h := range created {
		ids[i], seats[i] = h.ID, h.SeatID
	}
	if _, err := tx.Exec(ctx, `
		UPDATE waitlist_entries SET status = 'offered', hold_ids = $3, offered_at = $4, offer_until = $5
		WHERE org_id = $1 AND id = $2`,
		e.Org, e.ID, ids, now, hp.HeldUntil); err != nil {
		return Offer{}, false, err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, data)
		VALUES ($1, $2, $3, $4, 'waitlist_entry', $5, jsonb_build_object('seats', $6::uuid[], 'holds', $7::uuid[], 'held_until', $8::timestamptz))`,
		e.Org, e.Event, e.User, ActionWaitlistOffered, e.ID, seats, ids, hp.HeldUntil); err != nil {
		return Offer{}, false, fmt.Errorf("audit offer: %w", err)
	}
	e.Status, e.HoldIDs, e.OfferUntil, e.Offer, e.Position = WaitlistOffered, ids, hp.HeldUntil, OfferHeld, 0
	return Offer{Entry: e, Holds: created}, true, nil
}
