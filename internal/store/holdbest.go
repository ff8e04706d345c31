package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/pg"
)

// BestParams is a best-available hold taken in Postgres alone: the pick,
// the row locks and the hold in one transaction.
type BestParams struct {
	// HoldParams are the hold's (Seats is ignored: the pick fills it).
	HoldParams
	// Fence is the least fencing token for the holds; a seat whose stored
	// fence is higher gets one above it.
	Fence int64
	// Section, when set, is the one section (by label) to pick from.
	Section string
	// Tries bounds how many blocks are tried when others hold them.
	Tries int
	// Pick chooses the block to try from seats — the seated seats read so
	// far, front to back (idx order), whole rows, as committed — without
	// the seats in avoid. final says every row has been read. It returns
	// more when it has too few candidates to choose well and more rows
	// would help, and no block when there is none.
	Pick func(seats []Seat, avoid map[uuid.UUID]bool, final bool, try int) (block []uuid.UUID, more bool)
}

// BestOutcome is what a best-available hold in Postgres found.
type BestOutcome struct {
	HoldOutcome
	// Seats are the seats held, as the pick listed them.
	Seats []uuid.UUID
	// Skipped counts blocks given up because another transaction had a
	// seat of theirs locked, or their row was being decided by another
	// strict hold, or taking them would have left a seat alone.
	Skipped int
	// None: no block was left to try (Tries spent, or none at all).
	None bool
}

// bestChunk is how many seats a best-available pick reads at a time:
// enough rows for a crowd's blocks in most venues, in one round trip.
const bestChunk = 256

// Best picks and holds seats for a best-available request in one
// transaction. Candidates are read as committed, front to back; the pick's
// seats are then locked FOR UPDATE SKIP LOCKED, so seats another
// transaction is holding right now are passed over at once, not waited
// for, and the next block is tried (its own row locks released first, by
// a savepoint). Under the strict orphan rule the block's rows are locked
// for the rule as Create does, waiting only while this transaction
// holds no other row (so two picks never wait on each other), and the
// rule is checked on the rows as committed. The holds are written by the
// one hold statement (cap, sales window, fences), all or none.
func (s *Holds) Best(ctx context.Context, p BestParams) (BestOutcome, error) {
	var out BestOutcome
	err := inTx(ctx, s.db, func(tx pgx.Tx) error {
		out = BestOutcome{}
		// An event that does not take the hold is found by the hold
		// statement, which reads the event row itself. Whether the orphan
		// rule binds the request is Postgres's word, not the caller's cache:
		// the hold statement refuses an unchecked hold on a strict event.
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT orphan_rule = 'strict' AND NOT $3 FROM events WHERE org_id = $1 AND id = $2), false)`,
			p.Org, p.Event, p.Staff).Scan(&p.Strict); err != nil {
			return fmt.Errorf("read the orphan rule: %w", err)
		}
		p.orphansChecked = p.Strict
		avoid := map[uuid.UUID]bool{}
		rowLocked := false
		var seats []Seat
		final := false
		for try := range p.Tries {
			block, err := pickBest(ctx, tx, p, &seats, &final, avoid, try)
			if err != nil {
				return fmt.Errorf("read seats: %w", err)
			}
			if block == nil {
				out.None = true
				return nil
			}
			ok, err := lockBest(ctx, tx, &p, block, &rowLocked)
			if err != nil {
				return fmt.Errorf("lock seats: %w", err)
			}
			if !ok {
				out.Skipped++
				for _, id := range block {
					avoid[id] = true
				}
				continue
			}
			created, err := insertHolds(ctx, tx, p.HoldParams, p.Seats)
			if err != nil {
				return fmt.Errorf("hold: %w", err)
			}
			if len(created) != len(block) {
				if again, err := checkSeats(ctx, tx, p.HoldParams, ""); err == nil && (again.refused() || again.strictUnchecked) {
					out.HoldOutcome = again
					return errChangedMeanwhile
				}
				return fmt.Errorf("best available: %d of %d locked seats held", len(created), len(block))
			}
			out.Created, out.Seats = created, block
			return nil
		}
		out.None = true
		return nil
	})
	if errors.Is(err, errChangedMeanwhile) {
		// The event closed, or its rules changed, since the pick was read:
		// the outcome says which; a changed orphan rule counts as no block.
		o := BestOutcome{HoldOutcome: out.HoldOutcome, None: out.strictUnchecked}
		o.strictUnchecked = false
		return o, nil
	}
	return out, err
}

// pickBest asks p.Pick for a block, reading further rows while it wants
// more. seats and final carry what was read across tries: a seat taken
// meanwhile is in avoid, so the rows need not be read again.
func pickBest(ctx context.Context, tx pgx.Tx, p BestParams, seats *[]Seat, final *bool, avoid map[uuid.UUID]bool, try int) ([]uuid.UUID, error) {
	for {
		if len(*seats) > 0 || *final {
			block, more := p.Pick(*seats, avoid, *final, try)
			if block != nil || !more || *final {
				return block, nil
			}
		}
		from := 0
		if n := len(*seats); n > 0 {
			from = (*seats)[n-1].Idx + 1
		}
		rows, err := tx.Query(ctx, seatColumns+`
			JOIN sections sec ON sec.org_id = s.org_id AND sec.id = s.section_id
			WHERE s.org_id = $1 AND s.event_id = $2 AND sec.kind = 'seated' AND ($3 = '' OR sec.label = $3) AND s.idx >= $4
			ORDER BY s.idx LIMIT $5`, p.Org, p.Event, p.Section, from, bestChunk)
		if err != nil {
			return nil, err
		}
		chunk, err := collectSeats(rows, bestChunk)
		if err != nil {
			return nil, err
		}
		if len(chunk) < bestChunk {
			*final = true
		} else {
			// Whole rows only: the last row may go on in the next chunk
			// (a row's seats are stored together), so it is read again
			// with it. A single row longer than a chunk is read whole.
			last := len(chunk) - 1
			for last > 0 && chunk[last-1].SectionID == chunk[len(chunk)-1].SectionID && chunk[last-1].Row == chunk[len(chunk)-1].Row {
				last--
			}
			if last > 0 {
				chunk = chunk[:last]
			} else if chunk, err = wholeRow(ctx, tx, p, chunk[0]); err != nil {
				return nil, err
			}
		}
		*seats = append(*seats, chunk...)
	}
}

// wholeRow reads every seated seat of first's row from first on.
func wholeRow(ctx context.Context, tx pgx.Tx, p BestParams, first Seat) ([]Seat, error) {
	rows, err := tx.Query(ctx, seatColumns+`
		WHERE s.org_id = $1 AND s.event_id = $2 AND s.section_id = $3 AND s.row_label = $4 AND s.idx >= $5
		ORDER BY s.idx`, p.Org, p.Event, first.SectionID, first.Row, first.Idx)
	if err != nil {
		return nil, err
	}
	return collectSeats(rows, bestChunk)
}

// lockBest locks a picked block's seats, skipping any another transaction
// has locked, and under the strict rule its rows and the rule's check. It
// fills p.Seats with the hold requests when every seat is ours; otherwise
// it undoes its locks and reports false.
func lockBest(ctx context.Context, tx pgx.Tx, p *BestParams, block []uuid.UUID, rowLocked *bool) (bool, error) {
	ok, err := lockBestSeats(ctx, tx, p, block, rowLocked)
	if err == nil && ok {
		return true, nil
	}
	if err != nil && !pg.IsLockNotAvailable(err) && !pg.IsStatementTimeout(err) {
		return false, err
	}
	// Another transaction has a seat or the row (or the lock or the
	// rule's check could not be had in time, on a machine short of CPU):
	// release what this try locked and give the block up.
	if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT best_pick`); err != nil {
		return false, err
	}
	return false, nil
}

func lockBestSeats(ctx context.Context, tx pgx.Tx, p *BestParams, block []uuid.UUID, rowLocked *bool) (bool, error) {
	// The savepoint goes with the lock in one round trip: a try that
	// fails rolls back to it, releasing the seats it did lock.
	var b pgx.Batch
	b.Queue(`SAVEPOINT best_pick`)
	b.Queue(`
		SELECT id, fence FROM seats
		WHERE org_id = $1 AND event_id = $2 AND id = ANY($3::uuid[]) AND status = 'available'
		ORDER BY id FOR UPDATE SKIP LOCKED`, p.Org, p.Event, block)
	br := tx.SendBatch(ctx, &b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return false, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return false, err
	}
	fences := map[uuid.UUID]int64{}
	var id uuid.UUID
	var f int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &f}, func() error {
		fences[id] = f
		return nil
	}); err != nil {
		_ = br.Close()
		return false, err
	}
	if err := br.Close(); err != nil {
		return false, err
	}
	if len(fences) < len(block) {
		return false, nil
	}
	fence := p.Fence
	for _, f := range fences {
		fence = max(fence, f+1)
	}
	p.Seats = make([]HoldRequest, len(block))
	for i, id := range block {
		p.Seats[i] = HoldRequest{SeatID: id, HoldID: NewID(), Fence: fence}
	}
	if !p.Strict {
		return true, nil
	}
	// Set before trying: a try that fails part-way may keep a row.
	wait := !*rowLocked
	*rowLocked = true
	if ok, err := lockRowsOf(ctx, tx, p.HoldParams, wait); err != nil || !ok {
		return false, err
	}
	orphans, err := orphansOf(ctx, tx, p.HoldParams)
	return len(orphans) == 0, err
}

// lockRowsOf takes the strict rule's row locks (see lockRows) for p's
// seats: waiting for them when wait is set, else only if free at once.
func lockRowsOf(ctx context.Context, tx pgx.Tx, p HoldParams, wait bool) (bool, error) {
	if wait {
		_, err := lockRows(ctx, tx, p)
		return true, err
	}
	var got []bool
	rows, err := tx.Query(ctx, `SELECT pg_try_advisory_xact_lock(k) FROM (`+rowKeysSQL+`) x`, rowKeysArgs(p)...)
	if err == nil {
		got, err = pgx.CollectRows(rows, pgx.RowTo[bool])
	}
	return err == nil && !slices.Contains(got, false), err
}
