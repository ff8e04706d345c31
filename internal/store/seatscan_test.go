package store_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestLoadEventDecodesLikeScan: LoadEvent's binary decoder reads every
// seat exactly as the generic scan does (Events.Seats), held seats with
// their hold, holder and held_until included, and a blocked seat's
// status; sections come in order; another org's id finds nothing.
func TestLoadEventDecodesLikeScan(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	other := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 3, 4, 30)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	now := time.Now().UTC().Truncate(time.Microsecond)
	holdID := uuid.New()
	out, err := a.Store.Holds.Create(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now,
		HeldUntil: now.Add(7 * time.Minute), Source: "api",
		Seats: []store.HoldRequest{{SeatID: seats[17], HoldID: holdID, Fence: 42}}})
	if err != nil || len(out.Created) != 1 {
		t.Fatalf("hold: %+v, %v", out, err)
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE seats SET status = 'blocked', version = version + 1 WHERE id = $1`, seats[200]); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `INSERT INTO event_categories (org_id, event_id, key, name, price_minor, currency)
		VALUES ($1, $2, 'front', 'Front', 9000, 'EUR')`, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE seats SET category = 'front', accessible = idx = 3, companion = idx = 4
		WHERE org_id = $1 AND event_id = $2 AND idx < 10`, tn.Org.ID, ev.ID); err != nil {
		t.Fatal(err)
	}
	// The decoder reads what the load reads: its columns and their wire
	// formats are the ones it insists on (else the load falls back to the
	// generic scan, and this comparison would compare it with itself).
	rows, err := a.Pool.Query(ctx, store.SeatColumns+` WHERE s.org_id = $1 AND s.event_id = $2`, tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	binary := store.BinarySeatRows(rows)
	rows.Close()
	if !binary {
		t.Fatalf("seat rows are not read by the binary decoder: %+v", rows.FieldDescriptions())
	}

	secs, got, at, err := a.Store.Feed.LoadEvent(ctx, tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.Store.Events.Seats(ctx, tn.Org.ID, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 360 || !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("seat %d: decoded %+v, scanned %+v", i, got[i], want[i])
			}
		}
		t.Fatalf("decoded %d seats, scanned %d", len(got), len(want))
	}
	h := got[17]
	if h.Status != store.Held || h.HoldID != holdID || h.HolderID != tn.Buyers[0].ID || !h.HeldUntil.Equal(now.Add(7*time.Minute)) || h.Fence != 42 {
		t.Fatalf("held seat decoded as %+v", h)
	}
	if got[5].Category != "front" || !got[3].Accessible || !got[4].Companion || got[5].Accessible || got[20].Category != "" {
		t.Fatalf("categories and flags decoded as %+v, %+v, %+v", got[3], got[4], got[5])
	}
	if got[200].Status != store.Blocked || got[200].Version != 2 {
		t.Fatalf("blocked seat decoded as %+v", got[200])
	}
	if len(secs) != 3 || secs[0].Label != "A" || secs[2].Label != "C" || at == "" {
		t.Fatalf("sections %+v, cursor %q", secs, at)
	}
	_, none, _, err := a.Store.Feed.LoadEvent(ctx, other.Org.ID, ev.ID)
	if err != nil || len(none) != 0 {
		t.Fatalf("another org's load: %d seats, %v", len(none), err)
	}
	if _, err := a.Store.Events.Settings(ctx, other.Org.ID, ev.ID); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("another org's event exists: %v", err)
	}
	t.Logf("360 seats (one held, one blocked) decoded from the wire as the generic scan reads them")
}
