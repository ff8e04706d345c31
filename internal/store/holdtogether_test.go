package store_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/pg"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestHoldsTogetherDecideInOrder queues holds of several seats on a
// strict event so that they share one transaction, including pairs that
// are fine alone but together leave a seat alone, and checks each is
// decided as if they had come one after the other: the second of such a
// pair is refused naming the seat, a request sharing a seat with an
// earlier one is decided after it, a taken seat refuses its request
// whole, and a seat staff left alone is not blamed on a buyer. Nothing of
// a refused request is written.
func TestHoldsTogetherDecideInOrder(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	st := a.Store
	tn := testenv.NewTenant(t, a, 6)
	staff := tn.BoxOffice
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	if _, err := a.Pool.Exec(ctx, `UPDATE events SET orphan_rule = 'strict' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	all, err := st.Events.Seats(ctx, tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	seat := func(row string, n int) uuid.UUID {
		i := slices.IndexFunc(all, func(s store.Seat) bool { return s.Row == row && s.Number == n })
		if i < 0 {
			t.Fatalf("no seat %s%d", row, n)
		}
		return all[i].ID
	}
	rows := []string{all[0].Row, all[len(all)-1].Row}
	A, B := rows[0], rows[1]
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := func(user uuid.UUID, staff bool, seats ...uuid.UUID) store.HoldParams {
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: user, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api", Strict: !staff, Staff: staff}
		for _, s := range seats {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: s, HoldID: uuid.New(), Fence: 1})
			// The rows' lock keys, as a process names them from its cache.
			st := all[slices.IndexFunc(all, func(x store.Seat) bool { return x.ID == s })]
			if k := uint64(store.RowKey(ev.ID, st.SectionID, st.Row)); p.Strict && !slices.Contains(p.Rows, k) { // #nosec G115 -- a key's bits
				p.Rows = append(p.Rows, k)
			}
		}
		return p
	}
	u := tn.Buyers
	// B2 is held (by staff, who may leave a seat alone) before: B1 is
	// alone from the start.
	if out, err := st.Holds.Create(ctx, params(u[5].ID, true, seat(B, 2))); err != nil || len(out.Created) != 1 {
		t.Fatalf("setup: %+v %v", out, err)
	}

	type call struct {
		name string
		p    store.HoldParams
		out  store.HoldOutcome
		err  error
	}
	calls := []*call{
		{name: "A1-A2", p: params(u[0].ID, false, seat(A, 1), seat(A, 2))},
		{name: "A4-A5 after A1-A2 leaves A3 alone", p: params(u[1].ID, false, seat(A, 4), seat(A, 5))},
		{name: "A5-A6 shares A5, decided after", p: params(u[2].ID, false, seat(A, 5), seat(A, 6))},
		{name: "B1-B2, B2 taken", p: params(u[3].ID, false, seat(B, 1), seat(B, 2))},
		{name: "staff B8-B9 leaves B10 alone", p: params(staff.ID, true, seat(B, 8), seat(B, 9))},
		{name: "B6-B7 after staff's", p: params(u[4].ID, false, seat(B, 6), seat(B, 7))},
	}
	queued, unblock := st.Holds.BlockBatches()
	var wg sync.WaitGroup
	for i, c := range calls {
		// In order: the batch keeps the order requests queued in.
		wg.Go(func() { c.out, c.err = st.Holds.Create(ctx, c.p) })
		testsvc.Eventually(t, 10*time.Second, "hold queued", func() bool { return queued() == i+1 })
	}
	stmts, _ := st.Holds.BatchStats()
	unblock()
	wg.Wait()
	for _, c := range calls {
		if c.err != nil {
			t.Fatalf("%s: %v", c.name, c.err)
		}
	}
	want := map[string]struct {
		created int
		orphans []uuid.UUID
		taken   []uuid.UUID
	}{
		"A1-A2":                             {created: 2},
		"A4-A5 after A1-A2 leaves A3 alone": {orphans: []uuid.UUID{seat(A, 3)}},
		"A5-A6 shares A5, decided after":    {created: 2},
		"B1-B2, B2 taken":                   {taken: []uuid.UUID{seat(B, 2)}},
		"staff B8-B9 leaves B10 alone":      {created: 2},
		"B6-B7 after staff's":               {created: 2},
	}
	for _, c := range calls {
		w := want[c.name]
		if len(c.out.Created) != w.created || !slices.Equal(c.out.Orphans, w.orphans) || !slices.Equal(c.out.Taken, w.taken) {
			t.Errorf("%s: created %d, orphans %v, taken %v; want %d, %v, %v", c.name, len(c.out.Created), c.out.Orphans,
				c.out.Taken, w.created, w.orphans, w.taken)
		}
	}
	// One batch: the request decided after it shares its transaction slot.
	if after, _ := st.Holds.BatchStats(); after-stmts != 1 {
		t.Errorf("%d batches, want the six requests in one", after-stmts)
	}
	var held []string
	dbRows, err := a.Pool.Query(ctx, `SELECT s.row_label || s.number FROM seats s JOIN seat_holds h ON h.id = s.hold_id
		WHERE s.event_id = $1 AND h.status = 'active' ORDER BY 1`, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	for dbRows.Next() {
		var s string
		if err := dbRows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	if err := dbRows.Err(); err != nil {
		t.Fatal(err)
	}
	wantHeld := []string{A + "1", A + "2", A + "5", A + "6", B + "2", B + "6", B + "7", B + "8", B + "9"}
	slices.Sort(wantHeld)
	if !slices.Equal(held, wantHeld) {
		t.Fatalf("held %v, want %v", held, wantHeld)
	}
	var counted int
	if err := a.Pool.QueryRow(ctx, `SELECT coalesce(sum(active), 0) FROM buyer_holds WHERE event_id = $1`, ev.ID).Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if counted != len(wantHeld) {
		t.Fatalf("buyer counters sum to %d, want %d", counted, len(wantHeld))
	}
}

// TestFreshHoldRefusesOwnSeat: a request that must hold every seat anew
// (best available) finds one of its seats held by the same buyer
// already, picked from a cache that had not seen that hold. The seat is
// taken, not the buyer's, and nothing is held — in a shared transaction
// and in one of its own.
func TestFreshHoldRefusesOwnSeat(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := func(shared bool, ids ...uuid.UUID) store.HoldParams {
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api", ShortWait: !shared, Fresh: true}
		for _, id := range ids {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		return p
	}
	if out, err := a.Store.Holds.Create(ctx, params(true, seats[0])); err != nil || len(out.Created) != 1 {
		t.Fatalf("setup: %+v %v", out, err)
	}
	for _, shared := range []bool{true, false} {
		out, err := a.Store.Holds.Create(ctx, params(shared, seats[0], seats[1]))
		if err != nil || len(out.Created)+len(out.Existing) != 0 || !slices.Equal(out.Taken, []uuid.UUID{seats[0]}) {
			t.Fatalf("shared %v: %+v %v; want seat 0 taken, nothing held", shared, out, err)
		}
	}
	var active int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, ev.ID).Scan(&active); err != nil {
		t.Fatal(err)
	}
	if active != 1 {
		t.Fatalf("%d active holds, want the first one only", active)
	}
}

// TestSharedHoldsOnOwnConnections: the shared hold statement and the
// shared transaction each run on the connections Holds.Batch is given for
// them, not on the store's pool, and hold as they do there.
func TestSharedHoldsOnOwnConnections(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	open := func() *pgxpool.Pool {
		p, err := pg.Open(ctx, testsvc.Config(t).DatabaseURL, pg.Options{MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	statements, transactions := open(), open()
	st := store.New(a.Pool)
	st.Holds.Batch(1, 64, statements, transactions)
	s0, t0 := statements.Stat().AcquireCount(), transactions.Stat().AcquireCount()
	now := time.Now().UTC().Truncate(time.Millisecond)
	for _, ids := range [][]uuid.UUID{{seats[0]}, {seats[2], seats[3]}} { // one statement, one transaction
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api"}
		for _, id := range ids {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		if out, err := st.Holds.Create(ctx, p); err != nil || len(out.Created) != len(ids) {
			t.Fatalf("hold %d seats: %+v %v", len(ids), out, err)
		}
	}
	if s, tx := statements.Stat().AcquireCount()-s0, transactions.Stat().AcquireCount()-t0; s != 1 || tx != 1 {
		t.Errorf("the statements' connections taken %d times, the transactions' %d; want once each", s, tx)
	}
}

// TestHoldsTogetherAllOrNone: a shared transaction sends its hold
// statement and COMMIT together, so a hold its reads accepted but its
// statement cannot write (the event closed in between) must fail the
// statement and roll the transaction back; each request is then decided
// on its own. Two buyers' two-seat requests on two events share one
// transaction; one event closes after the reads. The other buyer's seats
// are held, the closed event's buyer is told it is not on sale, and
// nothing of it is written.
func TestHoldsTogetherAllOrNone(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	st := a.Store
	tn := testenv.NewTenant(t, a, 2)
	open := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	closing := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 6)
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := func(ev uuid.UUID, user uuid.UUID) store.HoldParams {
		p := store.HoldParams{Org: tn.Org.ID, Event: ev, User: user, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api"}
		for _, id := range testenv.SeatIDs(t, a, tn.Org.ID, ev)[:2] {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		return p
	}
	reqs := []store.HoldParams{params(open.ID, tn.Buyers[0].ID), params(closing.ID, tn.Buyers[1].ID)}
	var closed sync.Once
	st.Holds.BetweenReadAndWrite(func() {
		closed.Do(func() {
			if _, err := a.Pool.Exec(ctx, `UPDATE events SET status = 'closed' WHERE id = $1`, closing.ID); err != nil {
				t.Error(err)
			}
		})
	})
	queued, unblock := st.Holds.BlockBatches()
	outs, errs := make([]store.HoldOutcome, len(reqs)), make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, p := range reqs {
		wg.Go(func() { outs[i], errs[i] = st.Holds.Create(ctx, p) })
	}
	for deadline := time.Now().Add(10 * time.Second); queued() < len(reqs); time.Sleep(5 * time.Millisecond) { // poll: every request queued
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests queued", queued(), len(reqs))
		}
	}
	statements, rows := st.Holds.BatchStats()
	unblock()
	wg.Wait()
	if s, r := st.Holds.BatchStats(); s-statements != 1 || r-rows != 2 {
		t.Fatalf("%d transactions carrying %d requests, want both in one", s-statements, r-rows)
	}
	if errs[0] != nil || len(outs[0].Created) != 2 {
		t.Errorf("open event: %+v %v; want both seats held", outs[0], errs[0])
	}
	if errs[1] != nil || len(outs[1].Created) != 0 || !outs[1].NotOnSale {
		t.Errorf("closed event: %+v %v; want not on sale, nothing held", outs[1], errs[1])
	}
	for i, ev := range []uuid.UUID{open.ID, closing.ID} {
		var holds, held, audits, counted int
		if err := a.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'),
			(SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'held'),
			(SELECT count(*) FROM audit_log WHERE event_id = $1 AND action = 'hold.created'),
			(SELECT coalesce(sum(active), 0) FROM buyer_holds WHERE event_id = $1)`, ev).
			Scan(&holds, &held, &audits, &counted); err != nil {
			t.Fatal(err)
		}
		want := 2 * (1 - i)
		if holds != want || held != want || audits != want || counted != want {
			t.Errorf("event %d: %d holds, %d held seats, %d audit rows, buyers counted %d; want %d of each", i, holds, held, audits, counted, want)
		}
	}
}
