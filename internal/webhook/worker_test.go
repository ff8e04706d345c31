package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/webhook"
)

// receiver is a webhook endpoint on loopback that checks every
// delivery's signature with its own HMAC code (not webhook.Sign) and
// records what it got, in arrival order.
type receiver struct {
	t   testing.TB
	srv *httptest.Server
	// path is the receiver's own: the test database outlives its tests,
	// and a delivery still retried for an endpoint of an ended test (of
	// this run or an earlier one) may reach a new receiver that the OS
	// gave the same port. Requests to other paths are answered 410 and
	// not counted.
	path   string
	secret atomic.Value // string
	// fail answers with this behaviour while set: "drop" closes the
	// connection without an answer (a receiver killed mid-request),
	// "503" answers 503.
	fail atomic.Value // string

	mu      sync.Mutex
	got     []webhook.Body
	headers []string // the Seatd-Signature of each delivery taken
	raw     [][]byte // and its body
	bad     []string // signature failures
	hits    int
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, path: "/hook/" + uuid.NewString()}
	r.fail.Store("")
	r.secret.Store("")
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	if req.URL.Path != r.path {
		w.WriteHeader(http.StatusGone)
		return
	}
	r.mu.Lock()
	r.hits++
	r.mu.Unlock()
	switch r.fail.Load().(string) {
	case "drop":
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	case "503":
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if why := verify(r.secret.Load().(string), req.Header.Get("Seatd-Signature"), body); why != "" {
		r.mu.Lock()
		r.bad = append(r.bad, why)
		r.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var b webhook.Body
	if err := json.Unmarshal(body, &b); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, b)
	r.headers = append(r.headers, req.Header.Get("Seatd-Signature"))
	r.raw = append(r.raw, body)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// verify checks "t=<unix>,v1=<hex>[,v1=<hex>...]" as a receiver would
// (docs/integrators.md): a timestamp within five minutes, and a v1 equal
// to the HMAC-SHA256 of "<t>.<body>" under secret (during a rotation's
// grace there is one v1 per secret; any may match).
func verify(secret, header string, body []byte) string {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(n, 0)).Abs() > 5*time.Minute {
		return "bad timestamp in " + header
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(m.Sum(nil))
	for _, sig := range sigs {
		if hmac.Equal([]byte(want), []byte(sig)) {
			return ""
		}
	}
	return "bad signature " + header
}

func (r *receiver) received() []webhook.Body {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhook.Body(nil), r.got...)
}

// register makes an endpoint of org for every type, pointing at r.
// url is where the receiver takes deliveries.
func (r *receiver) url() string { return r.srv.URL + r.path }

func (r *receiver) register(t testing.TB, a *app.App, org uuid.UUID) store.WebhookEndpoint {
	t.Helper()
	e, err := webhook.NewEndpoints(a.Store.Webhooks, true).Create(context.Background(), org, r.url(), webhook.Types)
	if err != nil {
		t.Fatal(err)
	}
	r.secret.Store(e.Secret)
	return e
}

func fastRetries(c *config.Config) {
	c.WebhookBackoff = 20 * time.Millisecond
	c.WebhookBackoffMax = 200 * time.Millisecond
	c.WebhookTimeout = 2 * time.Second
	c.PGMaxConns = 8
}

func actor(u store.User) hold.Actor {
	return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.Role(u.Role)}
}

// TestDeliverySigned: holds, releases, blocks and unblocks reach a
// receiver as signed JSON {id, type, created_at, event_id, data}, and the
// deliveries list says delivered with one attempt each.
func TestDeliverySigned(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 3)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	r := newReceiver(t)
	ep := r.register(t, a, tn.Org.ID)
	ctx := context.Background()

	// A sale: hold.created then booking.created for the third seat.
	sale, err := a.Holds.Hold(ctx, actor(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[2:3], Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	b, err := a.Holds.Purchase(ctx, actor(tn.Buyers[0]), ev.ID, "k-"+uuid.NewString(), []uuid.UUID{sale.Holds[0].ID})
	if err != nil {
		t.Fatal(err)
	}

	res, err := a.Holds.Hold(ctx, actor(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Release(ctx, actor(tn.Buyers[0]), res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	for _, b := range []bool{true, false} {
		if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[1], b, "test"); err != nil {
			t.Fatal(err)
		}
	}
	testsvc.Eventually(t, 5*time.Second, "six deliveries", func() bool { return len(r.received()) >= 6 })
	got := r.received()
	want := []struct {
		typ  string
		seat uuid.UUID
	}{{"hold.created", seats[0]}, {"hold.released", seats[0]}, {"seat.blocked", seats[1]}, {"seat.unblocked", seats[1]},
		{"hold.created", seats[2]}, {"booking.created", seats[2]}}
	perSeat := map[uuid.UUID][]string{}
	for _, g := range got {
		var d struct {
			SeatID    uuid.UUID `json:"seat_id"`
			BookingID uuid.UUID `json:"booking_id"`
		}
		if err := json.Unmarshal(g.Data, &d); err != nil || g.ID == uuid.Nil || g.EventID == nil || *g.EventID != ev.ID || g.CreatedAt.IsZero() {
			t.Fatalf("delivery %+v (%s): missing fields", g, g.Data)
		}
		if g.Type == "booking.created" && d.BookingID != b.ID {
			t.Fatalf("booking.created names booking %s, want %s", d.BookingID, b.ID)
		}
		perSeat[d.SeatID] = append(perSeat[d.SeatID], g.Type)
	}
	for i, w := range want {
		if seq := perSeat[w.seat]; len(seq) != 2 || seq[i%2] != w.typ {
			t.Fatalf("seat %s got %v; want %s at %d", w.seat, seq, w.typ, i%2)
		}
	}
	if r.bad != nil {
		t.Fatalf("signature failures: %v", r.bad)
	}
	testsvc.Eventually(t, 2*time.Second, "all six recorded delivered", func() bool {
		ds, err := a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ep.ID, 0, 10)
		if err != nil || len(ds) != 6 {
			return false
		}
		for _, d := range ds {
			if d.State != store.DeliveryDelivered || d.Attempts != 1 || d.LastStatus == nil || *d.LastStatus != 204 {
				return false
			}
		}
		return true
	})
	t.Logf("6 changes (holds, release, block, unblock, sale) delivered, signatures verified by the receiver's own HMAC")
}

// TestReceiverKilledMidStream: while changes stream in, the receiver drops
// connections without answering, then answers 503, then recovers. Every
// delivery arrives (at least once), and per seat the deliveries arrive in
// the order of the changes, with any repeat only of the latest one sent.
func TestReceiverKilledMidStream(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	r := newReceiver(t)
	r.register(t, a, tn.Org.ID)
	ctx := context.Background()

	// Each buyer holds and releases its seats, rounds times; the receiver
	// fails during the middle rounds.
	const rounds = 12
	var wg sync.WaitGroup
	for bi, u := range tn.Buyers {
		wg.Go(func() {
			mine := seats[bi*4 : bi*4+4]
			for i := range rounds {
				switch i {
				case 3:
					r.fail.Store("drop")
				case 6:
					r.fail.Store("503")
				case 9:
					r.fail.Store("")
				}
				res, err := a.Holds.Hold(ctx, actor(u), hold.Request{Event: ev.ID, Seats: mine, Source: hold.SourceAPI})
				if err != nil {
					t.Error(err)
					return
				}
				for _, h := range res.Holds {
					if _, err := a.Holds.Release(ctx, actor(u), h.ID, ""); err != nil {
						t.Error(err)
						return
					}
				}
				time.Sleep(10 * time.Millisecond) // let the stream overlap the outage
			}
		})
	}
	wg.Wait()
	r.fail.Store("")

	// The changes as the audit log has them, per seat in commit order.
	rows, err := a.Pool.Query(ctx, `SELECT seat_id, id FROM audit_log WHERE org_id = $1 AND event_id = $2 ORDER BY id`, tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uuid.UUID][]int64{}
	total := 0
	for rows.Next() {
		var seat uuid.UUID
		var id int64
		if err := rows.Scan(&seat, &id); err != nil {
			t.Fatal(err)
		}
		want[seat] = append(want[seat], id)
		total++
	}
	if total != 2*4*2*rounds {
		t.Fatalf("%d audit rows, want %d", total, 2*4*2*rounds)
	}
	auditOf := map[uuid.UUID]int64{} // delivery id -> audit id
	if err := func() error {
		rows, err := a.Pool.Query(ctx, `SELECT public_id, audit_id FROM webhook_deliveries WHERE org_id = $1`, tn.Org.ID)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id uuid.UUID
			var audit int64
			if err := rows.Scan(&id, &audit); err != nil {
				return err
			}
			auditOf[id] = audit
		}
		return rows.Err()
	}(); err != nil {
		t.Fatal(err)
	}
	if len(auditOf) != total {
		t.Fatalf("%d outbox rows for %d changes", len(auditOf), total)
	}
	testsvc.Eventually(t, 30*time.Second, "every change delivered", func() bool {
		seen := map[uuid.UUID]bool{}
		for _, b := range r.received() {
			seen[b.ID] = true
		}
		return len(seen) == total
	})
	got := map[uuid.UUID][]int64{}
	for _, b := range r.received() {
		var d struct {
			SeatID uuid.UUID `json:"seat_id"`
		}
		_ = json.Unmarshal(b.Data, &d)
		got[d.SeatID] = append(got[d.SeatID], auditOf[b.ID])
	}
	dups := 0
	for seat, ids := range want {
		seq := got[seat]
		var firsts []int64
		for i, id := range seq {
			if i > 0 && id < seq[i-1] {
				t.Fatalf("seat %s: delivery of change %d after change %d: reordered (%v)", seat, id, seq[i-1], seq)
			}
			if i > 0 && id == seq[i-1] {
				dups++
				continue
			}
			firsts = append(firsts, id)
		}
		if len(firsts) != len(ids) {
			t.Fatalf("seat %s: got %v, want %v", seat, firsts, ids)
		}
	}
	r.mu.Lock()
	hits := r.hits
	r.mu.Unlock()
	t.Logf("%d changes on %d seats: all delivered in order per seat after %d requests (%d repeats of a delivery the receiver had taken)",
		total, len(want), hits, dups)
}

// TestRetryBackoff: a receiver failing its first attempts gets them at
// growing intervals, each recorded with its status; the delivery then
// arrives.
func TestRetryBackoff(t *testing.T) {
	// Not parallel: the package's tests share a database, and any running
	// app's worker may claim this test's delivery; one whose test ended
	// meanwhile cut its attempt off ("context canceled", no 503), which
	// failed this test in a make test run. Run alone, while the parallel
	// tests wait, only this app's worker sends (fastRetries' backoff:
	// 20 ms, doubled per failure).
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	r := newReceiver(t)
	ep := r.register(t, a, tn.Org.ID)
	r.fail.Store("503")
	ctx := context.Background()
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[0], true, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "four failed attempts", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.hits >= 4
	})
	r.fail.Store("")
	testsvc.Eventually(t, 5*time.Second, "the delivery", func() bool { return len(r.received()) == 1 })
	var id int64
	if err := a.Pool.QueryRow(ctx, `SELECT id FROM webhook_deliveries WHERE endpoint_id = $1`, ep.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}
	var as []store.Attempt
	testsvc.Eventually(t, 2*time.Second, "the last attempt recorded", func() bool {
		as, _ = a.Store.Webhooks.DeliveryAttempts(ctx, tn.Org.ID, id)
		return len(as) >= 5 && as[len(as)-1].Status == 204
	})
	for i := 1; i < 4; i++ {
		gap := as[i].At.Sub(as[i-1].At)
		// Backoff 20 ms doubled per failure, jitter -20 %.
		if min := time.Duration(float64(20*time.Millisecond<<(i-1)) * 0.8); gap < min {
			t.Fatalf("attempt %d came %s after the one before; backoff says at least %s", i+1, gap, min)
		}
		if as[i-1].Status != 503 || as[i-1].Error == "" {
			t.Fatalf("attempt %d recorded as %+v", i, as[i-1])
		}
	}
	t.Logf("attempts at +%s, +%s, +%s, then delivered", as[1].At.Sub(as[0].At).Round(time.Millisecond),
		as[2].At.Sub(as[1].At).Round(time.Millisecond), as[3].At.Sub(as[2].At).Round(time.Millisecond))
}

// TestOutboxInChangeTransaction: the outbox row is written by the change's
// own transaction: visible inside it, gone when it rolls back, present the
// moment a committed change returns; an organization without endpoints
// gets none.
func TestOutboxInChangeTransaction(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	r := newReceiver(t)
	ep := r.register(t, a, tn.Org.ID)
	ctx := context.Background()
	// No worker runs here; give the deliveries up at the end so that
	// other tests' workers do not keep trying a closed receiver.
	t.Cleanup(func() { _ = a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, ep.ID) })
	outbox := func() int {
		var n int
		if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1`, tn.Org.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE seats SET status = 'blocked', version = version + 1 WHERE id = $1`, seats[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO audit_log (org_id, event_id, action, entity, entity_id, seat_id)
		VALUES ($1, $2, 'seat.blocked', 'seat', $3, $3)`, tn.Org.ID, ev.ID, seats[0]); err != nil {
		t.Fatal(err)
	}
	var inside int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1`, tn.Org.ID).Scan(&inside); err != nil {
		t.Fatal(err)
	}
	if inside != 1 || outbox() != 0 {
		t.Fatalf("inside the change's transaction %d outbox rows (want 1), outside %d (want 0)", inside, outbox())
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if n := outbox(); n != 0 {
		t.Fatalf("a rolled-back change left %d outbox rows", n)
	}

	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[1], true, ""); err != nil {
		t.Fatal(err)
	}
	if n := outbox(); n != 1 {
		t.Fatalf("a committed change has %d outbox rows when it returns, want 1", n)
	}
	evO := testenv.NewEvent(t, a, other.Org.ID, 1, 1, 1)
	if _, err := a.Holds.SetBlocked(ctx, actor(other.Organizer), evO.ID, testenv.SeatIDs(t, a, other.Org.ID, evO.ID)[0], true, ""); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1`, other.Org.ID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("an organization without webhooks got %d outbox rows (%v)", n, err)
	}
}

// TestWaitlistOfferDelivered: a freed seat offered to the first in line
// reaches a receiver as a signed waitlist.offered delivery naming the
// entry, its buyer, the seats, the holds and their deadline, with the
// offer's own hold.created for the seat; the deliveries list records it
// delivered.
func TestWaitlistOfferDelivered(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	ctx := context.Background()
	held, err := a.Holds.Hold(ctx, actor(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	entry, err := a.Waitlist.Join(ctx, actor(tn.Buyers[1]), ev.ID, hold.WaitFor{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t)
	ep := r.register(t, a, tn.Org.ID)
	if _, err := a.Holds.Release(ctx, actor(tn.Buyers[0]), held.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	var offered webhook.Body
	var created int
	testsvc.Eventually(t, 5*time.Second, "the offer's deliveries", func() bool {
		created = 0
		for _, g := range r.received() {
			switch g.Type {
			case "waitlist.offered":
				offered = g
			case "hold.created":
				created++
			}
		}
		return offered.ID != uuid.Nil && created == 1
	})
	var d struct {
		Entry     uuid.UUID   `json:"waitlist_entry_id"`
		Actor     uuid.UUID   `json:"actor_id"`
		Seats     []uuid.UUID `json:"seats"`
		Holds     []uuid.UUID `json:"holds"`
		HeldUntil time.Time   `json:"held_until"`
	}
	if err := json.Unmarshal(offered.Data, &d); err != nil {
		t.Fatalf("waitlist.offered data %s: %v", offered.Data, err)
	}
	e, err := a.Store.Waitlist.Entry(ctx, tn.Org.ID, entry.ID)
	if err != nil {
		t.Fatal(err)
	}
	if offered.EventID == nil || *offered.EventID != ev.ID || d.Entry != entry.ID || d.Actor != tn.Buyers[1].ID ||
		len(d.Seats) != 1 || d.Seats[0] != seat || len(d.Holds) != 1 || d.Holds[0] != e.HoldIDs[0] ||
		!d.HeldUntil.Equal(e.OfferUntil) {
		t.Fatalf("waitlist.offered %+v %s; want entry %s of buyer %s, seat %s, hold %v until %s",
			offered, offered.Data, entry.ID, tn.Buyers[1].ID, seat, e.HoldIDs, e.OfferUntil)
	}
	if r.bad != nil {
		t.Fatalf("signature failures: %v", r.bad)
	}
	testsvc.Eventually(t, 2*time.Second, "the offer recorded delivered", func() bool {
		ds, err := a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ep.ID, 0, 10)
		if err != nil {
			return false
		}
		for _, x := range ds {
			if x.Type == "waitlist.offered" {
				return x.State == store.DeliveryDelivered && x.Attempts == 1
			}
		}
		return false
	})
	t.Logf("waitlist.offered delivered signed, naming entry, buyer, seat, hold and deadline")
}

// TestWaitlistLineDelivered: joining and leaving a waitlist reach an
// endpoint that asked for waitlist.joined and waitlist.left as signed
// deliveries naming the entry, the buyer (holder) and, for a join, what
// was asked for; a leave by staff names the buyer and the staff member as
// actor. An endpoint that asked only for hold.created gets neither.
func TestWaitlistLineDelivered(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 3)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	ctx := context.Background()
	if _, err := a.Holds.Hold(ctx, actor(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	r := newReceiver(t)
	r.register(t, a, tn.Org.ID)
	holdsOnly := newReceiver(t)
	e, err := webhook.NewEndpoints(a.Store.Webhooks, true).Create(ctx, tn.Org.ID, holdsOnly.url(), []string{"hold.created"})
	if err != nil {
		t.Fatal(err)
	}
	holdsOnly.secret.Store(e.Secret)

	own, err := a.Waitlist.Join(ctx, actor(tn.Buyers[1]), ev.ID, hold.WaitFor{Count: 1, Section: "A"})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := a.Waitlist.Join(ctx, actor(tn.Buyers[2]), ev.ID, hold.WaitFor{Count: 1, Accessible: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Waitlist.Leave(ctx, actor(tn.Buyers[1]), own.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.Waitlist.Leave(ctx, actor(tn.Organizer), removed.ID); err != nil {
		t.Fatal(err)
	}

	type lineData struct {
		Entry      uuid.UUID  `json:"waitlist_entry_id"`
		Actor      uuid.UUID  `json:"actor_id"`
		Holder     uuid.UUID  `json:"holder"`
		Seats      int        `json:"seats"`
		Section    *uuid.UUID `json:"section_id"`
		Accessible bool       `json:"accessible"`
		Seat       *uuid.UUID `json:"seat_id"`
	}
	got := map[string]lineData{} // by type and entry
	testsvc.Eventually(t, 5*time.Second, "four waitlist deliveries", func() bool {
		clear(got)
		for _, g := range r.received() {
			if g.Type != "waitlist.joined" && g.Type != "waitlist.left" {
				continue
			}
			var d lineData
			if err := json.Unmarshal(g.Data, &d); err != nil {
				t.Fatalf("%s data %s: %v", g.Type, g.Data, err)
			}
			if g.EventID == nil || *g.EventID != ev.ID {
				t.Fatalf("%s delivery for event %v, want %s", g.Type, g.EventID, ev.ID)
			}
			got[g.Type+" "+d.Entry.String()] = d
		}
		return len(got) == 4
	})
	var section uuid.UUID
	if err := a.Pool.QueryRow(ctx, `SELECT id FROM sections WHERE org_id = $1 AND event_id = $2 AND label = 'A'`, tn.Org.ID, ev.ID).Scan(&section); err != nil {
		t.Fatal(err)
	}
	b1, b2, org := tn.Buyers[1].ID, tn.Buyers[2].ID, tn.Organizer.ID
	for key, want := range map[string]lineData{
		"waitlist.joined " + own.ID.String():     {Entry: own.ID, Actor: b1, Holder: b1, Seats: 1, Section: &section},
		"waitlist.joined " + removed.ID.String(): {Entry: removed.ID, Actor: b2, Holder: b2, Seats: 1, Accessible: true},
		"waitlist.left " + own.ID.String():       {Entry: own.ID, Actor: b1, Holder: b1},
		"waitlist.left " + removed.ID.String():   {Entry: removed.ID, Actor: org, Holder: b2},
	} {
		d, ok := got[key]
		if !ok || d.Entry != want.Entry || d.Actor != want.Actor || d.Holder != want.Holder || d.Seats != want.Seats ||
			(d.Section == nil) != (want.Section == nil) || d.Section != nil && *d.Section != *want.Section ||
			d.Accessible != want.Accessible || d.Seat != nil {
			t.Fatalf("%s: delivered %+v (found %v), want %+v", key, d, ok, want)
		}
	}
	if r.bad != nil {
		t.Fatalf("signature failures: %v", r.bad)
	}
	// The outbox rows are written with the change: by now every one of
	// the holds-only endpoint's would exist.
	var n int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM webhook_deliveries WHERE org_id = $1 AND endpoint_id = $2`, tn.Org.ID, e.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || len(holdsOnly.received()) != 0 {
		t.Fatalf("an endpoint for hold.created only got %d outbox rows and %d deliveries", n, len(holdsOnly.received()))
	}
	t.Logf("joins and leaves delivered signed, naming entry, buyer, actor and what was asked for")
}

// TestShutdownReleasesAttemptsInFlight: a worker stopped while its
// attempt waits on a receiver that has not answered yet records no
// attempt. The delivery is due again at once with its attempt uncounted,
// the endpoint is not marked failing (a shutdown says nothing of the
// receiver), and the next worker delivers it.
func TestShutdownReleasesAttemptsInFlight(t *testing.T) {
	t.Parallel()
	// A database of its own: no other test's worker may take the delivery.
	db := testsvc.OwnDatabase(t, "webhook_shutdown")
	a := testenv.App(t, func(c *config.Config) { fastRetries(c); c.DatabaseURL = db })
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	ctx := context.Background()

	arrived := make(chan struct{}, 1)
	var answer atomic.Bool
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.ReadAll(req.Body)
		if answer.Load() {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		select {
		case arrived <- struct{}{}:
		default:
		}
		<-req.Context().Done() // no answer until the worker gives up the request
	}))
	t.Cleanup(hang.Close)
	ep, err := webhook.NewEndpoints(a.Store.Webhooks, true).Create(ctx, tn.Org.ID, hang.URL+"/hook", []string{"hold.created"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Hold(ctx, actor(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: testenv.SeatIDs(t, a, tn.Org.ID, ev.ID), Source: hold.SourceAPI}); err != nil {
		t.Fatal(err)
	}

	wctx, stop := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { a.Webhooks.Run(wctx); close(stopped) }()
	select {
	case <-arrived:
	case <-time.After(30 * time.Second):
		stop()
		t.Fatal("the delivery never reached the receiver")
	}
	stop()
	<-stopped

	var attempts, recorded int
	var locked, failing bool
	if err := a.Pool.QueryRow(ctx, `SELECT d.attempts, d.locked_until IS NOT NULL, e.failing_since IS NOT NULL,
			(SELECT count(*) FROM webhook_attempts x WHERE x.org_id = d.org_id AND x.delivery_id = d.id)
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.org_id = d.org_id AND e.id = d.endpoint_id
		WHERE d.org_id = $1 AND d.endpoint_id = $2 AND d.state = 'pending'`, tn.Org.ID, ep.ID).Scan(&attempts, &locked, &failing, &recorded); err != nil {
		t.Fatalf("the delivery, pending: %v", err)
	}
	if attempts != 0 || locked || failing || recorded != 0 {
		t.Fatalf("after the shutdown: %d attempts counted, %d recorded, locked %v, endpoint failing %v; want none of them",
			attempts, recorded, locked, failing)
	}

	answer.Store(true)
	n, err := a.Webhooks.Once(ctx)
	if err != nil || n != 1 {
		t.Fatalf("the next worker's round: %d claimed, %v; want the delivery at once", n, err)
	}
	ds, err := a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, ep.ID, 0, 10)
	if err != nil || len(ds) != 1 || ds[0].State != store.DeliveryDelivered || ds[0].Attempts != 1 {
		t.Fatalf("deliveries %+v, %v; want one delivered at its first attempt", ds, err)
	}
}
