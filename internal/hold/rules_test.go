package hold_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// setRules changes an event's orphan rule and accessible release time
// through the store alone: no message, so no other process hears of it
// before its follower reads the event again.
func setRules(t *testing.T, st *store.Store, tn testenv.Tenant, event uuid.UUID, rule string, release *time.Time) {
	t.Helper()
	_, err := st.Events.Update(context.Background(), tn.Org.ID, event, tn.Organizer.ID, func(cur store.Event) (store.EventUpdate, error) {
		spec := cur.EventSpec
		spec.OrphanRule, spec.AccessibleReleaseAt = rule, release
		return store.EventUpdate{Spec: spec, From: cur.Status, To: cur.Status}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestChoosingRulesFromPostgres: the strict orphan rule and the accessible
// hold-back, changed through the store of one process, bind a hold made
// at once through another process whose cached settings still have the
// old ones (its follower does not run): the hold statement reads them
// from the event row. Both ways round, on both paths, for one seat and for
// several; a rule turned off is honoured at once too.
func TestChoosingRulesFromPostgres(t *testing.T) {
	bothPaths(t, func(t *testing.T, mod func(*config.Config), _ bool) {
		a, b := testenv.App(t, mod), testenv.App(t, mod)
		tn := testenv.NewTenant(t, a, 2)
		ctx := context.Background()
		u := buyer(tn.Buyers[0])
		// Changed on a, held through b; then changed on b, held through a.
		for i, pair := range [][2]*app.App{{a, b}, {b, a}} {
			changer, holder := pair[0].Store, pair[1].Holds
			e := onSale(t, a, tn, 3, nil)
			_, byPos := seatMap(t, a, tn.Org.ID, e.ID)
			// The holding process caches the event with both rules off.
			if _, err := holder.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["C/10"]}, Source: hold.SourceAPI}); err != nil {
				t.Fatalf("process %d, rules off: %v", i, err)
			}
			later := time.Now().Add(time.Hour)
			setRules(t, changer, tn, e.ID, "strict", &later)

			for _, tc := range []struct {
				name  string
				seats []string
				want  apperr.Code
			}{
				{"one seat leaving B-1 alone", []string{"B/02"}, apperr.OrphanSeat},
				{"two seats leaving B-1 alone", []string{"B/02", "B/03"}, apperr.OrphanSeat},
				{"the wheelchair space", []string{"A/01"}, apperr.AccessibleReserved},
				{"the companion seat with another", []string{"A/02", "A/03"}, apperr.AccessibleReserved},
			} {
				ids := make([]uuid.UUID, len(tc.seats))
				for j, p := range tc.seats {
					ids[j] = byPos[p]
				}
				_, err := holder.Hold(ctx, u, hold.Request{Event: e.ID, Seats: ids, Source: hold.SourceAPI})
				if got := apperr.CodeOf(err); got != tc.want {
					t.Errorf("process %d, %s: %v, want %s", i, tc.name, err, tc.want)
				}
				if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND seat_id = ANY($2::uuid[])`, e.ID, ids); n != 0 {
					t.Errorf("process %d, %s: %d holds written", i, tc.name, n)
				}
			}
			// Asking for accessible seating, or being staff, still may; a
			// hold that leaves nobody alone still may.
			if _, err := holder.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["A/01"]}, Accessible: true,
				Source: hold.SourceAPI}); err != nil {
				t.Errorf("process %d, asking for accessible seating: %v", i, err)
			}
			if _, err := holder.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["B/01"], byPos["B/02"]},
				Source: hold.SourceAPI}); err != nil {
				t.Errorf("process %d, B-1 and B-2: %v", i, err)
			}
			if _, err := holder.Hold(ctx, staff(tn.BoxOffice), hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["C/02"]},
				Customer: &store.Customer{Name: "A", Email: "a@example.com"}, Until: later}); err != nil {
				t.Errorf("process %d, staff leaving C-1 alone: %v", i, err)
			}

			// The other way: a process that cached the rule strict (it
			// read the event after the change) refuses; turned off behind
			// its back, the same hold (C-4, leaving C-3 alone) goes at once.
			fresh := testenv.App(t, mod).Holds
			if _, err := fresh.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["C/04"]},
				Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.OrphanSeat {
				t.Fatalf("process %d, strict cached: %v, want orphan_seat", i, err)
			}
			setRules(t, changer, tn, e.ID, "off", nil)
			if _, err := fresh.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["C/04"]}, Source: hold.SourceAPI}); err != nil {
				t.Errorf("process %d, rule turned off behind its back: %v", i, err)
			}
			assertSeatInvariants(t, a, e.ID)
		}
	})
}

// keepFree blocks, straight in SQL, every seated seat of the event but the
// ones named ("B/05"), so an offer round has only those to choose from.
func keepFree(t *testing.T, a *app.App, event uuid.UUID, byPos map[string]uuid.UUID, free ...string) {
	t.Helper()
	ids := make([]uuid.UUID, len(free))
	for i, p := range free {
		ids[i] = byPos[p]
	}
	if _, err := a.Pool.Exec(context.Background(), `
		UPDATE seats s SET status = 'blocked' FROM sections sc
		WHERE sc.id = s.section_id AND sc.kind = 'seated' AND s.event_id = $1 AND s.id <> ALL($2::uuid[])`, event, ids); err != nil {
		t.Fatal(err)
	}
}

// offeredSeats returns the positions ("B/05") of the seats offered to an
// entry, sorted; nil while it waits.
func offeredSeats(t *testing.T, a *app.App, org uuid.UUID, e store.WaitlistEntry, byID map[uuid.UUID]store.Seat) []string {
	t.Helper()
	got := entry(t, a, org, e.ID)
	if got.Status != store.WaitlistOffered {
		return nil
	}
	var out []string
	for _, id := range got.HoldIDs {
		h, err := a.Store.Holds.ByID(context.Background(), org, id)
		if err != nil {
			t.Fatal(err)
		}
		s := byID[h.SeatID]
		out = append(out, fmt.Sprintf("%s/%02d", s.Row, s.Number))
	}
	slices.Sort(out)
	return out
}

// TestWaitlistOffersKeepTheRules: an offer never hands out an accessible
// or companion seat before the event's release time, unless the entry
// asked for accessible seating, nor leaves a seat alone in its row on a strict
// event; it prefers seats side by side in one row to the first free ones.
func TestWaitlistOffersKeepTheRules(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 4)
	ctx := context.Background()

	t.Run("accessible seats wait for their release", func(t *testing.T) {
		e := onSale(t, a, tn, 3, func(in *hold.EventInput) { in.AccessibleReleaseAt = rfc(time.Now().Add(time.Hour)) })
		byID, byPos := seatMap(t, a, tn.Org.ID, e.ID)
		keepFree(t, a, e.ID, byPos, "A/01", "A/02")
		w := join(t, a, buyer(tn.Buyers[0]), e.ID, 1, "", "")
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, w, byID); got != nil {
			t.Fatalf("offered %v before the accessible release time", got)
		}
		if _, err := a.Events.Update(ctx, organizer(tn), e.ID, hold.EventInput{AccessibleReleaseAt: rfc(time.Now().Add(-time.Minute))}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Pool.Exec(ctx, `INSERT INTO waitlist_work (org_id, event_id) VALUES ($1, $2)`, tn.Org.ID, e.ID); err != nil {
			t.Fatal(err)
		}
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, w, byID); len(got) != 1 || (got[0] != "A/01" && got[0] != "A/02") {
			t.Fatalf("offered %v after the release time, want A/01 or A/02", got)
		}
		assertSeatInvariants(t, a, e.ID)
	})

	t.Run("a buyer who needs accessible seating is offered it before the release", func(t *testing.T) {
		e := onSale(t, a, tn, 3, func(in *hold.EventInput) { in.AccessibleReleaseAt = rfc(time.Now().Add(time.Hour)) })
		byID, byPos := seatMap(t, a, tn.Org.ID, e.ID)
		keepFree(t, a, e.ID, byPos, "A/01", "A/02")
		plain := join(t, a, buyer(tn.Buyers[2]), e.ID, 1, "", "")
		needs, err := a.Waitlist.Join(ctx, buyer(tn.Buyers[1]), e.ID, hold.WaitFor{Count: 1, Accessible: true})
		if err != nil || !needs.Accessible {
			t.Fatalf("join asking for accessible seating: %+v, %v", needs, err)
		}
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, plain, byID); got != nil {
			t.Fatalf("first in line, not asking, offered %v before the release time", got)
		}
		if got := offeredSeats(t, a, tn.Org.ID, needs, byID); len(got) != 1 || (got[0] != "A/01" && got[0] != "A/02") {
			t.Fatalf("buyer asking for accessible seating offered %v, want A/01 or A/02", got)
		}
		assertSeatInvariants(t, a, e.ID)
	})

	t.Run("strict: no seat left alone", func(t *testing.T) {
		e := onSale(t, a, tn, 3, func(in *hold.EventInput) { in.OrphanRule = ptr("strict") })
		byID, byPos := seatMap(t, a, tn.Org.ID, e.ID)
		// Two seats out of B-1..B-3 always leave one of them alone; B-5
		// and B-6 leave nobody.
		keepFree(t, a, e.ID, byPos, "B/01", "B/02", "B/03", "B/05", "B/06")
		first := join(t, a, buyer(tn.Buyers[0]), e.ID, 2, "", "")
		second := join(t, a, buyer(tn.Buyers[1]), e.ID, 2, "", "")
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, first, byID); !slices.Equal(got, []string{"B/05", "B/06"}) {
			t.Errorf("first in line offered %v, want [B/05 B/06]", got)
		}
		if got := offeredSeats(t, a, tn.Org.ID, second, byID); got != nil {
			t.Errorf("second in line offered %v, which leaves a seat alone", got)
		}
		// Three side by side leave nobody: the second gets them all once
		// it waits for three.
		third := join(t, a, buyer(tn.Buyers[2]), e.ID, 3, "", "")
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, third, byID); !slices.Equal(got, []string{"B/01", "B/02", "B/03"}) {
			t.Errorf("third in line offered %v, want [B/01 B/02 B/03]", got)
		}
		assertSeatInvariants(t, a, e.ID)
	})

	t.Run("side by side first", func(t *testing.T) {
		e := onSale(t, a, tn, 3, nil)
		byID, byPos := seatMap(t, a, tn.Org.ID, e.ID)
		keepFree(t, a, e.ID, byPos, "B/01", "B/03", "B/05", "C/07", "C/08")
		w := join(t, a, buyer(tn.Buyers[3]), e.ID, 2, "", "")
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, w, byID); !slices.Equal(got, []string{"C/07", "C/08"}) {
			t.Errorf("offered %v, want the pair C/07 C/08", got)
		}
		// Without a pair, the first free seats in order.
		w2 := join(t, a, buyer(tn.Buyers[0]), e.ID, 2, "", "")
		offers(t, a)
		if got := offeredSeats(t, a, tn.Org.ID, w2, byID); !slices.Equal(got, []string{"B/01", "B/03"}) {
			t.Errorf("offered %v, want B/01 B/03", got)
		}
	})
}
