package hold_test

import (
	"context"
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
	_, err := st.UpdateEvent(context.Background(), tn.Org.ID, event, tn.Organizer.ID, func(cur store.Event) (store.EventUpdate, error) {
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
			changer, holder := pair[0].Store, pair[1].Core
			e := onSale(t, a, tn, 3, nil)
			_, byPos := seatMap(t, a, tn.Org.ID, e.ID)
			// The holding process caches the event with both rules off.
			if _, err := holder.Hold(ctx, u, e.ID, []uuid.UUID{byPos["C/10"]}, hold.SourceAPI); err != nil {
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
				_, err := holder.Hold(ctx, u, e.ID, ids, hold.SourceAPI)
				if got := apperr.CodeOf(err); got != tc.want {
					t.Errorf("process %d, %s: %v, want %s", i, tc.name, err, tc.want)
				}
				if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND seat_id = ANY($2::uuid[])`, e.ID, ids); n != 0 {
					t.Errorf("process %d, %s: %d holds written", i, tc.name, n)
				}
			}
			// Asking for accessible seating, or being staff, still may; a
			// hold that leaves nobody alone still may.
			if _, err := holder.HoldChosen(ctx, u, e.ID, []uuid.UUID{byPos["A/01"]}, hold.SourceAPI, hold.Choice{Accessible: true}); err != nil {
				t.Errorf("process %d, asking for accessible seating: %v", i, err)
			}
			if _, err := holder.Hold(ctx, u, e.ID, []uuid.UUID{byPos["B/01"], byPos["B/02"]}, hold.SourceAPI); err != nil {
				t.Errorf("process %d, B-1 and B-2: %v", i, err)
			}
			if _, err := holder.HoldFor(ctx, staff(tn.BoxOffice), e.ID, []uuid.UUID{byPos["C/02"]},
				store.Customer{Name: "A", Email: "a@example.com"}, later); err != nil {
				t.Errorf("process %d, staff leaving C-1 alone: %v", i, err)
			}

			// The other way: a process that cached the rule strict (it
			// read the event after the change) refuses; turned off behind
			// its back, the same hold (C-4, leaving C-3 alone) goes at once.
			fresh := testenv.App(t, mod).Core
			if _, err := fresh.Hold(ctx, u, e.ID, []uuid.UUID{byPos["C/04"]}, hold.SourceAPI); apperr.CodeOf(err) != apperr.OrphanSeat {
				t.Fatalf("process %d, strict cached: %v, want orphan_seat", i, err)
			}
			setRules(t, changer, tn, e.ID, "off", nil)
			if _, err := fresh.Hold(ctx, u, e.ID, []uuid.UUID{byPos["C/04"]}, hold.SourceAPI); err != nil {
				t.Errorf("process %d, rule turned off behind its back: %v", i, err)
			}
			assertSeatInvariants(t, a, e.ID)
		}
	})
}
