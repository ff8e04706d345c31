package store_test

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/chart"
	"seatd/internal/config"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestGAPlaceHeldAlreadyIsTaken: a GA request names places it picked as
// free, asking for that many more, so a place its buyer holds already is
// refused as taken, while a seat asked again is the buyer's own hold.
func TestGAPlaceHeldAlreadyIsTaken(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	params := func(ga bool, ids ...uuid.UUID) store.HoldParams {
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now, HeldUntil: now.Add(time.Minute),
			Source: "api", GA: ga}
		for _, id := range ids {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		return p
	}
	if out, err := a.Store.Holds.Create(ctx, params(true, seats[0])); err != nil || len(out.Created) != 1 {
		t.Fatalf("first place: %+v, %v", out, err)
	}
	out, err := a.Store.Holds.Create(ctx, params(true, seats[0], seats[1]))
	if err != nil || len(out.Taken) != 1 || out.Taken[0] != seats[0] || len(out.Created)+len(out.Existing) != 0 {
		t.Fatalf("GA with a place held already: %+v, %v; want it taken, nothing held", out, err)
	}
	if out, err := a.Store.Holds.Create(ctx, params(false, seats[0])); err != nil || len(out.Existing) != 1 {
		t.Fatalf("the seat asked again: %+v, %v; want the buyer's own hold", out, err)
	}
	var n int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d holds (%v), want 1", n, err)
	}
}

// TestStandingChartStreamed: an event made from a chart of 200 000
// standing places (chart.MaxSeats, the most a chart may hold) gets every
// place as a row, numbered and indexed in order, while the process's heap
// grows by less than heapBound. The rows are streamed into COPY
// (layoutRows): the heap measured about 1 MB above its start. Built in
// memory first, as they were, the rows held their twelve boxed values
// each at once: 68 MB measured for these 200 000.
//
// heapBound is 32 MB, under half the old figure and far above the
// streamed one: the streamed path keeps one row and pgx's 64 KB send
// buffer, and the rest is garbage the collector has not reached yet (GOGC
// is 10 while the event is made, so a cycle starts at a tenth of the live
// heap; what is allocated while it runs, slower under -race, comes on
// top). Not parallel: the heap is the whole process's.
func TestStandingChartStreamed(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.DatabaseURL = testsvc.OwnDatabase(t, "standing_chart") })
	tn := testenv.NewTenant(t, a, 0)
	ctx := context.Background()
	c := chart.Chart{Name: "Field", Categories: []chart.Category{{Key: "ga", Name: "Standing", Color: "#123456"}},
		Sections: []chart.Section{{Label: "F", Name: "Field", Kind: chart.GA, Capacity: chart.MaxCapacity, Category: "ga"}}}
	if err := chart.Validate(c); err != nil {
		t.Fatalf("a chart of %d standing places: %v", chart.MaxCapacity, err)
	}
	v, err := a.Store.Charts.Save(ctx, tn.Org.ID, uuid.Nil, c)
	if err != nil {
		t.Fatal(err)
	}
	const heapBound = 32 << 20

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	now := time.Now()
	ev, err := a.Store.Events.CreateFromChart(ctx, tn.Org.ID, tn.Organizer.ID, v,
		store.EventSpec{Name: "Open air", Venue: "Field", StartsAt: now.Add(48 * time.Hour), TimeZone: "UTC"},
		[]store.Price{{Category: "ga", PriceMinor: 1000, Currency: "EUR"}})
	close(stop)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	growth := int64(peak.Load()) - int64(base)
	if growth > heapBound {
		t.Fatalf("making an event of %d places grew the heap by %d MB; want under %d MB", ev.Seats, growth>>20, heapBound>>20)
	}

	var n, numbers, first, last int
	if err := a.Pool.QueryRow(ctx, `
		SELECT count(*), count(DISTINCT number), min(idx), max(idx) FROM seats
		WHERE org_id = $1 AND event_id = $2 AND row_label = $3 AND category = 'ga'`, tn.Org.ID, ev.ID, store.GARow).
		Scan(&n, &numbers, &first, &last); err != nil {
		t.Fatal(err)
	}
	if ev.Seats != chart.MaxCapacity || n != chart.MaxCapacity || numbers != n || first != 0 || last != n-1 {
		t.Fatalf("event of %d seats: %d place rows, %d numbers, idx %d..%d; want %d of each, idx 0..%d",
			ev.Seats, n, numbers, first, last, chart.MaxCapacity, chart.MaxCapacity-1)
	}
	t.Logf("%d standing places made into rows with the heap %d MB above its start (bound %d MB)", n, max(growth, 0)>>20, heapBound>>20)
}
