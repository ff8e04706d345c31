package realtime_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/realtime"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestConcurrentPublishes sends many messages at once from many goroutines
// over several channels, on Redis (where concurrent publishes share
// pipelines) and on the Postgres NOTIFY fallback. Every message must reach
// the subscriber of its channel exactly once, none another channel, and
// each publisher's messages must arrive in the order it sent them: a
// publish returns only once the message is accepted, so the next one from
// the same goroutine cannot overtake it.
func TestConcurrentPublishes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
	}{{"redis", true}, {"postgres notify", false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := testenv.App(t, nil)
			bus := realtime.New(a.Redis, a.Pool, testenv.Notifier(t, a), testsvc.Logger(t), func() bool { return tc.redis })
			t.Cleanup(bus.Close)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)

			const channels, publishers, each = 4, 50, 20
			names := make([]string, channels)
			type got struct {
				mu     sync.Mutex
				seen   map[string]int // message -> times received
				last   map[int]int    // publisher -> last sequence number
				bad    []string
				probed atomic.Bool
			}
			gots := make([]*got, channels)
			var total atomic.Int64
			for c := range channels {
				names[c] = "test:{" + uuid.NewString() + "}:live"
				g := &got{seen: map[string]int{}, last: map[int]int{}}
				gots[c] = g
				unsub := bus.Subscribe(names[c], func(payload []byte) {
					g.mu.Lock()
					defer g.mu.Unlock()
					msg := string(payload)
					if msg == "probe" {
						g.probed.Store(true)
						return
					}
					g.seen[msg]++
					var ch, pub, seq int
					if _, err := fmt.Sscanf(msg, "%d/%d/%d", &ch, &pub, &seq); err != nil || ch != c {
						g.bad = append(g.bad, "foreign message "+msg)
						return
					}
					if prev, ok := g.last[pub]; ok && seq <= prev {
						g.bad = append(g.bad, "out of order "+msg+" after "+strconv.Itoa(prev))
					}
					g.last[pub] = seq
					total.Add(1)
				}, nil)
				t.Cleanup(unsub)
			}
			waitSubscribed(t, bus, names, func(c int) bool { return gots[c].probed.Load() })

			var wg sync.WaitGroup
			for p := range publishers {
				wg.Go(func() {
					c := p % channels
					for i := range each {
						if err := bus.Publish(ctx, names[c], fmt.Appendf(nil, "%d/%d/%d", c, p, i)); err != nil {
							t.Errorf("publish: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			want := int64(publishers * each)
			testsvc.Poll(10*time.Second, func() bool { return total.Load() >= want })
			time.Sleep(100 * time.Millisecond) // not a condition: a duplicate would arrive now
			if n := total.Load(); n != want {
				t.Errorf("received %d messages, want %d", n, want)
			}
			for c, g := range gots {
				g.mu.Lock()
				for msg, n := range g.seen {
					if n != 1 {
						t.Errorf("channel %d: %q received %d times", c, msg, n)
					}
				}
				if len(g.bad) > 0 {
					t.Errorf("channel %d: %s", c, strings.Join(g.bad[:min(5, len(g.bad))], "; "))
				}
				g.mu.Unlock()
			}
		})
	}
}

// waitSubscribed publishes probes on every channel until its subscriber
// has heard one, so the test's messages are not published before the
// subscription (Redis) or the LISTEN (Postgres) is in place.
func waitSubscribed(t *testing.T, bus *realtime.Bus, names []string, heard func(c int) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for c, name := range names {
		for !heard(c) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: subscriber never heard a probe", name)
			}
			if err := bus.Publish(context.Background(), name, []byte("probe")); err != nil {
				t.Fatalf("probe: %v", err)
			}
			time.Sleep(20 * time.Millisecond) // poll interval: one probe per round
		}
	}
}
