package hold_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestBestAvailablePostgresCrowd: with Redis out of reach, 200 buyers ask
// for the 4 best seats at once. The pick is made in Postgres (SKIP
// LOCKED): nobody is refused, no seat is given twice, every block is side
// by side in one row, few blocks are passed over, no seat is left alone,
// and Postgres holds exactly what was granted, to whom it was granted.
func TestBestAvailablePostgresCrowd(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.RedisURL = "redis://127.0.0.1:1/0" })
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 2, 20, 50) // 2 000 seats, 40 rows
	ctx := context.Background()
	if _, err := a.Pool.Exec(ctx, `UPDATE events SET orphan_rule = 'strict', status = 'on_sale' WHERE id = $1`, ev.ID); err != nil {
		t.Fatal(err)
	}
	buyers := testenv.AddBuyers(t, a, tn.Org.ID, 200)
	byID, _ := seatMap(t, a, tn.Org.ID, ev.ID)
	var mu sync.Mutex
	var wg sync.WaitGroup
	granted := map[uuid.UUID]uuid.UUID{} // seat -> buyer
	var refused []error
	start := make(chan struct{})
	for _, u := range buyers {
		wg.Go(func() {
			<-start
			res, err := a.Holds.Hold(ctx, buyer(u), hold.Request{Event: ev.ID, Best: &hold.Best{Count: 4}, Source: hold.SourceAPI})
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
	close(start)
	wg.Wait()
	passed := testutil.ToFloat64(a.Metrics.HoldConflict.WithLabelValues("postgres"))
	fallback := testutil.ToFloat64(a.Metrics.RedisFallback)
	t.Logf("%d buyers: %d granted, %d refused, %v blocks passed over, %v holds through postgres",
		len(buyers), len(buyers)-len(refused), len(refused), passed, fallback)
	if len(refused) > 0 {
		t.Errorf("refused with %d seats free: %v", len(byID)-len(granted), refused[0])
	}
	if fallback != float64(len(buyers)) {
		t.Errorf("%v holds through postgres, want %d", fallback, len(buyers))
	}
	// A pick claimed on this process is not picked again here: blocks
	// passed over come only from the orphan rule's check on committed rows.
	if passed > float64(len(buyers))/10 {
		t.Errorf("%v blocks passed over for %d buyers", passed, len(buyers))
	}
	rows, err := a.Pool.Query(ctx, `SELECT seat_id, user_id FROM seat_holds WHERE event_id = $1 AND status = 'active'`, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	held := map[uuid.UUID]uuid.UUID{}
	var seat, user uuid.UUID
	if _, err := pgx.ForEachRow(rows, []any{&seat, &user}, func() error { held[seat] = user; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(held) != len(granted) {
		t.Errorf("%d active holds in Postgres, %d seats granted", len(held), len(granted))
	}
	for s, u := range granted {
		if held[s] != u {
			t.Errorf("seat %v granted to %v, held in Postgres by %v", s, u, held[s])
		}
	}
	if n := count(t, a, `SELECT count(*) FROM seats WHERE event_id = $1 AND status = 'held'`, ev.ID); n != len(granted) {
		t.Errorf("%d seats held in Postgres, %d granted", n, len(granted))
	}
	assertSeatInvariants(t, a, ev.ID)
	assertNoOrphans(t, a, ev.ID)
}
