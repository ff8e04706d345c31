package waitroom

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

	"seatd/internal/testsvc"
)

// scriptCounter counts the runs of the line's place script and of the
// head script on a client.
type scriptCounter struct {
	mu           sync.Mutex
	places, head int
}

func (s *scriptCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *scriptCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (s *scriptCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && (cmd.Name() == "evalsha" || cmd.Name() == "eval") {
			body := fmt.Sprint(args[1])
			s.mu.Lock()
			switch body {
			case placeScript.Hash():
				s.places++
			case headScript.Hash():
				s.head++
			}
			s.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (s *scriptCounter) counts() (places, head int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.places, s.head
}

type fixedRooms []OpenRoom

func (r fixedRooms) OpenRooms(context.Context) ([]OpenRoom, error) { return r, nil }

// TestPlacesAnswerAsTheLine: a process that answered a visitor's place
// once answers it again from the line's head, without the place script,
// and its answers are the script's: before and after admissions, as
// another process (which asks the script) sees them. A visitor whose
// number has come, a line cleared and started again, a moved opening and
// a Redis that stopped answering all go to the script, which decides (and
// fails closed); polls waiting on a failed read of the head share it.
func TestPlacesAnswerAsTheLine(t *testing.T) {
	srv := testsvc.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 200 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	count := &scriptCounter{}
	rdb.AddHook(count)
	ctx := context.Background()
	l := NewLine(rdb, "seatd", 5*time.Minute)
	places := NewPlaces(l)
	now := time.Now()
	places.now = func() time.Time { return now }
	later := func() { now = now.Add(headEvery) }
	room := Room{Org: uuid.New(), Event: uuid.New(), OpensAt: time.Now().Add(-time.Second), RatePerMinute: 6000}
	const n = 40
	visitor := func(i int) string { return fmt.Sprintf("v%02d", i) }
	for i := range n {
		if p, err := places.Join(ctx, room, visitor(i)); err != nil || p.State != Waiting || p.Position != int64(i+1) {
			t.Fatalf("join %d: %+v, %v", i, p, err)
		}
	}
	// same checks every visitor's answer here against the script's.
	same := func(what string, scripted int) {
		t.Helper()
		p0, _ := count.counts()
		got := make([]Place, n)
		for i := range n {
			p, err := places.Place(ctx, room, visitor(i))
			if err != nil {
				t.Fatalf("%s: place of %d: %v", what, i, err)
			}
			got[i] = p
		}
		if p1, _ := count.counts(); p1-p0 != scripted {
			t.Fatalf("%s: %d place scripts for %d polls, want %d", what, p1-p0, n, scripted)
		}
		for i := range n {
			want, err := l.Place(ctx, room, visitor(i))
			if err != nil {
				t.Fatal(err)
			}
			g := got[i]
			if g.State != want.State || g.Position != want.Position || g.Ahead != want.Ahead || g.InLine != want.InLine ||
				g.AdmittedPerMinute != want.AdmittedPerMinute || g.ETA != want.ETA {
				t.Fatalf("%s: visitor %d answered %+v, the script %+v", what, i, g, want)
			}
		}
	}
	later()
	same("waiting", 0)
	if _, h := count.counts(); h != 1 {
		t.Fatalf("%d reads of the head for %d polls within %v, want 1", h, n, headEvery)
	}

	a := NewAdmitter(l, fixedRooms{{Room: room, SeatsLeft: -1}}, nil, slog.New(slog.NewTextHandler(os.Stderr, nil)), time.Second)
	admitted := 0
	for admitted < 10 {
		k, err := a.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		admitted += k
		time.Sleep(20 * time.Millisecond)
	}
	later()
	// The admitted go to the script (and are admitted there); the others
	// moved up by as many.
	same("after admissions", admitted)
	later()
	same("after admissions, again", admitted)

	// A moved opening: every place is asked again (and remembered anew).
	room.OpensAt = room.OpensAt.Add(-time.Second)
	later()
	same("opening moved", n)

	// Cleared and started again: the old numbers are not used.
	if err := l.Clear(ctx, room.Org, room.Event); err != nil {
		t.Fatal(err)
	}
	if _, err := places.Join(ctx, room, "newcomer"); err != nil {
		t.Fatal(err)
	}
	later()
	same("line cleared", n)
	for i := range n {
		if p, _ := places.Place(ctx, room, visitor(i)); p.State != NotInLine {
			t.Fatalf("visitor %d of the cleared line: %+v", i, p)
		}
	}

	// Redis not answering: no answer from a head older than headEvery.
	if _, err := places.Join(ctx, room, "late"); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 1000, "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	later()
	_, h0 := count.counts()
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if p, err := places.Place(ctx, room, "late"); err == nil {
				t.Errorf("Redis paused: answered %+v", p)
			}
		})
	}
	wg.Wait()
	// The polls that waited for the failed read share its failure: one
	// read, not one each in turn.
	if _, h1 := count.counts(); h1-h0 != 1 {
		t.Fatalf("%d reads of the head by 10 polls while Redis was paused, want 1", h1-h0)
	}
}
