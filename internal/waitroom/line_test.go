package waitroom_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"seatd/internal/waitroom"
)

// testRedis is the Redis of REDIS_URL (make test and scripts/services.sh
// start it); each test keeps its keys apart under a prefix of its own.
func testRedis(t *testing.T) (redis.UniversalClient, string) {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		t.Fatal(`REDIS_URL is not set: run the tests with make test, or eval "$(scripts/services.sh up test)" first`)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, "wrtest" + uuid.NewString()[:8]
}

func newRoom(opensAt time.Time, rate int) waitroom.Room {
	return waitroom.Room{Org: uuid.New(), Event: uuid.New(), OpensAt: opensAt, RatePerMinute: rate}
}

func join(t *testing.T, l *waitroom.Line, room waitroom.Room, visitor string) waitroom.Place {
	t.Helper()
	p, err := l.Join(context.Background(), room, visitor)
	if err != nil {
		t.Fatalf("join %s: %v", visitor, err)
	}
	return p
}

func place(t *testing.T, l *waitroom.Line, room waitroom.Room, visitor string) waitroom.Place {
	t.Helper()
	p, err := l.Place(context.Background(), room, visitor)
	if err != nil {
		t.Fatalf("place of %s: %v", visitor, err)
	}
	return p
}

// opened is room as it is once its opening has passed.
func opened(room waitroom.Room) waitroom.Room {
	room.OpensAt = time.Now().Add(-time.Second)
	return room
}

// TestQueueLottery: visitors who join before the opening get a place
// drawn at random — the places are a permutation of 1..n unrelated to the
// order of arrival, and over many draws the first to arrive is as likely
// to be at any place as any other — and no place is shown before the
// opening; those who come after the opening queue behind, in arrival
// order.
func TestQueueLottery(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := waitroom.NewLine(rdb, prefix, 5*time.Minute)
	room := newRoom(time.Now().Add(time.Hour), 60)

	const n = 200
	for i := range n {
		if p := join(t, l, room, fmt.Sprintf("v%03d", i)); p.State != waitroom.BeforeOpening || p.Position != 0 {
			t.Fatalf("before the opening: %+v", p)
		}
	}
	room = opened(room)
	seen := make([]bool, n+1)
	var d2 float64 // Spearman: sum of squared rank differences
	for i := range n {
		p := place(t, l, room, fmt.Sprintf("v%03d", i))
		if p.State != waitroom.Waiting || p.Position < 1 || p.Position > n || seen[p.Position] {
			t.Fatalf("visitor %d: %+v (not a permutation of 1..%d)", i, p, n)
		}
		if p.Ahead != p.Position-1 || p.InLine != n {
			t.Fatalf("visitor %d: %+v", i, p)
		}
		seen[p.Position] = true
		d := float64(p.Position - int64(i+1))
		d2 += d * d
	}
	// rho has a standard deviation of 1/sqrt(n-1) ≈ 0.07 for a random
	// order; arrival order would give 1.
	if rho := 1 - 6*d2/float64(n*(n*n-1)); rho > 0.35 || rho < -0.35 {
		t.Errorf("places follow arrival order: Spearman rho %.2f", rho)
	}

	for i := range 5 {
		p := join(t, l, room, fmt.Sprintf("late%d", i))
		if p.State != waitroom.Waiting || p.Position != int64(n+i+1) {
			t.Fatalf("late arrival %d: %+v, want place %d", i, p, n+i+1)
		}
	}

	// Uniformity: 4 visitors, 240 draws; the first arrival's place is
	// each of 1..4 about 60 times (chi-square, 3 degrees of freedom,
	// 16.27 at p = 0.001).
	counts := make([]int, 4)
	for range 240 {
		r := newRoom(time.Now().Add(time.Hour), 60)
		for v := range 4 {
			join(t, l, r, fmt.Sprint(v))
		}
		counts[place(t, l, opened(r), "0").Position-1]++
	}
	chi := 0.0
	for _, c := range counts {
		chi += float64((c-60)*(c-60)) / 60
	}
	if chi > 16.27 {
		t.Errorf("the first arrival's places %v are not uniform (chi-square %.1f)", counts, chi)
	}
}

// TestQueueOnePlacePerVisitor: ten tabs of one session joining at once
// hold one place, before and after the opening; a visitor admitted and
// joining again is told it is admitted, not put back in line.
func TestQueueOnePlacePerVisitor(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := waitroom.NewLine(rdb, prefix, 5*time.Minute)
	for _, before := range []bool{true, false} {
		room := newRoom(time.Now().Add(-time.Second), 6000)
		if before {
			room.OpensAt = time.Now().Add(time.Hour)
		}
		join(t, l, room, "first")
		var wg sync.WaitGroup
		places := make([]waitroom.Place, 10)
		for i := range places {
			wg.Go(func() { places[i] = join(t, l, room, "tabs") })
		}
		wg.Wait()
		room = opened(room)
		want := place(t, l, room, "tabs")
		if want.InLine != 2 {
			t.Fatalf("before=%v: %d in line after ten tabs and one other visitor, want 2", before, want.InLine)
		}
		if again := join(t, l, room, "tabs"); again.Position != want.Position {
			t.Fatalf("before=%v: joining again moved the place from %d to %d", before, want.Position, again.Position)
		}
	}

	room := newRoom(time.Now().Add(-time.Second), 6000)
	join(t, l, room, "v")
	a := waitroom.NewAdmitter(l, rooms{{Room: room, SeatsLeft: -1}}, nil, slog.Default(), time.Second)
	tickUntil(t, a, 1)
	if p := join(t, l, room, "v"); p.State != waitroom.Admitted {
		t.Fatalf("an admitted visitor joining again: %+v", p)
	}
	if p := place(t, l, room, "stranger"); p.State != waitroom.NotInLine {
		t.Fatalf("a visitor who never joined: %+v", p)
	}
}

// rooms is a Source of fixed rooms.
type rooms []waitroom.OpenRoom

func (r rooms) OpenRooms(context.Context) ([]waitroom.OpenRoom, error) { return r, nil }

// tickUntil ticks a until it has admitted want visitors in all.
func tickUntil(t *testing.T, a *waitroom.Admitter, want int) {
	t.Helper()
	got := 0
	deadline := time.Now().Add(10 * time.Second)
	for got < want {
		n, err := a.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got += n
		if time.Now().After(deadline) {
			t.Fatalf("admitted %d of %d", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestQueueAdmissionRate: at 600 a minute, ticking often, the admitter
// lets through what the rate allows over the time elapsed (within the
// bucket's burst), head of the line first; the measured rate and the ETA
// follow.
func TestQueueAdmissionRate(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := waitroom.NewLine(rdb, prefix, 5*time.Minute)
	room := newRoom(time.Now().Add(time.Hour), 600)
	for i := range 100 {
		join(t, l, room, fmt.Sprintf("v%03d", i))
	}
	room = opened(room)
	order := make([]string, 100)
	for i := range 100 {
		v := fmt.Sprintf("v%03d", i)
		order[place(t, l, room, v).Position-1] = v
	}
	a := waitroom.NewAdmitter(l, rooms{{Room: room, SeatsLeft: -1}}, nil, slog.Default(), time.Second)
	start := time.Now()
	admitted := 0
	for time.Since(start) < 2*time.Second {
		n, err := a.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		admitted += n
		time.Sleep(50 * time.Millisecond)
	}
	elapsed := time.Since(start).Seconds()
	// 10 a second; the bucket holds at most max(1, rate/30) = 20 more.
	if hi, lo := 10*elapsed+20, 10*elapsed-3; float64(admitted) > hi || float64(admitted) < lo {
		t.Fatalf("admitted %d in %.2fs at 600/min, want %.0f..%.0f", admitted, elapsed, lo, hi)
	}
	for i, v := range order {
		p := place(t, l, room, v)
		if (i < admitted) != (p.State == waitroom.Admitted) {
			t.Fatalf("place %d (%s) is %s after %d admissions: not head first", i+1, v, p.State, admitted)
		}
	}
	st, err := l.Stats(context.Background(), room)
	if err != nil {
		t.Fatal(err)
	}
	if st.Waiting != int64(100-admitted) || st.AdmittedPerMinute != int64(admitted) || st.Admitted != int64(admitted) || st.Rate != 600 {
		t.Fatalf("stats %+v after %d admitted", st, admitted)
	}
	p := place(t, l, room, order[99])
	if want := time.Duration(100-admitted) * time.Minute / time.Duration(admitted); p.ETA < want-time.Second || p.ETA > want+time.Second {
		t.Fatalf("ETA of the last: %v, want about %v (measured %d/min)", p.ETA, want, admitted)
	}
}

// TestQueueSeatsLeftCap: with 3 seats left, no more than 3 admissions
// count at once, whatever the rate.
func TestQueueSeatsLeftCap(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := waitroom.NewLine(rdb, prefix, 5*time.Minute)
	room := newRoom(time.Now().Add(-time.Second), 60000)
	for i := range 20 {
		join(t, l, room, fmt.Sprint(i))
	}
	a := waitroom.NewAdmitter(l, rooms{{Room: room, SeatsLeft: 3}}, nil, slog.Default(), time.Second)
	total := 0
	for range 10 {
		n, err := a.Tick(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		total += n
		time.Sleep(20 * time.Millisecond)
	}
	if total != 3 {
		t.Fatalf("admitted %d with 3 seats left", total)
	}
}

// TestQueueTwoAdmitters: two admitters (two processes) ticking at once on
// one line: one holds the lease and admits, the other admits nobody; no
// visitor is admitted twice and the rate holds for the two together.
// When the first stops, the second takes over within the lease and the
// line goes on where it was (the state is Redis's).
func TestQueueTwoAdmitters(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := waitroom.NewLine(rdb, prefix, 5*time.Minute)
	room := newRoom(time.Now().Add(-time.Second), 1200)
	for i := range 200 {
		join(t, l, room, fmt.Sprintf("v%03d", i))
	}
	src := rooms{{Room: room, SeatsLeft: -1}}
	every := 100 * time.Millisecond
	admitters := []*waitroom.Admitter{
		waitroom.NewAdmitter(l, src, nil, slog.Default(), every),
		waitroom.NewAdmitter(waitroom.NewLine(rdb, prefix, 5*time.Minute), src, nil, slog.Default(), every),
	}
	counts := make([]int, 2)
	run := func(which []int, d time.Duration) {
		var wg sync.WaitGroup
		for _, i := range which {
			wg.Go(func() {
				for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					n, err := admitters[i].Tick(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					counts[i] += n
				}
			})
		}
		wg.Wait()
	}
	start := time.Now()
	run([]int{0, 1}, 1500*time.Millisecond)
	if (counts[0] == 0) == (counts[1] == 0) {
		t.Fatalf("both or neither admitted: %v", counts)
	}
	leader := 0
	if counts[0] == 0 {
		leader = 1
	}
	// The leader stops; after its lease (3 ticks) the other takes over.
	before := counts[1-leader]
	run([]int{1 - leader}, 1500*time.Millisecond)
	if counts[1-leader] == before {
		t.Fatalf("the second admitter never took over: %v", counts)
	}
	elapsed := time.Since(start).Seconds()
	total := counts[0] + counts[1]
	if float64(total) > 20*elapsed+40 {
		t.Fatalf("admitted %d in %.1fs at 20/s", total, elapsed)
	}
	n, err := rdb.ZCard(context.Background(), prefix+":{"+room.Org.String()+":"+room.Event.String()+"}:wr:admitted").Result()
	if err != nil {
		t.Fatal(err)
	}
	if int(n) != total {
		t.Fatalf("%d admissions counted, %d visitors admitted: one was admitted twice", total, n)
	}
	st, _ := l.Stats(context.Background(), room)
	if st.Waiting+int64(total) != 200 {
		t.Fatalf("%d waiting + %d admitted != 200", st.Waiting, total)
	}
}

// TestQueueRestartKeepsPlaces: a new process (new Line, new Admitter)
// finds every visitor at the place they had.
func TestQueueRestartKeepsPlaces(t *testing.T) {
	rdb, prefix := testRedis(t)
	l := waitroom.NewLine(rdb, prefix, 5*time.Minute)
	room := newRoom(time.Now().Add(time.Hour), 600)
	for i := range 30 {
		join(t, l, room, fmt.Sprint(i))
	}
	room = opened(room)
	before := map[string]int64{}
	for i := range 30 {
		before[fmt.Sprint(i)] = place(t, l, room, fmt.Sprint(i)).Position
	}
	opt, _ := redis.ParseURL(os.Getenv("REDIS_URL"))
	other := redis.NewClient(opt)
	defer other.Close()
	l2 := waitroom.NewLine(other, prefix, 5*time.Minute)
	for v, pos := range before {
		if p := place(t, l2, room, v); p.Position != pos {
			t.Fatalf("%s: place %d after the restart, %d before", v, p.Position, pos)
		}
		if p := join(t, l2, room, v); p.Position != pos {
			t.Fatalf("%s joining again after the restart: place %d, had %d", v, p.Position, pos)
		}
	}
}
