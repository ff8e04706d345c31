package waitroom_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"seatd/internal/telemetry"
	"seatd/internal/testsvc"
	"seatd/internal/waitroom"
)

// TestQueueRedisDownFailsClosed: while Redis does not answer, joining and
// reading a place fail (the caller says the line is paused), the admitter
// admits nobody, and a pass is still checked (it needs no Redis); once
// Redis answers again every visitor is at the place they had and the
// admitter goes on from the head of the line.
func TestQueueRedisDownFailsClosed(t *testing.T) {
	srv := testsvc.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	ctx := context.Background()
	l := waitroom.NewLine(rdb, "seatd", 5*time.Minute)
	room := newRoom(time.Now().Add(time.Hour), 60)
	for i := range 50 {
		join(t, l, room, fmt.Sprint(i))
	}
	room = opened(room)
	before := map[string]int64{}
	for i := range 50 {
		before[fmt.Sprint(i)] = place(t, l, room, fmt.Sprint(i)).Position
	}
	passes := waitroom.NewPasses("a secret of at least thirty-two characters", time.Minute)
	pass, _ := passes.Issue(room.Org, room.Event, "admitted-before")

	// CLIENT PAUSE makes Redis stop answering (as a hung or partitioned
	// server) while keeping its data.
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 1500, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	a := waitroom.NewAdmitter(l, rooms{{Room: room, SeatsLeft: -1}}, nil, slog.Default(), time.Second)
	if n, err := a.Tick(ctx); err == nil || n != 0 {
		t.Fatalf("admitter with Redis paused: %d admitted, err %v", n, err)
	}
	if _, err := l.Join(ctx, room, "newcomer"); err == nil {
		t.Fatal("joining with Redis paused did not fail")
	}
	if _, err := l.Place(ctx, room, "0"); err == nil {
		t.Fatal("reading a place with Redis paused did not fail")
	}
	if _, ok := passes.Check(pass, room.Org, room.Event, "admitted-before"); !ok {
		t.Fatal("a valid pass was refused with Redis paused")
	}

	testsvc.Eventually(t, 5*time.Second, "Redis answering again", func() bool { return rdb.Ping(ctx).Err() == nil })
	for v, pos := range before {
		if p := place(t, l, room, v); p.Position != pos || p.State != waitroom.Waiting {
			t.Fatalf("%s after the outage: %+v, had place %d", v, p, pos)
		}
	}
	tickUntil(t, a, 1)
	for v, pos := range before {
		if p := place(t, l, room, v); (pos == 1) != (p.State == waitroom.Admitted) {
			t.Fatalf("after the outage %s (place %d) is %s", v, pos, p.State)
		}
	}
}

// TestQueuePasses: a pass admits its session to its event until it
// expires; another session, event or organization, an altered pass or an
// expired one is refused.
func TestQueuePasses(t *testing.T) {
	p := waitroom.NewPasses("a secret of at least thirty-two characters", 2*time.Second)
	org, event := uuid.New(), uuid.New()
	pass, exp := p.Issue(org, event, "s1")
	if got, ok := p.Check(pass, org, event, "s1"); !ok || !got.Equal(exp) {
		t.Fatalf("own pass: %v %v", got, ok)
	}
	other := waitroom.NewPasses("another secret of at least thirty-two chars", 2*time.Second)
	forged, _ := other.Issue(org, event, "s1")
	altered := []byte(pass)
	altered[3] ^= 1
	for name, c := range map[string]struct {
		pass, session string
		org, event    uuid.UUID
	}{
		"other session":      {pass, "s2", org, event},
		"other event":        {pass, "s1", org, uuid.New()},
		"other organization": {pass, "s1", uuid.New(), event},
		"other secret":       {forged, "s1", org, event},
		"altered":            {string(altered), "s1", org, event},
		"garbage":            {"not-a-pass", "s1", org, event},
		"empty":              {"", "s1", org, event},
		"no session":         {pass, "", org, event},
	} {
		if _, ok := p.Check(c.pass, c.org, c.event, c.session); ok {
			t.Errorf("%s: accepted", name)
		}
	}
	testsvc.Eventually(t, 5*time.Second, "the pass expired", func() bool {
		_, ok := p.Check(pass, org, event, "s1")
		return !ok
	})
}

// TestQueueAIMD: fed by the engine's hold-latency histogram, the rate
// rises by the step while the p99 of the holds since the last adjustment
// is under the target, halves when it is over, and stays within its
// bounds; holds of an earlier period do not count again.
func TestQueueAIMD(t *testing.T) {
	hist := telemetry.New(prometheus.NewRegistry()).HoldDuration
	hold := func(d time.Duration) { hist.WithLabelValues("hot", "ok").Observe(d.Seconds()) }
	for range 100 {
		hold(time.Second) // before the controller: not its period
	}
	c := waitroom.NewAIMD(hist, waitroom.AIMDOptions{Target: 100 * time.Millisecond, Start: 60, Min: 10, Max: 200, Step: 30})
	for i := range 1000 {
		hold(time.Duration(i%50) * time.Millisecond)
	}
	if r, p99 := c.Adjust(t.Context()); r != 90 || p99 < 40*time.Millisecond || p99 >= 50*time.Millisecond {
		t.Fatalf("fast holds: rate %v, p99 %v (want 90, between 40 and 50 ms)", r, p99)
	}
	if r, p99 := c.Adjust(t.Context()); r != 120 || p99 != 0 {
		t.Fatalf("no holds: rate %v, p99 %v; want 120, 0", r, p99)
	}
	for range 10000 {
		hist.WithLabelValues("fast", "seat_taken").Observe(0.3) // refused holds count as well
	}
	if r, p99 := c.Adjust(t.Context()); r != 60 || p99 <= 250*time.Millisecond || p99 > 500*time.Millisecond {
		t.Fatalf("slow holds: rate %v, p99 %v", r, p99)
	}
	for range 10 {
		hold(time.Second)
		c.Adjust(t.Context())
	}
	if r := c.Rate(); r != 10 {
		t.Fatalf("rate %v after ten slow periods, want the minimum 10", r)
	}
	for range 20 {
		c.Adjust(t.Context())
	}
	if r := c.Rate(); r != 200 {
		t.Fatalf("rate %v after twenty quiet periods, want the maximum 200", r)
	}
	// One slow hold in a thousand stays out of the p99.
	for i := range 1000 {
		if i%1000 == 0 {
			hold(2 * time.Second)
			continue
		}
		hold(5 * time.Millisecond)
	}
	if r, p99 := c.Adjust(t.Context()); r != 200 || p99 > 5*time.Millisecond {
		t.Fatalf("one slow hold in a thousand: rate %v, p99 %v", r, p99)
	}
}

// TestQueueAIMDAcrossProcesses: with Redis, the controller goes by the
// holds of every process, not only its own: slow holds on another
// process halve the rate of the one that admits though its own holds are
// fast, and they count once, in the period they happened in.
func TestQueueAIMDAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := testsvc.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := t.Context()
	opts := waitroom.AIMDOptions{Target: 100 * time.Millisecond, Start: 60, Min: 10, Max: 200, Step: 30}
	histA := telemetry.New(prometheus.NewRegistry()).HoldDuration
	histB := telemetry.New(prometheus.NewRegistry()).HoldDuration
	hold := func(h *prometheus.HistogramVec, d time.Duration, n int) {
		for range n {
			h.WithLabelValues("hot", "ok").Observe(d.Seconds())
		}
	}
	alone := waitroom.NewAIMD(histA, opts) // the admitting process on its own holds
	opts.Redis, opts.KeyPrefix = rdb, "t"
	a := waitroom.NewAIMD(histA, opts)
	b := waitroom.NewAIMD(histB, opts)
	// Each leaves a first reading, then sees the other's: a process's
	// holds count from the second reading another takes of them on.
	for _, c := range []*waitroom.AIMD{alone, a, b} {
		if r, _ := c.Adjust(ctx); r != 90 {
			t.Fatalf("no holds yet: rate %v, want 90", r)
		}
	}
	for _, c := range []*waitroom.AIMD{a, b} {
		if r, _ := c.Adjust(ctx); r != 120 {
			t.Fatalf("no holds yet: rate %v, want 120", r)
		}
	}
	hold(histA, 5*time.Millisecond, 1000)
	hold(histB, time.Second, 100)
	b.Adjust(ctx)
	if r, p99 := alone.Adjust(ctx); r != 120 || p99 > 10*time.Millisecond {
		t.Fatalf("its own fast holds alone: rate %v, p99 %v; want 120 under 10 ms", r, p99)
	}
	if r, p99 := a.Adjust(ctx); r != 60 || p99 < 500*time.Millisecond {
		t.Fatalf("with the other process's slow holds: rate %v, p99 %v; want 60 (halved), p99 over 500 ms", r, p99)
	}
	hold(histA, 5*time.Millisecond, 1000)
	b.Adjust(ctx)
	if r, p99 := a.Adjust(ctx); r != 90 || p99 > 10*time.Millisecond {
		t.Fatalf("the slow holds again: rate %v, p99 %v; want 90, under 10 ms (they counted in their own period)", r, p99)
	}
}
