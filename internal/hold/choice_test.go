package hold_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// bothPaths runs f on the fast path and on the Postgres-only path (Redis
// unreachable from the start).
func bothPaths(t *testing.T, f func(t *testing.T, mod func(*config.Config), postgres bool)) {
	for _, postgres := range []bool{false, true} {
		name := "fast path"
		if postgres {
			name = "postgres only"
		}
		t.Run(name, func(t *testing.T) {
			f(t, func(c *config.Config) {
				if postgres {
					c.RedisURL = "redis://127.0.0.1:1/0"
				}
			}, postgres)
		})
	}
}

// onSale creates an on-sale event of rows×10 seats from a fresh chart.
func onSale(t *testing.T, a *app.App, tn testenv.Tenant, rows int, mod func(*hold.EventInput)) store.Event {
	t.Helper()
	v := testenv.NewChart(t, a, tn.Org.ID, rows, 10)
	e := chartEvent(t, a, tn, func(in *hold.EventInput) {
		in.ChartID = ptr(v.ChartID.String())
		if mod != nil {
			mod(in)
		}
	})
	if err := setStatus(t, a, tn, e.ID, "on_sale"); err != nil {
		t.Fatal(err)
	}
	return e
}

// seatMap returns the event's seated seats by id and by "row/number".
func seatMap(t *testing.T, a *app.App, org, event uuid.UUID) (map[uuid.UUID]store.Seat, map[string]uuid.UUID) {
	t.Helper()
	seats, err := a.Store.Events.Seats(context.Background(), org, event)
	if err != nil {
		t.Fatal(err)
	}
	byID, byPos := map[uuid.UUID]store.Seat{}, map[string]uuid.UUID{}
	for _, s := range seats {
		byID[s.ID] = s
		byPos[fmt.Sprintf("%s/%02d", s.Row, s.Number)] = s.ID
	}
	return byID, byPos
}

// sideBySide reports whether seats are one row's consecutive numbers.
func sideBySide(seats []store.Seat) bool {
	nums := make([]int, len(seats))
	for i, s := range seats {
		if s.Row != seats[0].Row || s.SectionID != seats[0].SectionID {
			return false
		}
		nums[i] = s.Number
	}
	slices.Sort(nums)
	for i := 1; i < len(nums); i++ {
		if nums[i] != nums[i-1]+1 {
			return false
		}
	}
	return true
}

// TestBestAvailableCrowd: many buyers ask for 4 best seats at once on two
// processes: no seat is given twice, every block is side by side in one
// row, and Postgres holds exactly what was granted.
func TestBestAvailableCrowd(t *testing.T) {
	bothPaths(t, func(t *testing.T, mod func(*config.Config), _ bool) {
		a, b := testenv.App(t, mod), testenv.App(t, mod)
		tn := testenv.NewTenant(t, a, 1)
		e := onSale(t, a, tn, 20, func(in *hold.EventInput) { in.OrphanRule = ptr("strict") })
		buyers := testenv.AddBuyers(t, a, tn.Org.ID, 16)
		byID, _ := seatMap(t, a, tn.Org.ID, e.ID)
		ctx := context.Background()
		var mu sync.Mutex
		var wg sync.WaitGroup
		granted := map[uuid.UUID]uuid.UUID{} // seat -> buyer
		var refused []error
		for i, u := range buyers {
			core := []*hold.Holds{a.Holds, b.Holds}[i%2]
			wg.Go(func() {
				res, err := core.Hold(ctx, buyer(u), hold.Request{Event: e.ID, Best: &hold.Best{Count: 4}, Source: hold.SourceAPI})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					refused = append(refused, err)
					return
				}
				var block []store.Seat
				for _, h := range res.Holds {
					if other, ok := granted[h.SeatID]; ok {
						t.Errorf("seat %v granted to %v and %v", h.SeatID, other, u.ID)
					}
					granted[h.SeatID] = u.ID
					block = append(block, byID[h.SeatID])
				}
				if len(block) != 4 || !sideBySide(block) {
					t.Errorf("buyer %v got %d seats not side by side: %+v", u.ID, len(block), block)
				}
			})
		}
		wg.Wait()
		t.Logf("granted %d seats to %d buyers, refused %v", len(granted), len(buyers)-len(refused), refused)
		// Every row of 10 has room for at least one block of 4 whatever the
		// others took: 20 rows for 16 buyers, so nobody is refused.
		if len(refused) > 0 {
			t.Errorf("refused: %v", refused)
		}
		if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1 AND status = 'active'`, e.ID); n != len(granted) {
			t.Errorf("%d active holds in Postgres, %d granted", n, len(granted))
		}
		assertSeatInvariants(t, a, e.ID)
		assertNoOrphans(t, a, e.ID)
	})
}

// assertNoOrphans checks in SQL that no available seat has both
// neighbours (number ±1 in its row, or the row's end) unavailable while
// some seat of its row is taken.
func assertNoOrphans(t *testing.T, a *app.App, event uuid.UUID) {
	t.Helper()
	n := count(t, a, `
		SELECT count(*) FROM seats s
		WHERE s.event_id = $1 AND s.status = 'available'
		  AND NOT EXISTS (SELECT 1 FROM seats o WHERE o.event_id = s.event_id AND o.section_id = s.section_id
		                  AND o.row_label = s.row_label AND abs(o.number - s.number) = 1 AND o.status = 'available')
		  AND EXISTS (SELECT 1 FROM seats o WHERE o.event_id = s.event_id AND o.section_id = s.section_id
		                  AND o.row_label = s.row_label AND abs(o.number - s.number) = 1)`, event)
	if n != 0 {
		t.Errorf("%d orphan seats left", n)
	}
}

// TestBestAvailableChoosesAndRefuses: the first block is the front row's
// centre; category and section filters hold; too many seats is
// not_enough_seats; a row without room gives a split.
func TestBestAvailableChoosesAndRefuses(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	e := onSale(t, a, tn, 2, nil)
	byID, _ := seatMap(t, a, tn.Org.ID, e.ID)
	ctx := context.Background()
	res, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: e.ID, Best: &hold.Best{Count: 4}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	var nums []int
	for _, h := range res.Holds {
		s := byID[h.SeatID]
		if s.Row != store.RowLabel(0) {
			t.Errorf("seat in row %s, want the front row", s.Row)
		}
		nums = append(nums, s.Number)
	}
	slices.Sort(nums)
	if !slices.Equal(nums, []int{4, 5, 6, 7}) && !slices.Equal(nums, []int{3, 4, 5, 6}) {
		t.Errorf("front row seats %v, want the centre", nums)
	}
	res, err = a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: e.ID, Best: &hold.Best{Count: 3, Category: "back"}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range res.Holds {
		if byID[h.SeatID].Category != "back" {
			t.Errorf("seat of category %q, want back", byID[h.SeatID].Category)
		}
	}
	_, err = a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: e.ID,
		Best: &hold.Best{Count: 7, Section: "S", Category: "front"}, Source: hold.SourceAPI})
	if apperr.CodeOf(err) != apperr.NotEnoughSeats {
		t.Errorf("7 of the 6 front seats left: %v, want not_enough_seats", err)
	}
	// The front row has 1–3 and 8–10 left: 4 seats are a split.
	res, err = a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: e.ID, Best: &hold.Best{Count: 4, Category: "front"},
		Source: hold.SourceAPI})
	if err != nil || len(res.Holds) != 4 {
		t.Fatalf("split of 4 front seats: %v", err)
	}
	for _, bad := range []hold.Best{{Count: 0}, {Count: 11}, {Count: 2, Category: "nope"}, {Count: 2, Section: "Z"}} {
		if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: e.ID, Best: &bad,
			Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%+v: %v, want invalid", bad, err)
		}
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, e.ID); n != 11 {
		t.Errorf("%d holds written, want 11", n)
	}
}

// TestOrphanRace: two buyers whose holds are fine alone but together leave
// one seat alone (1–4 and 6–10 of a row) race, row after row: exactly one
// wins each row and the other is refused with orphan_seat naming seat 5,
// on the fast path and the Postgres-only path.
func TestOrphanRace(t *testing.T) {
	bothPaths(t, func(t *testing.T, mod func(*config.Config), _ bool) {
		a, b := testenv.App(t, mod), testenv.App(t, mod)
		tn := testenv.NewTenant(t, a, 2)
		const rows = 12
		e := onSale(t, a, tn, rows, func(in *hold.EventInput) { in.OrphanRule = ptr("strict") })
		_, byPos := seatMap(t, a, tn.Org.ID, e.ID)
		ctx := context.Background()
		seats := func(row int, from, to int) []uuid.UUID {
			var ids []uuid.UUID
			for n := from; n <= to; n++ {
				ids = append(ids, byPos[fmt.Sprintf("%s/%02d", store.RowLabel(row), n)])
			}
			return ids
		}
		for r := 1; r < rows; r++ { // row 0 has the accessible seats
			var wg sync.WaitGroup
			errs := make([]error, 2)
			start := make(chan struct{})
			for i, part := range [][]uuid.UUID{seats(r, 1, 4), seats(r, 6, 10)} {
				core := []*hold.Holds{a.Holds, b.Holds}[i]
				wg.Go(func() {
					<-start
					_, errs[i] = core.Hold(ctx, buyer(tn.Buyers[i]), hold.Request{Event: e.ID, Seats: part, Source: hold.SourceAPI})
				})
			}
			close(start)
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case apperr.CodeOf(err) == apperr.OrphanSeat:
					var ae *apperr.Error
					if !errors.As(err, &ae) || !slices.Equal(ae.Seats, []string{seats(r, 5, 5)[0].String()}) {
						t.Errorf("row %d: orphan refusal names %v, want seat 5", r, ae.Seats)
					}
				default:
					t.Errorf("row %d: %v", r, err)
				}
			}
			if won != 1 {
				t.Errorf("row %d: %d winners (%v), want exactly one", r, won, errs)
			}
			// Release everything (through the process that held, whose
			// cache counts the buyer's holds) so the cap never interferes.
			for i, u := range tn.Buyers[:2] {
				core := []*hold.Holds{a.Holds, b.Holds}[i]
				hs, err := a.Store.Holds.OfUser(ctx, tn.Org.ID, e.ID, u.ID)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hs {
					if _, err := core.Release(ctx, buyer(u), h.ID, ""); err != nil {
						t.Fatalf("release: %v", err)
					}
				}
			}
		}
		assertSeatInvariants(t, a, e.ID)
	})
}

// TestOrphanRule: a single seat that would leave the row's end alone is
// refused; holding the end seat too is fine; releases are always allowed;
// staff are not bound; events without the rule do not care.
func TestOrphanRule(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	e := onSale(t, a, tn, 3, func(in *hold.EventInput) { in.OrphanRule = ptr("strict") })
	_, byPos := seatMap(t, a, tn.Org.ID, e.ID)
	u := buyer(tn.Buyers[0])
	b2, b1 := byPos["B/02"], byPos["B/01"]
	_, err := a.Holds.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{b2}, Source: hold.SourceAPI})
	var ae *apperr.Error
	if apperr.CodeOf(err) != apperr.OrphanSeat || !errors.As(err, &ae) || !slices.Equal(ae.Seats, []string{b1.String()}) {
		t.Fatalf("hold B-2: %v, want orphan_seat naming B-1", err)
	}
	res, err := a.Holds.Hold(ctx, u, hold.Request{Event: e.ID, Seats: []uuid.UUID{b1, b2}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatalf("hold B-1 and B-2: %v", err)
	}
	// Releasing B-1 leaves it free beside a taken B-2 at the row's end:
	// allowed all the same.
	if _, err := a.Holds.Release(ctx, u, res.Holds[0].ID, ""); err != nil {
		t.Fatalf("release B-1: %v", err)
	}
	boxOffice := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := a.Holds.Hold(ctx, boxOffice, hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["C/02"]},
		Customer: &store.Customer{Name: "A", Email: "a@example.com"}, Until: time.Now().Add(time.Hour)}); err != nil {
		t.Errorf("staff hold leaving an orphan: %v, want allowed", err)
	}
	off := onSale(t, a, tn, 2, nil)
	_, offPos := seatMap(t, a, tn.Org.ID, off.ID)
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: off.ID, Seats: []uuid.UUID{offPos["B/02"]}, Source: hold.SourceAPI}); err != nil {
		t.Errorf("hold without the rule: %v", err)
	}
}

// TestAccessibleSeats: before the release time only buyers asking for
// accessible seating (and staff) hold the accessible and companion seats,
// with the companion in one step; once the release time passes everybody
// may, on a process that cached the event before.
func TestAccessibleSeats(t *testing.T) {
	a := testenv.App(t, nil)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 3)
	ctx := context.Background()
	e := onSale(t, a, tn, 2, func(in *hold.EventInput) { in.AccessibleReleaseAt = rfc(time.Now().Add(time.Hour)) })
	_, byPos := seatMap(t, a, tn.Org.ID, e.ID)
	wheel, comp := byPos["A/01"], byPos["A/02"]
	for _, id := range []uuid.UUID{wheel, comp} {
		if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: e.ID, Seats: []uuid.UUID{id},
			Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.AccessibleReserved {
			t.Errorf("buyer not asking: %v, want accessible_reserved", err)
		}
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[0]), hold.Request{Event: e.ID,
		Best: &hold.Best{Count: 10, Category: "front"}, Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.NotEnoughSeats {
		t.Errorf("best 10 front seats without asking: %v, want not_enough_seats", err)
	}
	res, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: e.ID, Seats: []uuid.UUID{wheel}, Accessible: true,
		WithCompanion: true, Source: hold.SourceAPI})
	if err != nil {
		t.Fatalf("accessible with companion: %v", err)
	}
	if len(res.Holds) != 2 || res.Holds[0].SeatID != wheel || res.Holds[1].SeatID != comp {
		t.Fatalf("holds %+v, want the wheelchair space and its companion", res.Holds)
	}
	for _, h := range res.Holds {
		if _, err := a.Holds.Release(ctx, buyer(tn.Buyers[1]), h.ID, ""); err != nil {
			t.Fatal(err)
		}
	}
	staffActor := hold.Actor{Org: tn.Org.ID, User: tn.Organizer.ID, Role: hold.RoleOrganizer}
	if _, err := a.Holds.Hold(ctx, staffActor, hold.Request{Event: e.ID, Seats: []uuid.UUID{comp},
		Customer: &store.Customer{Name: "A", Email: "a@example.com"}, Until: time.Now().Add(time.Hour)}); err != nil {
		t.Errorf("staff: %v", err)
	}
	// The release time comes (moved to now): everybody may.
	if _, err := a.Events.Update(ctx, organizer(tn), e.ID, hold.EventInput{AccessibleReleaseAt: rfc(time.Now())}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "the wheelchair space on general sale", func() bool {
		_, err := a.Holds.Hold(ctx, buyer(tn.Buyers[2]), hold.Request{Event: e.ID, Seats: []uuid.UUID{wheel}, Source: hold.SourceAPI})
		return err == nil
	})
}

// TestChoiceTenancy: another organization's event is not found for best
// available or a companion hold.
func TestChoiceTenancy(t *testing.T) {
	a := testenv.App(t, nil)
	tn, other := testenv.NewTenant(t, a, 1), testenv.NewTenant(t, a, 1)
	e := onSale(t, a, tn, 2, nil)
	_, byPos := seatMap(t, a, tn.Org.ID, e.ID)
	ctx := context.Background()
	if _, err := a.Holds.Hold(ctx, buyer(other.Buyers[0]), hold.Request{Event: e.ID, Best: &hold.Best{Count: 2},
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("best available on another org's event: %v", err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(other.Buyers[0]), hold.Request{Event: e.ID, Seats: []uuid.UUID{byPos["A/01"]},
		WithCompanion: true, Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.NotFound {
		t.Errorf("companion hold on another org's event: %v", err)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, e.ID); n != 0 {
		t.Errorf("%d holds written", n)
	}
}
