package notify_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"seatd/internal/notify"
	"seatd/internal/testsvc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// database returns the package database's connection settings and a
// pool to send notifications through (closed when the test ends).
func database(t *testing.T) (*pgx.ConnConfig, *pgxpool.Pool) {
	t.Helper()
	url := testsvc.Config(t).DatabaseURL
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return cfg, pool
}

// setup runs a notifier on the package's database until the test ends
// and returns it with a pool to send notifications through.
func setup(t *testing.T) (*notify.Notifier, *pgxpool.Pool) {
	t.Helper()
	cfg, pool := database(t)
	n := notify.New(cfg, testsvc.Logger(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return n, pool
}

// channel is a fresh channel name, so parallel tests never hear each other.
func channel() string { return "test_" + uuid.NewString()[:8] }

// recorder collects the payloads a handler was called with.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, p)
}

func (r *recorder) payloads() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// readyCount counts OnReady calls.
func readyCount(n *notify.Notifier) *atomic.Int64 {
	var c atomic.Int64
	n.OnReady(func() { c.Add(1) })
	return &c
}

func send(t *testing.T, pool *pgxpool.Pool, channel string, payloads ...string) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, channel, payloads); err != nil {
		t.Fatal(err)
	}
}

// listening waits until n hears channel: a notification sent once the
// ready callback registered after Listen ran must be heard.
func listening(t *testing.T, n *notify.Notifier) {
	t.Helper()
	ready := make(chan struct{})
	var once sync.Once
	remove := n.OnReady(func() { once.Do(func() { close(ready) }) })
	defer remove()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifier never became ready")
	}
}

// TestDelivery: every handler of a channel gets its notifications, in
// the order sent, and nothing from the other channels.
func TestDelivery(t *testing.T) {
	t.Parallel()
	n, pool := setup(t)
	chans := []string{channel(), channel(), channel()}
	recs := map[string][]*recorder{}
	for _, ch := range chans {
		for range 2 {
			r := &recorder{}
			n.Listen(ch, r.add)
			recs[ch] = append(recs[ch], r)
		}
	}
	listening(t, n)
	const each = 200
	want := map[string][]string{}
	for i := range each {
		for _, ch := range chans {
			p := ch + ":" + strconv.Itoa(i)
			want[ch] = append(want[ch], p)
		}
	}
	// Several transactions, interleaved across channels.
	for i := 0; i < each; i += 50 {
		for _, ch := range chans {
			send(t, pool, ch, want[ch][i:i+50]...)
		}
	}
	for _, ch := range chans {
		for i, r := range recs[ch] {
			testsvc.Eventually(t, 5*time.Second, fmt.Sprintf("%s handler %d has every notification", ch, i), func() bool {
				return len(r.payloads()) >= each
			})
			if got := r.payloads(); !slices.Equal(got, want[ch]) {
				t.Fatalf("%s handler %d got %d notifications, not the %d sent in order: %v", ch, i, len(got), each, got[:min(5, len(got))])
			}
		}
	}
}

// TestUnlisten: a handler removed hears nothing more; the others on the
// channel go on, and a channel nobody listens to any more can be
// listened to again.
func TestUnlisten(t *testing.T) {
	t.Parallel()
	n, pool := setup(t)
	ch := channel()
	stay, leave := &recorder{}, &recorder{}
	n.Listen(ch, stay.add)
	unlisten := n.Listen(ch, leave.add)
	listening(t, n)
	send(t, pool, ch, "1")
	testsvc.Eventually(t, 5*time.Second, "both heard the first", func() bool {
		return len(stay.payloads()) == 1 && len(leave.payloads()) == 1
	})
	unlisten()
	unlisten() // twice is harmless
	send(t, pool, ch, "2")
	testsvc.Eventually(t, 5*time.Second, "the staying handler heard the second", func() bool { return len(stay.payloads()) == 2 })
	if got := leave.payloads(); len(got) != 1 {
		t.Fatalf("a removed handler heard %v", got)
	}

	other := channel()
	again := &recorder{}
	stop := n.Listen(other, again.add)
	listening(t, n)
	stop()
	listening(t, n) // the UNLISTEN is done
	send(t, pool, other, "lost")
	back := &recorder{}
	n.Listen(other, back.add)
	listening(t, n)
	send(t, pool, other, "heard")
	testsvc.Eventually(t, 5*time.Second, "the channel heard again", func() bool { return len(back.payloads()) == 1 })
	if got := append(again.payloads(), back.payloads()...); !slices.Equal(got, []string{"heard"}) {
		t.Fatalf("heard %v, want only the notification sent while listening again", got)
	}
}

// TestReconnect: when the connection is killed, the notifier connects
// again, calls every ready callback, and deliveries resume.
func TestReconnect(t *testing.T) {
	t.Parallel()
	n, pool := setup(t)
	ch := channel()
	r := &recorder{}
	n.Listen(ch, r.add)
	ready := readyCount(n)
	listening(t, n)
	testsvc.Eventually(t, 5*time.Second, "the first ready", func() bool { return ready.Load() >= 1 })
	send(t, pool, ch, "before")
	testsvc.Eventually(t, 5*time.Second, "the first notification", func() bool { return len(r.payloads()) == 1 })

	for round := range 2 {
		pid, was := n.PID(), ready.Load()
		var killed bool
		if err := pool.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, int32(pid)).Scan(&killed); err != nil || !killed { // #nosec G115 -- a backend pid
			t.Fatalf("kill the listening backend %d: %v %v", pid, killed, err)
		}
		testsvc.Eventually(t, 10*time.Second, "ready again", func() bool { return ready.Load() > was && n.PID() != pid })
		p := "after " + strconv.Itoa(round)
		send(t, pool, ch, p)
		testsvc.Eventually(t, 5*time.Second, "a notification after the reconnect", func() bool {
			return slices.Contains(r.payloads(), p)
		})
	}
}

// TestSlowHandler: a handler that blocks delays nobody else, and gets its
// notifications once it goes on.
func TestSlowHandler(t *testing.T) {
	t.Parallel()
	n, pool := setup(t)
	ch := channel()
	release := make(chan struct{})
	slow, fast := &recorder{}, &recorder{}
	n.Listen(ch, func(p string) {
		<-release
		slow.add(p)
	})
	n.Listen(ch, fast.add)
	listening(t, n)
	send(t, pool, ch, "a", "b", "c")
	testsvc.Eventually(t, 5*time.Second, "the fast handler heard everything", func() bool { return len(fast.payloads()) == 3 })
	if len(slow.payloads()) != 0 {
		t.Fatal("the blocked handler ran")
	}
	close(release)
	testsvc.Eventually(t, 5*time.Second, "the slow handler caught up", func() bool { return len(slow.payloads()) == 3 })
	if got := slow.payloads(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("slow handler got %v", got)
	}
}

// TestListenBeforeRun: subscriptions made before Run are LISTENed at the
// first connection, and the ready callbacks run then.
func TestListenBeforeRun(t *testing.T) {
	t.Parallel()
	cfg, pool := database(t)
	n := notify.New(cfg, testsvc.Logger(t))
	ch := channel()
	r := &recorder{}
	n.Listen(ch, r.add)
	ready := make(chan struct{})
	var once sync.Once
	n.OnReady(func() { once.Do(func() { close(ready) }) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	send(t, pool, ch, "x")
	testsvc.Eventually(t, 5*time.Second, "delivery", func() bool { return len(r.payloads()) == 1 })
}

// TestHandlerFallsBehind: a handler so far behind that its notifications
// no longer fit its queue makes the notifier connect again, so that every
// subscriber resyncs (the ready callbacks run); deliveries then resume.
func TestHandlerFallsBehind(t *testing.T) {
	t.Parallel()
	n, pool := setup(t)
	ch := channel()
	release := make(chan struct{})
	var handled atomic.Int64
	n.Listen(ch, func(string) {
		<-release
		handled.Add(1)
	})
	ready := readyCount(n)
	listening(t, n)
	was := ready.Load()
	payloads := make([]string, 10_050)
	for i := range payloads {
		payloads[i] = strconv.Itoa(i)
	}
	send(t, pool, ch, payloads...)
	testsvc.Eventually(t, 10*time.Second, "ready again after the overflow", func() bool { return ready.Load() > was })
	close(release)
	send(t, pool, ch, "after")
	testsvc.Eventually(t, 10*time.Second, "deliveries resumed", func() bool { return handled.Load() > 10_000 })
}

// TestWork: a worker's rounds run at once, on a notification (and once
// more Settle after it), at most Backstop apart, never closer than
// Cooldown when woken by notifications, and at once when a round asks.
func TestWork(t *testing.T) {
	t.Parallel()
	n, pool := setup(t)
	ch := channel()
	listening(t, n)
	var mu sync.Mutex
	var starts []time.Time
	var asks atomic.Int64 // rounds that ask for another at once
	rounds := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(starts)
	}
	s := notify.Schedule{Cooldown: 250 * time.Millisecond, Settle: 500 * time.Millisecond, Backstop: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		notify.Work(ctx, n, ch, s, func(context.Context) time.Duration {
			mu.Lock()
			starts = append(starts, time.Now())
			mu.Unlock()
			if asks.Load() > 0 {
				asks.Add(-1)
				return 0
			}
			return notify.Idle
		})
	}()
	defer func() { cancel(); <-done }()
	testsvc.Eventually(t, 5*time.Second, "the first round", func() bool { return len(rounds()) >= 1 })
	// The ready callback may wake one more round: wait for it to settle.
	testsvc.Eventually(t, 5*time.Second, "quiet", func() bool {
		before := len(rounds())
		time.Sleep(2 * s.Settle)
		return len(rounds()) == before
	})
	base := len(rounds())

	send(t, pool, ch, "1")
	testsvc.Eventually(t, 5*time.Second, "a round on the notification and one Settle after", func() bool {
		return len(rounds()) >= base+2
	})
	rs := rounds()
	if gap := rs[base+1].Sub(rs[base]); gap < s.Settle-50*time.Millisecond {
		t.Fatalf("the settle round came %s after the woken one, want about %s", gap, s.Settle)
	}

	// A stream of notifications: rounds no closer than Cooldown.
	base = len(rounds())
	for i := range 30 {
		send(t, pool, ch, strconv.Itoa(i))
		time.Sleep(10 * time.Millisecond)
	}
	testsvc.Eventually(t, 5*time.Second, "the stream's rounds", func() bool { return len(rounds()) > base+1 })
	rs = rounds()
	for i := base + 1; i < len(rs); i++ {
		if gap := rs[i].Sub(rs[i-1]); gap < s.Cooldown {
			t.Fatalf("rounds %d and %d started %s apart, under the cooldown", i-1, i, gap)
		}
	}
	if got := len(rs) - base; got > 10 {
		t.Fatalf("%d rounds for 30 notifications in 300 ms", got)
	}

	// A round that asks for another gets it at once, cooldown or not.
	testsvc.Eventually(t, 5*time.Second, "quiet", func() bool {
		before := len(rounds())
		time.Sleep(2 * s.Settle)
		return len(rounds()) == before
	})
	base = len(rounds())
	asks.Store(2)
	send(t, pool, ch, "ask")
	testsvc.Eventually(t, 5*time.Second, "the rounds asked for", func() bool { return len(rounds()) >= base+3 })
	rs = rounds()
	if gap := rs[base+2].Sub(rs[base]); gap >= s.Cooldown {
		t.Fatalf("three rounds asked for took %s", gap)
	}
}
