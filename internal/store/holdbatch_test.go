package store_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"seatd/internal/apperr"
	"seatd/internal/pg"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestHoldBatchRowsStayApart queues holds of two tenants in one coalesced
// statement together with two rows that must not be written: one whose
// hold id already names an ended hold (a unique violation, which fails
// the whole statement) and one whose fence is older than its seat's. Every
// other hold must still be created once, in its own org, with its audit
// row; the two bad rows must be answered on their own (not created; stale
// fence) and write nothing.
func TestHoldBatchRowsStayApart(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	st := a.Store
	type tenant struct {
		org, ev, user uuid.UUID
		seats         []uuid.UUID
	}
	var ts []tenant
	for range 2 {
		tn := testenv.NewTenant(t, a, 1)
		ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
		ts = append(ts, tenant{org: tn.Org.ID, ev: ev.ID, user: tn.Buyers[0].ID, seats: testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)})
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := func(x tenant, seat, holdID uuid.UUID, fence int64) store.HoldParams {
		return store.HoldParams{Org: x.org, Event: x.ev, User: x.user, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api", Seats: []store.HoldRequest{{SeatID: seat, HoldID: holdID, Fence: fence}}}
	}
	// An ended hold on seat 0 of tenant 0 (its id is then reused), and seat 1
	// of tenant 0 left with fence 500.
	x := ts[0]
	ended := uuid.New()
	for i, id := range []uuid.UUID{ended, uuid.New()} {
		out, err := st.Holds.Create(ctx, params(x, x.seats[i], id, 500))
		if err != nil || len(out.Created) != 1 {
			t.Fatalf("setup hold: %+v, %v", out, err)
		}
		if _, err := st.Holds.Release(ctx, x.org, id, x.user, false, ""); err != nil {
			t.Fatal(err)
		}
	}

	queued, unblock := st.Holds.BlockBatches()
	type call struct {
		p   store.HoldParams
		out store.HoldOutcome
		err error
	}
	var calls []*call
	calls = append(calls,
		&call{p: params(x, x.seats[2], ended, 1000)},    // hold id of an ended hold
		&call{p: params(x, x.seats[1], uuid.New(), 10)}, // fence older than the seat's
	)
	for _, x := range ts {
		for _, seat := range x.seats[3:] {
			calls = append(calls, &call{p: params(x, seat, uuid.New(), 1000)})
		}
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.out, c.err = st.Holds.Create(ctx, c.p) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for queued() < len(calls) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d holds queued", queued(), len(calls))
		}
		time.Sleep(5 * time.Millisecond) // poll interval: every hold queued
	}
	statements, _ := st.Holds.BatchStats()
	unblock()
	wg.Wait()
	if s, _ := st.Holds.BatchStats(); s-statements != 1 {
		t.Errorf("%d statements for %d queued holds, want 1", s-statements, len(calls))
	}

	for i, c := range calls {
		if c.err != nil {
			t.Errorf("call %d: %v", i, c.err)
			continue
		}
		req := c.p.Seats[0]
		switch i {
		case 0:
			if len(c.out.Created) != 0 {
				t.Errorf("a hold reusing an ended hold's id was created: %+v", c.out)
			}
		case 1:
			if len(c.out.Created) != 0 || len(c.out.Stale) != 1 {
				t.Errorf("stale fence: %+v, want one stale seat", c.out)
			}
		default:
			if len(c.out.Created) != 1 || c.out.Created[0].ID != req.HoldID || c.out.Created[0].SeatID != req.SeatID {
				t.Errorf("call %d: %+v, want hold %s created", i, c.out, req.HoldID)
			}
		}
	}
	for _, c := range calls[2:] {
		req := c.p.Seats[0]
		var org, event, seat, user uuid.UUID
		var status string
		if err := a.Pool.QueryRow(ctx, `SELECT org_id, event_id, seat_id, user_id, status FROM seat_holds WHERE id = $1`, req.HoldID).
			Scan(&org, &event, &seat, &user, &status); err != nil {
			t.Fatalf("hold %s: %v", req.HoldID, err)
		}
		if org != c.p.Org || event != c.p.Event || seat != req.SeatID || user != c.p.User || status != "active" {
			t.Errorf("hold %s stored as org %s event %s seat %s user %s %s", req.HoldID, org, event, seat, user, status)
		}
	}
	for i, x := range ts {
		var holds, audits, held int
		if err := a.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM seat_holds WHERE org_id = $1 AND event_id = $2 AND status = 'active'),
			(SELECT count(*) FROM audit_log WHERE org_id = $1 AND event_id = $2 AND action = 'hold.created'),
			(SELECT count(*) FROM seats WHERE org_id = $1 AND event_id = $2 AND status = 'held')`, x.org, x.ev).
			Scan(&holds, &audits, &held); err != nil {
			t.Fatal(err)
		}
		want, wantAudit := len(x.seats)-3, len(x.seats)-3
		if i == 0 {
			wantAudit += 2 // the two setup holds
		}
		if holds != want || held != want || audits != wantAudit {
			t.Errorf("tenant %d: %d active holds, %d held seats, %d audit rows; want %d, %d, %d", i, holds, held, audits, want, want, wantAudit)
		}
	}
}

// TestHoldBatchCap queues, in one coalesced statement, four single-seat
// holds of a buyer whose cap is two and four of another buyer without
// one. The statement that would lift the first buyer over the cap fails
// whole; each hold is then tried alone, so the first buyer gets two holds
// and two hold_limit refusals, the other buyer all four, and the counter
// matches the active holds.
func TestHoldBatchCap(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	st := a.Store
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 8)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	now := time.Now().UTC().Truncate(time.Millisecond)
	queued, unblock := st.Holds.BlockBatches()
	type call struct {
		p   store.HoldParams
		out store.HoldOutcome
		err error
	}
	var calls []*call
	for i, seat := range seats {
		u, cap := tn.Buyers[0].ID, 2
		if i%2 == 1 {
			u, cap = tn.Buyers[1].ID, 0
		}
		calls = append(calls, &call{p: store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: u, Now: now,
			HeldUntil: now.Add(time.Minute), Source: "api", Cap: cap,
			Seats: []store.HoldRequest{{SeatID: seat, HoldID: uuid.New(), Fence: 1}}}})
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.out, c.err = st.Holds.Create(ctx, c.p) })
	}
	deadline := time.Now().Add(10 * time.Second)
	for queued() < len(calls) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d holds queued", queued(), len(calls))
		}
		time.Sleep(5 * time.Millisecond) // poll interval: every hold queued
	}
	unblock()
	wg.Wait()
	created, limited := map[uuid.UUID]int{}, map[uuid.UUID]int{}
	for _, c := range calls {
		switch {
		case apperr.CodeOf(c.err) == apperr.HoldLimit:
			limited[c.p.User]++
		case c.err != nil:
			t.Fatalf("hold: %v", c.err)
		default:
			created[c.p.User] += len(c.out.Created)
		}
	}
	capped, free := tn.Buyers[0].ID, tn.Buyers[1].ID
	if created[capped] != 2 || limited[capped] != 2 || created[free] != 4 || limited[free] != 0 {
		t.Fatalf("created %v, refused %v; want 2+2 for the capped buyer, 4+0 for the other", created, limited)
	}
	for _, u := range []uuid.UUID{capped, free} {
		var active, counted int
		if err := a.Pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM seat_holds WHERE event_id = $1 AND user_id = $2 AND status = 'active'),
			(SELECT active FROM buyer_holds WHERE event_id = $1 AND user_id = $2)`, ev.ID, u).Scan(&active, &counted); err != nil {
			t.Fatal(err)
		}
		if active != created[u] || counted != created[u] {
			t.Fatalf("buyer %s: %d active, counter %d, want %d", u, active, counted, created[u])
		}
	}
}

// TestHoldBatchPostgresUnreachable queues holds while no connection to
// Postgres can be made. The shared statement fails once for all of them,
// each caller gets the error and none is an unknown outcome (nothing was
// sent); the holds are not tried again one by one, which would only be
// as many more connection attempts on a Postgres that is down or still
// starting.
func TestHoldBatchPostgresUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var dials atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			_ = c.Close() // as a Postgres going down does
		}
	}()
	pool, err := pgxpool.New(ctx, "postgres://seatd@"+ln.Addr().String()+"/seatd?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := store.New(pool)
	st.Holds.Batch(1, 64, nil, nil)

	queued, unblock := st.Holds.BlockBatches()
	now := time.Now().UTC().Truncate(time.Millisecond)
	org, ev, user := uuid.New(), uuid.New(), uuid.New()
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		p := store.HoldParams{Org: org, Event: ev, User: user, Now: now, HeldUntil: now.Add(time.Minute), Source: "api",
			Seats: []store.HoldRequest{{SeatID: uuid.New(), HoldID: uuid.New(), Fence: 1}}}
		wg.Go(func() { _, errs[i] = st.Holds.Create(ctx, p) })
	}
	testsvc.Eventually(t, 10*time.Second, "every hold queued", func() bool { return queued() == len(errs) })
	unblock()
	wg.Wait()
	for i, err := range errs {
		if err == nil || pg.MaybeCommitted(err) {
			t.Errorf("hold %d: %v, want a failure to connect (not an unknown outcome)", i, err)
		}
	}
	// pgx may dial more than once for one failed connect; one try per
	// hold would be as many dials as holds.
	if n := dials.Load(); n >= int64(len(errs)) {
		t.Errorf("%d connection attempts for one shared statement of %d holds", n, len(errs))
	}
}

// TestPingHoldPools: the readiness ping does not queue behind the shared
// holds' busy connections (their pools have one or two, and a probe that
// waited its turn took most of a second after a Postgres restart), yet it
// still finds an idle one that broke and has its pool drop it.
func TestPingHoldPools(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	var pools [2]*pgxpool.Pool
	for i := range pools {
		p, err := pg.Open(ctx, a.Cfg.DatabaseURL, pg.Options{MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		pools[i] = p
	}
	st := store.New(a.Pool)
	st.Holds.Batch(1, 64, pools[0], pools[1])

	// The statements' only connection is busy: without waiting for it,
	// the ping answers (it would otherwise wait out its deadline).
	busy, err := pools[0].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = st.Ping(pctx)
	cancel()
	busy.Release()
	if err != nil {
		t.Fatalf("ping with the shared statements' connection busy: %v", err)
	}

	// The transactions' idle connection is cut off by Postgres.
	c, err := pools[1].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Conn().PgConn().PID()
	c.Release()
	if _, err := a.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "the backend gone", func() bool {
		var n int
		err := a.Pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n)
		return err == nil && n == 0
	})
	if err := st.Ping(ctx); err != nil {
		t.Fatalf("ping after a shared transactions' idle connection broke: %v", err)
	}
	// The pool destroys a released broken connection in the background.
	testsvc.Eventually(t, 5*time.Second, "the broken idle connection out of its pool", func() bool {
		return pools[1].Stat().TotalConns() == 0
	})
	c, err = pools[1].Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if err := c.Ping(ctx); err != nil || c.Conn().PgConn().PID() == pid {
		t.Fatalf("next connection: pid %d (broken one %d), ping %v", c.Conn().PgConn().PID(), pid, err)
	}
}
