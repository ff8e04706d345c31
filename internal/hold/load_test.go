package hold_test

import (
	"context"
	"testing"
	"time"

	"seatd/internal/hold"
	"seatd/internal/testenv"
)

// BenchmarkColdLoad: the first request for a 100 000-seat event that is
// not in the process's cache (each iteration a new process-like app on the
// same databases): load every seat, fill the cache, sync Redis.
func BenchmarkColdLoad(b *testing.B) {
	a := testenv.App(b, nil)
	tn := testenv.NewTenant(b, a, 1)
	ev := testenv.NewEvent(b, a, tn.Org.ID, 10, 100, 100)
	ctx := context.Background()
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		fresh := testenv.App(b, nil)
		// Connections open, as in a process that has served before.
		if _, err := fresh.Pool.Exec(ctx, `SELECT 1`); err != nil {
			b.Fatal(err)
		}
		if err := fresh.Redis.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if _, _, err := fresh.Events.Seats(ctx, hold.Actor{Org: tn.Org.ID, User: tn.Buyers[0].ID, Role: hold.RoleBuyer}, ev.ID); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		fresh.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/load")
}
