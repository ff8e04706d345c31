package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestStaffQueries covers the staff pages' queries against a real
// Postgres: seat labels whose section has dashes, the holds filter
// (LIKE wildcards in the input match only themselves), expiry buckets,
// the audit log's filters and keyset pages, and a buyer's activity.
func TestStaffQueries(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 2)
	st := a.Store
	ev, err := st.Events.Create(ctx, tn.Org.ID, "Gala", "Hall", time.Now().Add(time.Hour), []store.NewSection{
		store.GridSection("VIP-2", "Boxes", 1, 3, 0, 0),
		store.GridSection("B", "Stalls", 2, 3, 5, 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)

	for label, want := range map[string]int{"VIP-2-A-3": 2, "vip-2-a-1": 0, " B-B-2 ": 7} {
		id, err := st.Audit.SeatByLabel(ctx, tn.Org.ID, ev.ID, label)
		if err != nil || id != seats[want] {
			t.Errorf("SeatByLabel(%q) = %s, %v; want seat %d", label, id, err, want)
		}
	}
	for _, label := range []string{"", "B", "B-1", "B-B-0", "B-B-x", "B-B-99", "-B-1", "Z-A-1"} {
		if _, err := st.Audit.SeatByLabel(ctx, tn.Org.ID, ev.ID, label); apperr.CodeOf(err) != apperr.NotFound {
			t.Errorf("SeatByLabel(%q): %v, want not found", label, err)
		}
	}
	other := testenv.NewTenant(t, a, 0)
	if _, err := st.Audit.SeatByLabel(ctx, other.Org.ID, ev.ID, "B-A-1"); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("another org finds the seat: %v", err)
	}

	b0, b1 := tn.Buyers[0], tn.Buyers[1]
	act := func(u store.User) hold.Actor { return hold.Actor{Org: u.OrgID, User: u.ID, Role: hold.Role(u.Role)} }
	hold1, err := a.Holds.Hold(ctx, act(b0), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seats[0], seats[4]}, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Hold(ctx, act(b1), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seats[5]}, Source: hold.SourceWeb}); err != nil {
		t.Fatal(err)
	}
	labels := func(hs []store.StaffHold) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Label())
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.HoldFilter
		want []string
	}{
		{"all", store.HoldFilter{}, []string{"B-A-2", "B-A-3", "VIP-2-A-1"}},
		{"section", store.HoldFilter{Section: "VIP-2"}, []string{"VIP-2-A-1"}},
		{"holder", store.HoldFilter{Holder: "BUYER1@"}, []string{"B-A-3"}},
		{"wildcard", store.HoldFilter{Holder: "buyer_@"}, nil},
		{"percent", store.HoldFilter{Holder: "%"}, nil},
		{"seats", store.HoldFilter{Seats: []uuid.UUID{seats[4], seats[1]}}, []string{"B-A-2"}},
		{"user", store.HoldFilter{User: b0.ID}, []string{"B-A-2", "VIP-2-A-1"}},
	} {
		hs, err := st.Audit.ActiveHolds(ctx, tn.Org.ID, ev.ID, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := labels(hs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	hs, err := st.Audit.ActiveHolds(ctx, tn.Org.ID, ev.ID, store.HoldFilter{Limit: 1})
	if err != nil || len(hs) != 1 || hs[0].Total != 3 || hs[0].Email == "" {
		t.Fatalf("limited: %+v, %v", hs, err)
	}
	if hs, _ := st.Audit.ActiveHolds(ctx, other.Org.ID, ev.ID, store.HoldFilter{}); len(hs) != 0 {
		t.Fatalf("another org sees %d holds", len(hs))
	}

	ex, err := st.Audit.HoldExpiries(ctx, tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ex {
		n += e.N
		if e.At.Nanosecond() != 0 {
			t.Errorf("bucket %v is not a whole second", e.At)
		}
	}
	if n != 3 {
		t.Errorf("expiries count %d holds, want 3", n)
	}

	// Audit: b0's holds (created by b0), one released by the box office.
	if _, err := a.Holds.Release(ctx, act(tn.BoxOffice), hold1.Holds[0].ID, "moved to B"); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		if _, err := a.Holds.SetBlocked(ctx, act(tn.Organizer), ev.ID, seats[8], i%2 == 0, "maintenance"); err != nil {
			t.Fatal(err)
		}
	}
	all, err := st.Audit.Log(ctx, tn.Org.ID, ev.ID, store.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 11 { // 3 created, 1 released, 7 blocks
		t.Fatalf("%d entries", len(all))
	}
	var pages []int64
	for before := int64(0); ; {
		p, err := st.Audit.Log(ctx, tn.Org.ID, ev.ID, store.AuditFilter{Before: before, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p {
			pages = append(pages, e.ID)
		}
		if len(p) < 4 {
			break
		}
		before = p[len(p)-1].ID
	}
	ids := make([]int64, len(all))
	for i, e := range all {
		ids[i] = e.ID
	}
	if !slices.Equal(pages, ids) {
		t.Errorf("pages %v, want %v", pages, ids)
	}
	rel, err := st.Audit.Log(ctx, tn.Org.ID, ev.ID, store.AuditFilter{Action: store.ActionHoldReleased})
	if err != nil || len(rel) != 1 {
		t.Fatalf("released: %+v, %v", rel, err)
	}
	if e := rel[0]; e.Actor != tn.BoxOffice.Email || e.Holder != b0.Email || e.Seat != "VIP-2-A-1" || e.Reason != "moved to B" {
		t.Errorf("released entry %+v", e)
	}
	for _, tc := range []struct {
		name string
		f    store.AuditFilter
		want int
	}{
		{"b0 as actor or holder", store.AuditFilter{User: b0.ID}, 3},
		{"box office", store.AuditFilter{User: tn.BoxOffice.ID}, 1},
		{"seat", store.AuditFilter{Seat: seats[8]}, 7},
		{"seat and action", store.AuditFilter{Seat: seats[8], Action: store.ActionSeatUnblocked}, 3},
	} {
		es, err := st.Audit.Log(ctx, tn.Org.ID, ev.ID, tc.f)
		if err != nil || len(es) != tc.want {
			t.Errorf("%s: %d entries (%v), want %d", tc.name, len(es), err, tc.want)
		}
	}
	if es, _ := st.Audit.Log(ctx, other.Org.ID, ev.ID, store.AuditFilter{}); len(es) != 0 {
		t.Errorf("another org reads %d entries", len(es))
	}

	// A buyer's activity: holds and bookings for this event.
	h, err := a.Holds.Hold(ctx, act(b1), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seats[6]}, Source: hold.SourceWeb})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Purchase(ctx, act(b1), ev.ID, uuid.NewString(), []uuid.UUID{h.Holds[0].ID}); err != nil {
		t.Fatal(err)
	}
	ba, err := st.Audit.BuyerActivity(ctx, tn.Org.ID, ev.ID, "  "+b1.Email+" ")
	if err != nil {
		t.Fatal(err)
	}
	if ba.User.ID != b1.ID || ba.User.PasswordHash != "" || labels(ba.Holds)[0] != "B-A-3" || len(ba.Bookings) != 1 ||
		!slices.Equal(ba.Bookings[0].Seats, []string{"B-B-1"}) {
		t.Errorf("activity %+v", ba)
	}
	if _, err := st.Audit.BuyerActivity(ctx, other.Org.ID, ev.ID, b1.Email); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("another org finds the buyer: %v", err)
	}
}
