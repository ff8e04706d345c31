package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestChangeFeedReadByIndex: with a long audit history, the change feed's
// read of an event still goes to the feed index for the range past the
// cursor, not through the whole log. (Left to the planner, which guesses
// a third of an event's history lies past any cursor, it scanned the
// whole log on every round: 100-500 ms a read at a few hundred thousand
// rows.) It runs on a database of its own, so its history is the whole
// log and its bulk insert does not hold up the package's other tests.
func TestChangeFeedReadByIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := planApp(t, "feedplan")

	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 10, 50)
	// A sale's worth of history: 40 000 changes of the event's seats.
	if _, err := a.Pool.Exec(ctx, `
		INSERT INTO audit_log (org_id, event_id, actor_id, action, entity, entity_id, seat_id, data)
		SELECT s.org_id, s.event_id, $3, 'hold.created', 'seat_hold', gen_random_uuid(), s.id, '{}'
		FROM seats s, generate_series(1, 80)
		WHERE s.org_id = $1 AND s.event_id = $2`, tn.Org.ID, ev.ID, tn.Buyers[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `ANALYZE audit_log`); err != nil {
		t.Fatal(err)
	}
	var snap string
	if err := a.Pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	// A follower reads its events in one statement: ten of them here (the
	// one event ten times, as far as the planner can tell).
	var is []int32
	var orgs, evs []any
	var snaps []string
	for i := range 10 {
		is, orgs, evs, snaps = append(is, int32(i)), append(orgs, tn.Org.ID), append(evs, ev.ID), append(snaps, snap)
	}
	// with a round's worth of its own holds to leave out
	known := make([]uuid.UUID, 2000)
	for i := range known {
		known[i] = uuid.New()
	}
	text := explain(t, a, store.ChangesSQL, is, orgs, evs, snaps, known)
	if strings.Contains(text, "Seq Scan on audit_log") || !strings.Contains(text, "audit_log_feed_idx") {
		t.Fatalf("the feed read does not use the feed index on a long history:\n%s", text)
	}
	// The line's read, in the same round, passes over the seats' history
	// by its own index.
	text = explain(t, a, store.LineSQL, is, orgs, evs, snaps)
	if strings.Contains(text, "Seq Scan on audit_log") || !strings.Contains(text, "audit_log_line_idx") {
		t.Fatalf("the line's read does not use the line index on a long history:\n%s", text)
	}
}

// TestEventSeatsReadByHoldKey: an event's seats are read with their holds
// (loading an event, and in the change feed) by one primary-key probe per
// seat even when the statistics date from before a sale, when the
// organization had no active hold. (As a plain join the planner believed
// them, and compared every seat with every active hold of the
// organization: 9.4 s to load an event of 4 000 seats at 38 000 active
// holds, past the statement timeout.) It runs on a database of its own,
// whose statistics only it moves.
func TestEventSeatsReadByHoldKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := planApp(t, "seatplan")
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 10, 50)
	other := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := a.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	// Statistics from before the sale: many holds, none active.
	exec(`ALTER TABLE seat_holds SET (autovacuum_enabled = false)`)
	holds := `
		INSERT INTO seat_holds (id, org_id, event_id, seat_id, user_id, status, held_until, fence, source, created_at, ended_at)
		SELECT gen_random_uuid(), $1, $2, gen_random_uuid(), $3, $4, now() + interval '1 hour', 1, 'web', now(),
		       CASE WHEN $4 = 'active' THEN NULL ELSE now() END
		FROM generate_series(1, 20000)`
	exec(holds, tn.Org.ID, other.ID, tn.Buyers[0].ID, "expired")
	exec(`ANALYZE seat_holds`)
	// The sale: as many active holds again, unseen by the statistics.
	exec(holds, tn.Org.ID, other.ID, tn.Buyers[0].ID, "active")

	// byKey says whether every read of seat_holds in plan is a probe of
	// its primary key.
	byKey := func(plan string) bool {
		n := 0
		for _, line := range strings.Split(plan, "\n") {
			if strings.Contains(line, " on seat_holds ") {
				n++
				if !strings.Contains(line, "Index Scan using seat_holds_pkey") {
					return false
				}
			}
		}
		return n > 0
	}
	load := explain(t, a, store.SeatColumns+` WHERE s.org_id = $1 AND s.event_id = $2 ORDER BY s.idx`, tn.Org.ID, ev.ID)
	if !byKey(load) || strings.Contains(load, "Materialize") {
		t.Errorf("an event's seats are not read with one hold probe per seat:\n%s", load)
	}
	// The change feed reads the holds of the seats it returns the same way.
	var snap string
	if err := a.Pool.QueryRow(ctx, `SELECT pg_current_snapshot()::text`).Scan(&snap); err != nil {
		t.Fatal(err)
	}
	feed := explain(t, a, store.ChangesSQL, []int32{0}, []any{tn.Org.ID}, []any{ev.ID}, []string{snap}, []uuid.UUID{uuid.New()})
	if !byKey(feed) {
		t.Errorf("the change feed does not read holds by their key:\n%s", feed)
	}
}

// planApp is an app on a database of its own, for a plan test: its data
// (and statistics) are the whole database, and its bulk inserts do not
// hold up the package's other tests.
func planApp(t *testing.T, name string) *app.App {
	t.Helper()
	own := testsvc.OwnDatabase(t, name)
	return testenv.App(t, func(c *config.Config) {
		c.DatabaseURL = own
		c.PGStatementTimeout = time.Minute
	})
}

// explain returns Postgres's plan for sql with args, one line per node.
func explain(t *testing.T, a *app.App, sql string, args ...any) string {
	t.Helper()
	rows, err := a.Pool.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}

// TestAttendeeListIndexed: a page of the attendee list is one range of
// the event's ticket index, in seat order, with no sort of the event's
// tickets; and the attendee search can find the bookings a name
// (anywhere in it), an email's start or a reference match through
// indexes, and then their tickets by booking: no part of it needs a scan
// of the event's bookings or tickets.
func TestAttendeeListIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := planApp(t, "attendeeplan")
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 100, 200) // 20 000 seats
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	for _, sql := range []string{
		// Rows only this plan reads: the references they would check
		// are not made.
		`SET LOCAL session_replication_role = replica`,
		`INSERT INTO users (org_id, email, password_hash, role)
		 SELECT $1, 'buyer' || i || '@example.com', 'x', 'buyer' FROM generate_series(1, 10000) i`,
		`INSERT INTO bookings (id, org_id, event_id, user_id, idempotency_key, request_hash,
		     customer_name, customer_email, channel, payment_method)
		 SELECT gen_random_uuid(), $1, $2, u.id, 'k' || g, 'h',
		        CASE WHEN g = 2 THEN 'Customer ' || md5(u.email) END, CASE WHEN g = 2 THEN 'c.' || u.email END,
		        CASE WHEN g = 2 THEN 'box_office' ELSE 'web' END, CASE WHEN g = 2 THEN 'cash' END
		 FROM users u, generate_series(1, 2) g WHERE u.org_id = $1 AND u.email LIKE 'buyer%@example.com'`,
		// a ticket for every seat, each of a booking of its own
		`INSERT INTO tickets (org_id, event_id, booking_id, seat_id, seat_idx, hold_id)
		 SELECT $1, $2, b.id, s.id, s.idx, gen_random_uuid()
		 FROM (SELECT id, idx, row_number() OVER () n FROM seats WHERE org_id = $1 AND event_id = $2) s
		 JOIN (SELECT id, row_number() OVER () n FROM bookings WHERE org_id = $1 AND event_id = $2) b USING (n)`,
	} {
		var args []any
		switch {
		case strings.Contains(sql, "INTO tickets"):
			args = []any{tn.Org.ID, ev.ID}
		case strings.Contains(sql, "INTO bookings"):
			args = []any{tn.Org.ID, ev.ID}
		case strings.Contains(sql, "INTO users"):
			args = []any{tn.Org.ID}
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	// A page of the list, left to the planner: the first 100 tickets past
	// the cursor, taken from the index in seat order.
	if plan := explain(t, a, store.AttendeesAllSQL, tn.Org.ID, ev.ID, 1000, 100); !strings.Contains(plan, "Index Scan using tickets_event_idx") ||
		strings.Contains(plan, "Sort") {
		t.Errorf("a page of the list does not walk the event's tickets in seat order by index:\n%s", plan)
	}
	// Which way is cheaper on this small table is the planner's call (on
	// 200 000 tickets it takes the indexes); what is checked is that
	// every part of the search has an index to take.
	conn, err := a.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET enable_seqscan`) //nolint:errcheck // best effort before the release
	explainOn := func(sql string, args ...any) string {
		t.Helper()
		rows, err := conn.Query(ctx, "EXPLAIN "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(lines, "\n")
	}
	// A part of a name: only the trigram index can answer it.
	if plan := explainOn(`SELECT id FROM bookings WHERE customer_email IS NOT NULL AND lower(customer_name) LIKE '%' || $1 || '%'`,
		"lovelace"); !strings.Contains(plan, "bookings_customer_search") {
		t.Errorf("a name is searched without the trigram index:\n%s", plan)
	}
	plan := explainOn(store.AttendeesFoundSQL, tn.Org.ID, ev.ID, -1, 50, "lovelace", "LOVELACE")
	for _, index := range []string{"users_email_prefix", "bookings_reference", "tickets_booking_idx"} {
		if !strings.Contains(plan, index) {
			t.Errorf("the search does not use %s:\n%s", index, plan)
		}
	}
	for _, scan := range []string{"Seq Scan on bookings", "Seq Scan on tickets", "Seq Scan on users"} {
		if strings.Contains(plan, scan) {
			t.Errorf("the search reads with a %s:\n%s", scan, plan)
		}
	}
}

// TestDeliveryClaimWithoutStatistics: the webhook worker's claim looks
// up each candidate's earlier deliveries of the same seat by all of
// webhook_deliveries_seat_idx's columns, and finds the rows it locks by
// the ctid it read them at, even when the statistics date from before a
// burst, when no delivery was pending. (Planned for "none pending", the
// check became an anti join that compared every candidate with every
// pending delivery of the endpoint: 2.4 s a claim at a backlog of 14 000,
// and the backlog grew faster than it was sent.) It runs on a database
// of its own, whose statistics only it moves.
func TestDeliveryClaimWithoutStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := planApp(t, "claimplan")
	tn := testenv.NewTenant(t, a, 1)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := a.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)`)
	var endpoint uuid.UUID
	if err := a.Pool.QueryRow(ctx, `INSERT INTO webhook_endpoints (org_id, url, secret, events)
		VALUES ($1, 'http://127.0.0.1:9/hook', 'secret', ARRAY['seat.blocked']) RETURNING id`, tn.Org.ID).Scan(&endpoint); err != nil {
		t.Fatal(err)
	}
	// 20 000 deliveries of 200 seats, all delivered when the statistics
	// are taken; then the last 14 000 pending again, unseen by them.
	exec(`INSERT INTO webhook_deliveries (org_id, endpoint_id, audit_id, type, seat_id, data, created_at, next_at, state)
		SELECT $1, $2, i, 'seat.blocked', seat, '{}', now() - interval '1 minute', now() - interval '1 minute', 'delivered'
		FROM generate_series(1, 20000) AS i,
		     LATERAL (SELECT uuid_in(lpad(to_hex(i % 200), 32, '0')::cstring) AS seat) s`, tn.Org.ID, endpoint)
	exec(`ANALYZE webhook_deliveries`)
	exec(`UPDATE webhook_deliveries SET state = 'pending' WHERE org_id = $1 AND audit_id > 6000`, tn.Org.ID)

	text := explain(t, a, store.ClaimDeliveriesSQL, 128, 15*time.Second, 8)
	if strings.Contains(text, "Anti Join") || !strings.Contains(text, "SubPlan") {
		t.Fatalf("the claim's check for a seat's earlier deliveries is a join, not a lookup per candidate:\n%s", text)
	}
	if !strings.Contains(text, "Tid Scan on webhook_deliveries") {
		t.Fatalf("the claim does not find the rows it locks by their ctid:\n%s", text)
	}
	claimed, err := a.Store.Webhooks.ClaimDeliveries(ctx, 128, 8, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seats := map[uuid.UUID]bool{}
	for _, c := range claimed {
		if c.Delivery.SeatID == nil || seats[*c.Delivery.SeatID] {
			t.Fatalf("claimed a seat's delivery twice or one without a seat: %+v", c.Delivery)
		}
		seats[*c.Delivery.SeatID] = true
	}
	if len(claimed) != 128 {
		t.Fatalf("claimed %d, want a full batch of 128 (each seat's oldest pending delivery)", len(claimed))
	}
}
