package hold_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

func TestCheckoutExtendsOnce(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.HoldExtension = 5 * time.Minute })
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	u := buyer(tn.Buyers[0])
	res, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[:2], Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	first, err := a.Holds.Checkout(ctx, u, ev.ID)
	if err != nil || len(first) != 2 {
		t.Fatalf("checkout: %v %d", err, len(first))
	}
	for i, h := range first {
		if got := h.HeldUntil.Sub(res.Holds[i].HeldUntil); got != 5*time.Minute {
			t.Fatalf("extended by %v, want 5m", got)
		}
		// The follower moves the Redis lock's expiry with the feed.
		testsvc.Eventually(t, 2*time.Second, "redis lock expiry follows the extension", func() bool {
			lk, ok, err := a.Locks.Get(ctx, tn.Org.ID, ev.ID, h.SeatID)
			return err == nil && ok && lk.Expires.Equal(h.HeldUntil.Truncate(time.Millisecond))
		})
	}
	second, err := a.Holds.Checkout(ctx, u, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range second {
		if !second[i].HeldUntil.Equal(first[i].HeldUntil) {
			t.Fatalf("second checkout moved the deadline from %v to %v", first[i].HeldUntil, second[i].HeldUntil)
		}
	}
}

func TestReleaseRules(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	res, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[:2], Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	// Another buyer may not release it.
	if _, err := a.Holds.Release(ctx, buyer(tn.Buyers[1]), res.Holds[0].ID, ""); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("release by another buyer: %v, want forbidden", err)
	}
	// The holder may; a second release says it is gone.
	if _, err := a.Holds.Release(ctx, buyer(tn.Buyers[0]), res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Release(ctx, buyer(tn.Buyers[0]), res.Holds[0].ID, ""); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("second release: %v, want not_found", err)
	}
	// Box office releases anyone's, and the reason is audited.
	if _, err := a.Holds.Release(ctx, staff(tn.BoxOffice), res.Holds[1].ID, "customer called"); err != nil {
		t.Fatal(err)
	}
	var actor uuid.UUID
	var data string
	if err := a.Pool.QueryRow(ctx, `SELECT actor_id, data->>'reason' FROM audit_log WHERE entity_id = $1 AND action = 'hold.released'`,
		res.Holds[1].ID).Scan(&actor, &data); err != nil || actor != tn.BoxOffice.ID || data != "customer called" {
		t.Fatalf("audit: %v %v %q", err, actor, data)
	}
	// Both seats are free in Redis and for everyone.
	for _, s := range seats[:2] {
		if _, ok, _ := a.Locks.Get(ctx, tn.Org.ID, ev.ID, s); ok {
			t.Fatalf("lock left for released seat %s", s)
		}
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: ev.ID, Seats: seats[:2], Source: hold.SourceWeb}); err != nil {
		t.Fatalf("hold released seats: %v", err)
	}
	assertSeatInvariants(t, a, ev.ID)
}

func TestPurchaseIdempotency(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	u := buyer(tn.Buyers[0])
	res, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[:2], Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	ids := []uuid.UUID{res.Holds[0].ID, res.Holds[1].ID}
	b1, err := a.Holds.Purchase(ctx, u, ev.ID, "k1", ids)
	if err != nil || b1.Replayed || len(b1.Tickets) != 2 {
		t.Fatalf("purchase: %+v %v", b1, err)
	}
	b2, err := a.Holds.Purchase(ctx, u, ev.ID, "k1", []uuid.UUID{ids[1], ids[0]})
	if err != nil || !b2.Replayed || b2.ID != b1.ID || len(b2.Tickets) != 2 {
		t.Fatalf("replay: %+v %v", b2, err)
	}
	if _, err := a.Holds.Purchase(ctx, u, ev.ID, "k1", ids[:1]); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
		t.Fatalf("same key other payload: %v", err)
	}
	// Sold seats are refused to everyone, at once, from the hot cache.
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: ev.ID, Seats: seats[:1],
		Source: hold.SourceWeb}); !errors.Is(err, apperr.ErrSeatTaken) {
		t.Fatalf("hold sold seat: %v", err)
	}
	// Buying a hold that is not active any more is holds_expired.
	res2, _ := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[2:3], Source: hold.SourceWeb})
	if _, err := a.Holds.Release(ctx, u, res2.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Purchase(ctx, u, ev.ID, "k2", []uuid.UUID{res2.Holds[0].ID}); apperr.CodeOf(err) != apperr.HoldsExpired {
		t.Fatalf("purchase released hold: %v", err)
	}
	// Another buyer cannot buy my hold.
	res3, _ := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: seats[3:4], Source: hold.SourceWeb})
	if _, err := a.Holds.Purchase(ctx, buyer(tn.Buyers[1]), ev.ID, "k3", []uuid.UUID{res3.Holds[0].ID}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("purchase another's hold: %v", err)
	}
	assertSeatInvariants(t, a, ev.ID)
}

func TestBlockUnblock(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 3)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	org := staff(tn.Organizer)
	if _, err := a.Holds.SetBlocked(ctx, buyer(tn.Buyers[0]), ev.ID, seats[0], true, ""); apperr.CodeOf(err) != apperr.Forbidden {
		t.Fatalf("buyer blocks: %v", err)
	}
	if _, err := a.Holds.SetBlocked(ctx, org, ev.ID, seats[0], true, "broken"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, org, ev.ID, seats[0], true, ""); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("block twice: %v", err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[:1],
		Source: hold.SourceWeb}); !errors.Is(err, apperr.ErrSeatTaken) {
		t.Fatalf("hold blocked seat: %v", err)
	}
	occ, err := a.Monitor.Occupancy(ctx, org, ev.ID)
	if err != nil || occ.Blocked != 1 || occ.Available != 2 {
		t.Fatalf("occupancy: %+v %v", occ, err)
	}
	if _, err := a.Holds.SetBlocked(ctx, org, ev.ID, seats[0], false, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceWeb}); err != nil {
		t.Fatalf("hold unblocked seat: %v", err)
	}
}

// TestTenancy: an org-B caller cannot hold, release, extend, buy or see
// org-A seats even with correct ids, and every Redis key names its org.
func TestTenancy(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := testenv.App(t, func(c *config.Config) { c.RedisURL = r.URL() })
	ta := testenv.NewTenant(t, a, 1)
	tb := testenv.NewTenant(t, a, 1)
	eva := testenv.NewEvent(t, a, ta.Org.ID, 1, 1, 4)
	evb := testenv.NewEvent(t, a, tb.Org.ID, 1, 1, 4)
	seatsA := testenv.SeatIDs(t, a, ta.Org.ID, eva.ID)
	ctx := context.Background()
	res, err := a.Holds.Hold(ctx, buyer(ta.Buyers[0]), hold.Request{Event: eva.ID, Seats: seatsA[:1], Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(tb.Buyers[0]), hold.Request{Event: evb.ID, Seats: seatsA[:1],
		Source: hold.SourceWeb}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("hold org A seat in org B event: %v", err)
	}
	b := buyer(tb.Buyers[0])
	bs := staff(tb.Organizer)
	checks := map[string]error{}
	_, checks["hold"] = a.Holds.Hold(ctx, b, hold.Request{Event: eva.ID, Seats: seatsA[1:2], Source: hold.SourceWeb})
	_, checks["release"] = a.Holds.Release(ctx, bs, res.Holds[0].ID, "")
	_, checks["checkout"] = a.Holds.Checkout(ctx, b, eva.ID)
	_, _, checks["seats"] = a.Events.Seats(ctx, b, eva.ID)
	_, checks["purchase"] = a.Holds.Purchase(ctx, b, eva.ID, "k", []uuid.UUID{res.Holds[0].ID})
	_, checks["purchase in own event"] = a.Holds.Purchase(ctx, b, evb.ID, "k2", []uuid.UUID{res.Holds[0].ID})
	_, checks["block"] = a.Holds.SetBlocked(ctx, bs, eva.ID, seatsA[2], true, "")
	_, checks["occupancy"] = a.Monitor.Occupancy(ctx, bs, eva.ID)
	_, checks["event holds"] = a.Holds.EventHolds(ctx, bs, eva.ID)
	_, checks["registry"] = a.Monitor.RegistryStatus(ctx, bs, eva.ID)
	_, checks["watch"] = a.Engine.Watch(ctx, b, eva.ID, func([]hold.Delta) {})
	for name, err := range checks {
		if apperr.CodeOf(err) != apperr.NotFound {
			t.Errorf("%s across tenants: %v, want not_found", name, err)
		}
	}
	var st store.Hold
	if st, err = a.Store.Holds.ByID(ctx, ta.Org.ID, res.Holds[0].ID); err != nil || st.Status != store.HoldActive {
		t.Fatalf("org A hold changed: %+v %v", st, err)
	}
	assertSeatInvariants(t, a, eva.ID)
	// Exercise every kind of key, then check each names an org.
	if _, err := a.Holds.Hold(ctx, buyer(tb.Buyers[0]), hold.Request{Event: evb.ID,
		Seats: testenv.SeatIDs(t, a, tb.Org.ID, evb.ID)[:1], Source: hold.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, staff(ta.Organizer), eva.ID, seatsA[3], true, ""); err != nil {
		t.Fatal(err)
	}
	keys, err := a.Redis.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.Contains(k, ta.Org.ID.String()) && !strings.Contains(k, tb.Org.ID.String()) {
			t.Errorf("redis key without an org: %s", k)
		}
		if strings.Contains(k, eva.ID.String()) && !strings.Contains(k, "{"+ta.Org.ID.String()+":") {
			t.Errorf("org A event key not under org A: %s", k)
		}
	}
	t.Logf("%d redis keys, every one names its organization", len(keys))
	if len(keys) < 8 {
		t.Fatalf("only %d keys written: expected locks, zsets, bitmaps, fences and counters for two events", len(keys))
	}
}
