package hold_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/rs/zerolog"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/hold"
	"seatd/internal/seatlock"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestRedisKilledDuringHolds kills the Redis server (SIGKILL) while buyers
// hold seats through two processes, then restarts it empty. Holds must
// keep succeeding through Postgres, never two on a seat, and afterwards
// Redis must agree with Postgres again.
func TestRedisKilledDuringHolds(t *testing.T) {
	r := testsvc.StartRedis(t)
	mod := func(c *config.Config) {
		onRedis(r, 300*time.Millisecond)(c)
		// Short, so locks of transactions that failed during the outage
		// stop counting as "in flight" soon after recovery.
		c.PGStatementTimeout = 2 * time.Second
	}
	a1 := testenv.App(t, mod)
	a2 := testenv.App(t, mod)
	testenv.Background(t, a1)
	testenv.Background(t, a2)
	tn := testenv.NewTenant(t, a1, 0)
	users := testenv.AddBuyers(t, a1, tn.Org.ID, 40)
	ev := testenv.NewEvent(t, a1, tn.Org.ID, 2, 5, 20)
	seats := testenv.SeatIDs(t, a1, tn.Org.ID, ev.ID)
	ctx := context.Background()
	org := staff(tn.Organizer)

	// Phases: 0 Redis up, 1 Redis dead, 2 Redis back.
	var phase atomic.Int32
	var ok [3]atomic.Int64
	var refused [3]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, u := range users {
		core := a1.Holds
		if i%2 == 1 {
			core = a2.Holds
		}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				p := phase.Load()
				res, err := core.Hold(ctx, buyer(u), hold.Request{Event: ev.ID,
					Seats: []uuid.UUID{seats[rand.IntN(len(seats))]}, Source: hold.SourceAPI})
				switch {
				case err == nil:
					ok[p].Add(1)
					if rand.IntN(3) > 0 {
						if _, err := core.Release(ctx, buyer(u), res.Holds[0].ID, ""); err != nil {
							t.Errorf("release in phase %d: %v", p, err)
						}
					}
				case errors.Is(err, apperr.ErrSeatTaken), errors.Is(err, apperr.ErrHoldLimit):
					refused[p].Add(1)
				default:
					t.Errorf("hold in phase %d: %v", p, err)
				}
				time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // a buyer's think time: spreads the requests
			}
		})
	}
	// Each phase lasts until the load was served in it: with Redis dead,
	// until both processes left the Redis fast path and went on holding.
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer halt()
	testsvc.Eventually(t, 10*time.Second, "50 holds granted with Redis up", func() bool { return ok[0].Load() >= 50 })
	r.Stop()
	phase.Store(1)
	testsvc.Eventually(t, 10*time.Second, "both processes off the Redis fast path", func() bool {
		return !a1.Engine.FastPath() && !a2.Engine.FastPath()
	})
	served := ok[1].Load()
	testsvc.Eventually(t, 10*time.Second, "50 more holds granted with Redis dead", func() bool { return ok[1].Load() >= served+50 })
	r.Start()
	phase.Store(2)
	testsvc.Eventually(t, 10*time.Second, "50 holds granted with Redis back", func() bool { return ok[2].Load() >= 50 })
	halt()

	for p, name := range []string{"redis up", "redis killed", "redis restarted"} {
		t.Logf("%-16s holds granted %4d, refused %4d", name, ok[p].Load(), refused[p].Load())
	}
	if ok[1].Load() == 0 {
		t.Fatal("no hold succeeded while Redis was down")
	}
	if fb := testutil.ToFloat64(a1.Metrics.RedisFallback) + testutil.ToFloat64(a2.Metrics.RedisFallback); fb == 0 {
		t.Fatal("the Postgres fallback path was never used")
	}
	assertSeatInvariants(t, a1, ev.ID)

	deadline := time.Now().Add(20 * time.Second)
	if !testsvc.Poll(time.Until(deadline), func() bool { return a1.Engine.FastPath() && a2.Engine.FastPath() }) {
		t.Fatalf("fast path not back: %s / %s", a1.Engine.BreakerState(), a2.Engine.BreakerState())
	}
	// Both processes rebuilt; the registry must now agree in every tier.
	for i, a := range []*hold.Monitor{a1.Monitor, a2.Monitor} {
		var reg hold.Registry
		testsvc.Poll(time.Until(deadline), func() bool {
			var err error
			reg, err = a.RegistryStatus(ctx, org, ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			return reg.Consistent
		})
		if !reg.Consistent {
			t.Fatalf("process %d registry after recovery: %+v", i+1, reg)
		}
		t.Logf("process %d registry after recovery: hot %d, redis %d, postgres %d, consistent", i+1, reg.HotCache, reg.Redis, reg.Postgres)
	}
	// And the fast path really works again: a fresh hold goes through Redis.
	before := testutil.ToFloat64(a1.Metrics.HoldSuccess.WithLabelValues("fast"))
	var free uuid.UUID
	if err := a1.Pool.QueryRow(ctx, `SELECT id FROM seats WHERE event_id = $1 AND status = 'available' LIMIT 1`, ev.ID).Scan(&free); err != nil {
		t.Fatal(err)
	}
	fresh := testenv.AddBuyers(t, a1, tn.Org.ID, 1)[0]
	if _, err := a1.Holds.Hold(ctx, buyer(fresh), hold.Request{Event: ev.ID, Seats: []uuid.UUID{free}, Source: hold.SourceAPI}); err != nil {
		lk, ok, lerr := a1.Locks.Get(ctx, tn.Org.ID, ev.ID, free)
		var fence int64
		_ = a1.Pool.QueryRow(ctx, `SELECT fence FROM seats WHERE id = $1`, free).Scan(&fence)
		t.Fatalf("hold after recovery: %v (refused by hot %v, redis %v, postgres %v; redis lock %+v %v %v; seat fence %d)", err,
			testutil.ToFloat64(a1.Metrics.HoldConflict.WithLabelValues("hot")), testutil.ToFloat64(a1.Metrics.HoldConflict.WithLabelValues("redis")),
			testutil.ToFloat64(a1.Metrics.HoldConflict.WithLabelValues("postgres")), lk, ok, lerr, fence)
	}
	if testutil.ToFloat64(a1.Metrics.HoldSuccess.WithLabelValues("fast")) == before {
		t.Fatal("no hold went through the Redis fast path after recovery")
	}
}

// TestStaleLockHolderCannotWrite: a holder whose Redis lock vanished (TTL,
// flush) while it was slow must not get its late write into Postgres.
func TestStaleLockHolderCannotWrite(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	slow, fast := tn.Buyers[0], tn.Buyers[1]
	now := time.Now().Truncate(time.Millisecond)
	until := now.Add(time.Minute)

	// The event is loaded (and its Redis state synced); the slow holder
	// takes the Redis lock and stalls before writing.
	if _, _, err := a.Events.Seats(ctx, buyer(slow), ev.ID); err != nil {
		t.Fatal(err)
	}
	slowHold := uuid.New()
	acq, err := a.Locks.Acquire(ctx, tn.Org.ID, ev.ID, seatlock.AcquireRequest{User: slow.ID, Seats: seats[:1],
		HoldIDs: []uuid.UUID{slowHold}, Now: now, HeldUntil: until, MaxDelay: time.Minute})
	if err != nil || !acq.OK {
		t.Fatalf("acquire: %+v %v", acq, err)
	}
	slowFence := acq.Locks[0].Fence
	// Its lock disappears behind its back.
	if err := a.Redis.Del(ctx, a.Locks.Keys(tn.Org.ID, ev.ID).Seat(seats[0])).Err(); err != nil {
		t.Fatal(err)
	}
	// Another buyer holds the seat through the core (newer fence).
	res, err := a.Holds.Hold(ctx, buyer(fast), hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if res.Holds[0].Fence <= slowFence {
		t.Fatalf("fence did not advance: %d then %d", slowFence, res.Holds[0].Fence)
	}
	late := func() store.HoldOutcome {
		out, err := a.Store.Holds.Create(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: slow.ID,
			Seats: []store.HoldRequest{{SeatID: seats[0], HoldID: uuid.New(), Fence: slowFence}},
			Now:   time.Now(), HeldUntil: time.Now().Add(time.Minute), Source: "api"})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// The late write while the other hold is active: refused as taken.
	if out := late(); len(out.Created) != 0 || len(out.Taken) != 1 {
		t.Fatalf("late write during the other hold: %+v", out)
	}
	// The other buyer releases; the seat is free, but the late write
	// carries an old fence and must still be refused.
	if _, err := a.Holds.Release(ctx, buyer(fast), res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	if out := late(); len(out.Created) != 0 || len(out.Stale) != 1 {
		t.Fatalf("late write after release: %+v", out)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE user_id = $1`, slow.ID); n != 0 {
		t.Fatalf("stale holder wrote %d holds", n)
	}
	t.Logf("stale fence %d refused after fence %d was applied", slowFence, res.Holds[0].Fence)

	// A flushed fence counter (Redis lost everything) must not make the
	// core fail: it lifts the counter above what Postgres has seen.
	if err := a.Redis.Del(ctx, a.Locks.Keys(tn.Org.ID, ev.ID).Fence()).Err(); err != nil {
		t.Fatal(err)
	}
	other := testenv.App(t, nil) // a fresh process with a cold cache
	res2, err := other.Holds.Hold(ctx, buyer(slow), hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceAPI})
	if err != nil {
		t.Fatalf("hold after fence counter loss: %v", err)
	}
	if res2.Holds[0].Fence <= res.Holds[0].Fence {
		t.Fatalf("new fence %d not above %d", res2.Holds[0].Fence, res.Holds[0].Fence)
	}
	assertSeatInvariants(t, a, ev.ID)
}

// TestOrphanedLockIsCleared: a Redis lock whose hold never committed (its
// writer died) stops blocking the seat once it is older than any
// transaction could be: the refusal it causes hands it to the follower,
// which finds no such hold in Postgres and drops it. A fresh lock (in
// flight) is never dropped.
func TestOrphanedLockIsCleared(t *testing.T) {
	a := testenv.App(t, nil)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	if _, _, err := a.Events.Seats(ctx, buyer(tn.Buyers[0]), ev.ID); err != nil {
		t.Fatal(err)
	}
	// A lock acquired long ago by a writer that never reached Postgres,
	// and one acquired just now by a writer still on its way.
	clock := time.Now()
	old := clock.Add(-10 * time.Minute).Truncate(time.Millisecond)
	for _, c := range []struct {
		seat uuid.UUID
		at   time.Time
	}{{seats[1], old}, {seats[0], clock}} {
		acq, err := a.Locks.Acquire(ctx, tn.Org.ID, ev.ID, seatlock.AcquireRequest{User: tn.Buyers[0].ID,
			Seats: []uuid.UUID{c.seat}, HoldIDs: []uuid.UUID{uuid.New()}, Now: c.at, HeldUntil: clock.Add(time.Hour), MaxDelay: time.Hour})
		if err != nil || !acq.OK {
			t.Fatalf("acquire: %+v %v", acq, err)
		}
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: ev.ID, Seats: seats[1:2],
		Source: hold.SourceAPI}); !errors.Is(err, apperr.ErrSeatTaken) {
		t.Fatalf("hold over an orphaned lock: %v, want seat_taken until the follower checked it", err)
	}
	testsvc.Eventually(t, 5*time.Second, "the orphaned lock is dropped", func() bool {
		_, ok, err := a.Locks.Get(ctx, tn.Org.ID, ev.ID, seats[1])
		return err == nil && !ok
	})
	res, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: ev.ID, Seats: seats[1:2], Source: hold.SourceAPI})
	if err != nil {
		t.Fatalf("hold after the orphan was dropped: %v", err)
	}
	lk, ok, err := a.Locks.Get(ctx, tn.Org.ID, ev.ID, seats[1])
	if err != nil || !ok || lk.HoldID != res.Holds[0].ID {
		t.Fatalf("lock after takeover: %+v %v %v", lk, ok, err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(tn.Buyers[1]), hold.Request{Event: ev.ID, Seats: seats[:1],
		Source: hold.SourceAPI}); !errors.Is(err, apperr.ErrSeatTaken) {
		t.Fatalf("hold over a fresh lock: %v, want seat_taken", err)
	}
	if _, ok, _ := a.Locks.Get(ctx, tn.Org.ID, ev.ID, seats[0]); !ok {
		t.Fatal("a lock young enough to be in flight was dropped")
	}
}

// TestDeadWritersLockUnderLaterChangesIsCleared: a writer that took
// seats' Redis locks and died before its Postgres write leaves locks that
// no state of those seats will ever name. When the seats change in
// Postgres meanwhile (a hold made and ended through Postgres alone by a
// process cut off from Redis; a hold made and released before the
// follower's round), the follower's sync of those changes keeps each lock
// while it may still be in flight, and must check it once it cannot be:
// otherwise the lock refuses the free seat until its TTL, and the registry
// disagrees with Postgres.
func TestDeadWritersLockUnderLaterChangesIsCleared(t *testing.T) {
	// Locks stay in flight for 2 s (twice the statement timeout, plus one).
	a := testenv.App(t, func(c *config.Config) { c.PGStatementTimeout = 500 * time.Millisecond })
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	b0, b1 := tn.Buyers[0], tn.Buyers[1]
	if _, _, err := a.Events.Seats(ctx, buyer(b0), ev.ID); err != nil {
		t.Fatal(err)
	}
	// Seat 0 is held and released through the core.
	res, err := a.Holds.Hold(ctx, buyer(b0), hold.Request{Event: ev.ID, Seats: seats[:1], Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Release(ctx, buyer(b0), res.Holds[0].ID, ""); err != nil {
		t.Fatal(err)
	}
	// The writer that dies locks seats 0 and 1.
	now := time.Now()
	dead := []uuid.UUID{uuid.New(), uuid.New()}
	acq, err := a.Locks.Acquire(ctx, tn.Org.ID, ev.ID, seatlock.AcquireRequest{User: b1.ID, Seats: seats[:2],
		HoldIDs: dead, Now: now, HeldUntil: now.Add(time.Hour), MaxDelay: time.Minute})
	if err != nil || !acq.OK {
		t.Fatalf("acquire: %+v %v", acq, err)
	}
	// Seat 1 is held through Postgres alone, with a fence below the dead
	// writer's (the process knew no higher one), and released.
	out, err := a.Store.Holds.Create(ctx, store.HoldParams{Org: tn.Org.ID, Event: ev.ID, User: b0.ID,
		Seats: []store.HoldRequest{{SeatID: seats[1], HoldID: uuid.New(), Fence: 1}},
		Now:   time.Now(), HeldUntil: time.Now().Add(time.Minute), Source: "api", ShortWait: true})
	if err != nil || len(out.Created) != 1 || acq.Locks[1].Fence <= 1 {
		t.Fatalf("hold through postgres: %+v %v (dead writer's fence %d)", out, err, acq.Locks[1].Fence)
	}
	if _, err := a.Store.Holds.Release(ctx, tn.Org.ID, out.Created[0].ID, b0.ID, false, ""); err != nil {
		t.Fatal(err)
	}
	// The follower's rounds sync both seats' changes.
	testenv.Background(t, a)
	testsvc.Eventually(t, 10*time.Second, "the dead writer's locks are dropped", func() bool {
		for _, s := range seats[:2] {
			if _, ok, err := a.Locks.Get(ctx, tn.Org.ID, ev.ID, s); err != nil || ok {
				return false
			}
		}
		return true
	})
	if age := time.Since(now); age < 2*time.Second {
		t.Fatalf("locks dropped %s after they were taken, while they could still be in flight", age)
	}
	reg, err := a.Monitor.RegistryStatus(ctx, organizer(tn), ev.ID)
	if err != nil || !reg.Consistent {
		t.Fatalf("registry: %+v %v", reg, err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(b1), hold.Request{Event: ev.ID, Seats: seats[:2], Source: hold.SourceAPI}); err != nil {
		t.Fatalf("hold of the freed seats: %v", err)
	}
}

// TestReleaseWhileCutOffFromRedis: a process that releases a hold while it
// cannot reach Redis (Redis itself is fine, and keeps the lock) must drop
// that lock as soon as it reaches Redis again, before the fast path is
// back, or every buyer would be refused the free seat.
func TestReleaseWhileCutOffFromRedis(t *testing.T) {
	u, err := url.Parse(os.Getenv("REDIS_URL"))
	if err != nil || u.Host == "" {
		t.Fatalf("REDIS_URL %q: %v", os.Getenv("REDIS_URL"), err)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(srv, "redis", "127.0.0.1:0", u.Host)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	a := testenv.App(t, func(c *config.Config) {
		u := *u
		u.Host = proxy.Listen
		c.RedisURL = u.String()
		c.BreakerOpenFor = 300 * time.Millisecond
		c.RedisTimeout = 100 * time.Millisecond
		c.RedisDialTimeout = 100 * time.Millisecond
	})
	testenv.Background(t, a)
	direct := testenv.App(t, nil) // the same Redis, not through the proxy
	tn := testenv.NewTenant(t, a, 0)
	users := testenv.AddBuyers(t, a, tn.Org.ID, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	ctx := context.Background()
	lockKey := a.Locks.Keys(tn.Org.ID, ev.ID).Seat(seat)
	locked := func() bool {
		n, err := direct.Redis.Exists(ctx, lockKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	res, err := a.Holds.Hold(ctx, buyer(users[0]), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	if !locked() {
		t.Fatal("no redis lock after a fast-path hold")
	}
	proxy.Stop()
	if _, err := a.Holds.Release(ctx, buyer(users[0]), res.Holds[0].ID, ""); err != nil {
		t.Fatalf("release while cut off: %v", err)
	}
	if !locked() {
		t.Fatal("the lock vanished although Redis was never reached")
	}
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 10*time.Second, "fast path back", a.Engine.FastPath)
	if locked() {
		t.Fatal("the released hold's lock is still in redis after the fast path came back")
	}
	before := testutil.ToFloat64(a.Metrics.HoldSuccess.WithLabelValues("fast"))
	if _, err := a.Holds.Hold(ctx, buyer(users[1]), hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI}); err != nil {
		t.Fatalf("another buyer on the released seat: %v", err)
	}
	if testutil.ToFloat64(a.Metrics.HoldSuccess.WithLabelValues("fast")) == before {
		t.Fatal("the second hold did not go through the fast path")
	}
	reg, err := a.Monitor.RegistryStatus(ctx, staff(tn.Organizer), ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Consistent {
		t.Fatalf("registry: %+v", reg)
	}
}

// TestRepeatAfterLostLock: Redis loses a buyer's lock (a flush, or a hold
// made while Redis was out of reach) and the buyer clicks the seat again.
// The answer is their hold (200), and the lock the click just took — which
// names a hold that will never be written — must not stay: Redis ends up
// with the real hold's lock.
func TestRepeatAfterLostLock(t *testing.T) {
	a := testenv.App(t, nil)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seat := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0]
	ctx := context.Background()
	u := buyer(tn.Buyers[0])
	first, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	k := a.Locks.Keys(tn.Org.ID, ev.ID)
	if err := a.Redis.Del(ctx, k.Seat(seat)).Err(); err != nil {
		t.Fatal(err)
	}
	again, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Seats: []uuid.UUID{seat}, Source: hold.SourceAPI})
	if err != nil || again.Created || again.Holds[0].ID != first.Holds[0].ID {
		t.Fatalf("repeat: %+v %v, want hold %s again (200)", again, err, first.Holds[0].ID)
	}
	testsvc.Eventually(t, 3*time.Second, "redis names the real hold again", func() bool {
		lk, ok, err := a.Locks.Get(ctx, tn.Org.ID, ev.ID, seat)
		return err == nil && ok && lk.HoldID == first.Holds[0].ID
	})
	reg, err := a.Monitor.RegistryStatus(ctx, staff(tn.Organizer), ev.ID)
	if err != nil || !reg.Consistent {
		t.Fatalf("registry: %+v %v", reg, err)
	}
}

// TestHoldWhilePostgresRefuses: while Postgres refuses connections (down,
// or restarting), a hold fails, and since nothing reached Postgres its
// Redis locks go at once. Kept as locks of holds that might have committed,
// they would refuse every other buyer those seats until the follower could
// read Postgres again, after it is back.
func TestHoldWhilePostgresRefuses(t *testing.T) {
	u, err := url.Parse(os.Getenv("DATABASE_URL"))
	if err != nil || u.Host == "" {
		t.Fatalf("DATABASE_URL %q: %v", os.Getenv("DATABASE_URL"), err)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(srv, "postgres", "127.0.0.1:0", u.Host)
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Stop)
	a := testenv.App(t, func(c *config.Config) {
		u := *u
		u.Host = proxy.Listen
		c.DatabaseURL = u.String()
	})
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 0)
	users := testenv.AddBuyers(t, a, tn.Org.ID, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	if _, _, err := a.Events.Seats(ctx, buyer(users[0]), ev.ID); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "fast path", a.Engine.FastPath)

	proxy.Stop()
	testsvc.Eventually(t, 5*time.Second, "postgres refuses connections", func() bool {
		var ce *pgconn.ConnectError
		return errors.As(a.Store.Ping(ctx), &ce)
	})
	// One seat (a statement of its own or shared) and several (one
	// transaction).
	for _, ids := range [][]uuid.UUID{seats[:1], seats[1:3]} {
		if _, err := a.Holds.Hold(ctx, buyer(users[0]), hold.Request{Event: ev.ID, Seats: ids,
			Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.Internal {
			t.Fatalf("hold of %d seats while postgres refuses: %v, want an internal error", len(ids), err)
		}
		for _, id := range ids {
			if _, ok, err := a.Locks.Get(ctx, tn.Org.ID, ev.ID, id); err != nil || ok {
				t.Fatalf("redis lock of a hold that never reached postgres: present %v (%v)", ok, err)
			}
		}
	}

	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.Hold(ctx, buyer(users[1]), hold.Request{Event: ev.ID, Seats: seats[:3], Source: hold.SourceAPI}); err != nil {
		t.Fatalf("another buyer once postgres is back: %v", err)
	}
	assertSeatInvariants(t, a, ev.ID)
}

// TestIdleProcessNoticesRedisDown: a process with a synced event and no
// requests notices Redis going away by itself (its follower probes Redis
// when a round made no Redis call), so its next hold goes straight to
// the Postgres-only path instead of waiting on a dead Redis first.
func TestIdleProcessNoticesRedisDown(t *testing.T) {
	r := testsvc.StartRedis(t)
	a := testenv.App(t, onRedis(r, 200*time.Millisecond))
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 2, 10)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	if _, err := a.Holds.Hold(context.Background(), buyer(tn.Buyers[0]), hold.Request{Event: ev.ID, Seats: seats[:1],
		Source: hold.SourceAPI}); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "fast path", func() bool { return a.Engine.FastPath() })
	r.Stop()
	testsvc.Eventually(t, 5*time.Second, "the idle process off the fast path", func() bool { return !a.Engine.FastPath() })
}
