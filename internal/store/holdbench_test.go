package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// benchHolds times Holds.Create of n seats at a time, each call on seats
// nobody holds (a fresh event whenever one runs out), one caller at once:
// the latency of the hold statement, not its throughput.
func benchHolds(b *testing.B, n int, shared bool) {
	a := testenv.App(b, nil)
	tn := testenv.NewTenant(b, a, 1)
	ctx := context.Background()
	var ev store.Event
	var seats []uuid.UUID
	b.ResetTimer()
	for b.Loop() {
		if len(seats) < n {
			b.StopTimer()
			ev = testenv.NewEvent(b, a, tn.Org.ID, 1, 10, 50)
			seats = testenv.SeatIDs(b, a, tn.Org.ID, ev.ID)
			b.StartTimer()
		}
		now := time.Now().UTC().Truncate(time.Millisecond)
		p := store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: tn.Buyers[0].ID, Now: now, HeldUntil: now.Add(time.Hour),
			Source: "api", ShortWait: !shared}
		for _, id := range seats[:n] {
			p.Seats = append(p.Seats, store.HoldRequest{SeatID: id, HoldID: uuid.New(), Fence: 1})
		}
		seats = seats[n:]
		out, err := a.Store.Holds.Create(ctx, p)
		if err != nil || len(out.Created) != n {
			b.Fatalf("hold: %+v, %v", out, err)
		}
	}
}

// BenchmarkHoldOne is a single-seat hold in the shared statement.
func BenchmarkHoldOne(b *testing.B) { benchHolds(b, 1, true) }

// BenchmarkHoldTwo is a two-seat hold in its own transaction.
func BenchmarkHoldTwo(b *testing.B) { benchHolds(b, 2, false) }
