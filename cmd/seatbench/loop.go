package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// loop is the closed loop every phase drives its load with: workers
// goroutines, each sending its next call as soon as its last one is
// answered (so a slow answer delays the next call: a closed loop does not
// correct for coordinated omission). Every call takes the next index of a
// shared count. The loop ends when n indices were taken, at until (zero:
// no deadline; checked before each call), when ctx ends, or at the first
// error, which stops the other workers from taking more and is returned.
// ranOut says the indices ran out before until.
func loop(ctx context.Context, workers, n int, until time.Time, call func(worker, i int) error) (ranOut bool, err error) {
	var next atomic.Int64
	var out atomic.Bool
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for w := range max(workers, 1) {
		wg.Go(func() {
			for ctx.Err() == nil && (until.IsZero() || time.Now().Before(until)) {
				i := int(next.Add(1) - 1)
				if i >= n {
					out.Store(true)
					return
				}
				if err := call(w, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return out.Load(), first
	}
	return out.Load(), ctx.Err()
}

// closedLoop runs n calls of f by c workers, each taking the next index,
// and answers the calls' latency (each timed from its own start) and the
// calls per second over the whole loop. The first error stops it.
func closedLoop(ctx context.Context, c, n int, f func(i int) error) (Latency, float64, error) {
	lat := make([]float64, n)
	start := time.Now()
	err := parallel(ctx, c, n, func(i int) error {
		t := time.Now()
		err := f(i)
		lat[i] = ms(time.Since(t))
		return err
	})
	secs := time.Since(start).Seconds()
	if err != nil {
		return Latency{}, 0, err
	}
	return latencyOf(lat), float64(n) / secs, nil
}

// parallel calls f for every index below n from c goroutines; the first
// error stops the others from taking more.
func parallel(ctx context.Context, c, n int, f func(i int) error) error {
	_, err := loop(ctx, c, n, time.Time{}, func(_, i int) error { return f(i) })
	return err
}
