package door_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/door"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/ticket"
)

// TestAdmit: a ticket is admitted once, with its seat and its customer's
// name; the same code again is already admitted, answered by the
// recent-scan cache and, once that is gone, by Postgres, naming when and
// where; forged, garbled, foreign codes and other actors are refused with
// the right class; the admission is audited once.
func TestAdmit(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.sell(t, 1, "Ada Lovelace")
	tk := b.Tickets[0]
	code := f.code(t, tk)
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)

	r, err := f.door.Admit(ctx, f.staff, f.ev.ID, code, " North ", at)
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcome != door.Admitted || r.Ticket != tk.ID || r.Seat == nil || r.Seat.ID != tk.SeatID || r.Seat.Label != "A-A-1" ||
		r.Holder != "Ada Lovelace" || r.Entrance != "North" || !r.At.Equal(at) || r.AdmittedAt.IsZero() || r.Cached {
		t.Fatalf("first scan: %+v", r)
	}

	again, err := f.door.Admit(ctx, f.staff, f.ev.ID, code, "North", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != door.AlreadyAdmitted || !again.Cached || again.Entrance != "North" || !again.At.Equal(at) {
		t.Fatalf("second scan: %+v, want already admitted at North from the cache", again)
	}
	if err := f.a.Redis.Del(ctx, f.a.Cfg.KeyPrefix+":{"+f.tn.Org.ID.String()+":"+f.ev.ID.String()+"}:scan:"+tk.ID.String()).Err(); err != nil {
		t.Fatal(err)
	}
	again, err = f.door.Admit(ctx, f.staff, f.ev.ID, code, "South", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Outcome != door.AlreadyAdmitted || again.Cached || again.Entrance != "North" || !again.At.Equal(at) || again.Seat.Label != "A-A-1" {
		t.Fatalf("scan after the cache: %+v, want already admitted at North from Postgres", again)
	}
	if n := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2`); n != 1 {
		t.Fatalf("%d check-ins", n)
	}
	if n := f.count(t, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND event_id = $2 AND action = 'ticket.checked_in'`); n != 1 {
		t.Fatalf("%d audit rows", n)
	}

	// A scanner whose clock runs ahead is recorded at the server's now.
	ahead := f.buy(t, 1).Tickets[0]
	r, err = f.door.Admit(ctx, f.staff, f.ev.ID, f.code(t, ahead), "", time.Now().Add(time.Hour))
	if err != nil || r.Outcome != door.Admitted || r.At.After(time.Now()) || r.Entrance != door.DefaultEntrance || r.Holder != "" {
		t.Fatalf("scan from the future: %+v, %v", r, err)
	}

	other := testenv.NewEvent(t, f.a, f.tn.Org.ID, 1, 1, 2)
	otherOrg := testenv.NewTenant(t, f.a, 0)
	otherOrgEvent := testenv.NewEvent(t, f.a, otherOrg.Org.ID, 1, 1, 2)
	foreign, err := f.keys.Code(ctx, ticket.Claims{Org: f.tn.Org.ID, Event: other.ID, Ticket: uuid.New(), Seat: uuid.New()})
	if err != nil {
		t.Fatal(err)
	}
	foreignOrg, err := f.keys.Code(ctx, ticket.Claims{Org: otherOrg.Org.ID, Event: otherOrgEvent.ID, Ticket: uuid.New(), Seat: uuid.New()})
	if err != nil {
		t.Fatal(err)
	}
	// One character of the signature changed for another base64url one.
	forged := []byte(code)
	if forged[len(forged)-10] == 'A' {
		forged[len(forged)-10] = 'B'
	} else {
		forged[len(forged)-10] = 'A'
	}
	buyer := actor(f.tn.Buyers[0])
	for _, tc := range []struct {
		name  string
		a     hold.Actor
		event uuid.UUID
		code  string
		ent   string
		want  error
	}{
		{"forged", f.staff, f.ev.ID, string(forged), "", ticket.ErrForged},
		{"garbled", f.staff, f.ev.ID, "hello", "", ticket.ErrMalformed},
		{"another event's ticket", f.staff, f.ev.ID, foreign, "", ticket.ErrOtherEvent},
		{"another organization's ticket", f.staff, f.ev.ID, foreignOrg, "", ticket.ErrOtherEvent},
		{"at another organization's event", actor(otherOrg.Organizer), f.ev.ID, code, "", apperr.ErrNotFound},
		{"a signed code of no ticket", f.staff, other.ID, foreign, "", apperr.ErrNotFound},
		{"a buyer", buyer, f.ev.ID, code, "", apperr.ErrForbidden},
		{"a bad entrance", f.staff, f.ev.ID, code, "a\x00b", apperr.ErrInvalid},
		{"a long entrance", f.staff, f.ev.ID, code, strings.Repeat("é", 61), apperr.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := f.door.Admit(ctx, tc.a, tc.event, tc.code, tc.ent, time.Time{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("%+v, %v; want %v", r, err, tc.want)
			}
		})
	}
	if n := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2`); n != 2 {
		t.Fatalf("%d check-ins after the refusals, want 2", n)
	}
}

// TestAdmitOnce: 1 000 scans of one ticket at once, from many goroutines
// in two processes (two doors, each on its own pool, Redis client and
// keys), admit it exactly once; every other scan is already admitted and
// names that one admission.
func TestAdmitOnce(t *testing.T) {
	t.Parallel()
	// The scans wait on the ticket's row below for as long as the other
	// door takes to reach it, on a loaded machine longer than a process's
	// lock timeout.
	patient := func(c *config.Config) { c.PGLockTimeout = time.Minute }
	f := newFixtureWith(t, patient)
	d2, _ := newDoor(t, testenv.App(t, patient))
	doors := []*door.Door{f.door, d2}
	tk := f.buy(t, 1).Tickets[0]
	code := f.code(t, tk)

	const scans = 1000
	results := make([]door.Result, scans)
	errs := make([]error, scans)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range scans {
		wg.Go(func() {
			<-start
			results[i], errs[i] = doors[i%2].Admit(context.Background(), f.staff, f.ev.ID, code, "gate "+string(rune('A'+i%4)), time.Time{})
		})
	}
	// The ticket's row is locked until both doors' first statements wait
	// on it, so the scans race in Postgres however the goroutines are
	// scheduled: none can be answered by the recent-scan cache before
	// the others have passed it.
	ctx := context.Background()
	lock, err := f.a.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.Rollback(ctx) }()
	var locker int
	if err := lock.QueryRow(ctx, `SELECT pg_backend_pid() FROM tickets WHERE org_id = $1 AND id = $2 FOR UPDATE`,
		f.tn.Org.ID, tk.ID).Scan(&locker); err != nil {
		t.Fatal(err)
	}
	close(start)
	testsvc.Eventually(t, 30*time.Second, "both doors' first scans waiting on the ticket's row", func() bool {
		var n int
		err := f.a.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, locker).Scan(&n)
		return err == nil && n >= 2
	})
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var admitted []door.Result
	postgres := 0 // scans the recent-scan cache did not answer
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("scan %d: %v", i, errs[i])
		}
		if r.Outcome == door.Admitted {
			admitted = append(admitted, r)
		}
		if !r.Cached {
			postgres++
		}
	}
	// The scans raced in Postgres, not only in the cache (hundreds do).
	if postgres < 2 {
		t.Fatalf("only %d scans went to Postgres", postgres)
	}
	if len(admitted) != 1 {
		t.Fatalf("%d scans admitted, want 1", len(admitted))
	}
	win := admitted[0]
	for i, r := range results {
		if r.Outcome == door.AlreadyAdmitted && (r.Entrance != win.Entrance || !r.At.Equal(win.At)) {
			t.Fatalf("scan %d: %+v names another admission than %+v", i, r, win)
		}
		if r.Outcome != door.Admitted && r.Outcome != door.AlreadyAdmitted {
			t.Fatalf("scan %d: %+v", i, r)
		}
	}
	if n := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2`); n != 1 {
		t.Fatalf("%d check-ins", n)
	}
	if n := f.count(t, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND event_id = $2 AND action = 'ticket.checked_in'`); n != 1 {
		t.Fatalf("%d audit rows", n)
	}
}

// TestCancelled: a cancelled ticket is refused at the door and is in the
// revoked list a scanner downloads, beside its event's public key; the
// other ticket of the booking is admitted and listed as admitted.
func TestCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.buy(t, 2)
	gone, kept := b.Tickets[0], b.Tickets[1]
	f.cancel(t, b, gone)

	r, err := f.door.Admit(ctx, f.staff, f.ev.ID, f.code(t, gone), "", time.Time{})
	if err != nil || r.Outcome != door.Cancelled || r.Ticket != gone.ID || !r.At.IsZero() {
		t.Fatalf("cancelled ticket: %+v, %v", r, err)
	}
	if r, err := f.door.Admit(ctx, f.staff, f.ev.ID, f.code(t, kept), "", time.Time{}); err != nil || r.Outcome != door.Admitted {
		t.Fatalf("live ticket: %+v, %v", r, err)
	}
	if n := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2`); n != 1 {
		t.Fatalf("%d check-ins", n)
	}

	k, err := f.door.Key(ctx, f.staff, f.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := f.keys.Public(ctx, f.tn.Org.ID, f.ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	if k.Org != f.tn.Org.ID || k.Event != f.ev.ID || len(k.PublicKey) != 43 || k.At.IsZero() {
		t.Fatalf("key: %+v", k)
	}
	if _, err := ticket.Verify(pub, k.Org, k.Event, f.code(t, kept)); err != nil {
		t.Fatalf("the downloaded key's event does not verify its codes: %v", err)
	}
	if len(k.Revoked) != 1 || k.Revoked[0] != gone.ID {
		t.Fatalf("revoked %v, want [%s]", k.Revoked, gone.ID)
	}
	if len(k.Admitted) != 1 || k.Admitted[0] != kept.ID {
		t.Fatalf("admitted %v, want [%s]", k.Admitted, kept.ID)
	}
	if len(k.Seats) != 1 || k.Seats[kept.SeatID] != "A-A-2" {
		t.Fatalf("seats %v, want the live ticket's seat", k.Seats)
	}
	if _, err := f.door.Key(ctx, actor(f.tn.Buyers[0]), f.ev.ID); !errors.Is(err, apperr.ErrForbidden) {
		t.Fatalf("a buyer's key download: %v", err)
	}
}

// TestAdmitTogether: scans that arrive at once share admission statements
// (fewer statements than scans), and each keeps its own outcome: every
// live ticket admitted exactly once however often it is scanned in the
// same instant, the repeats naming that admission, the cancelled ticket
// refused, the unknown one not found, and one audit row per admission.
// The door has no recent-scan cache, so every scan goes to Postgres.
func TestAdmitTogether(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	checkins := store.NewCheckins(f.a.Pool)
	d := door.New(checkins, f.keys, nil, door.Options{KeyPrefix: f.a.Cfg.KeyPrefix})
	var tickets []store.Ticket
	for range 4 {
		tickets = append(tickets, f.buy(t, 8).Tickets...)
	}
	b := f.buy(t, 1)
	gone := b.Tickets[0]
	f.cancel(t, b, gone)
	unknown, err := f.keys.Code(ctx, ticket.Claims{Org: f.tn.Org.ID, Event: f.ev.ID, Ticket: uuid.New(), Seat: tickets[0].SeatID})
	if err != nil {
		t.Fatal(err)
	}

	const each = 4 // scans of every ticket, all at once
	codes := []string{unknown, f.code(t, gone)}
	for _, tk := range tickets {
		codes = append(codes, f.code(t, tk))
	}
	type scan struct {
		r   door.Result
		err error
	}
	scans := make([]scan, each*len(codes))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range scans {
		wg.Go(func() {
			<-start
			r, err := d.Admit(ctx, f.staff, f.ev.ID, codes[i%len(codes)], "gate "+string(rune('A'+i/len(codes))), time.Time{})
			scans[i] = scan{r, err}
		})
	}
	close(start)
	wg.Wait()

	admitted := map[uuid.UUID]door.Result{}
	for i, s := range scans {
		switch c := i % len(codes); {
		case c == 0:
			if !errors.Is(s.err, apperr.ErrNotFound) {
				t.Fatalf("scan %d of an unknown ticket: %+v, %v", i, s.r, s.err)
			}
		case c == 1:
			if s.err != nil || s.r.Outcome != door.Cancelled || s.r.Ticket != gone.ID {
				t.Fatalf("scan %d of the cancelled ticket: %+v, %v", i, s.r, s.err)
			}
		case s.err != nil:
			t.Fatalf("scan %d: %v", i, s.err)
		case s.r.Ticket != tickets[c-2].ID:
			t.Fatalf("scan %d of ticket %s answered for %s", i, tickets[c-2].ID, s.r.Ticket)
		case s.r.Outcome == door.Admitted:
			if _, twice := admitted[s.r.Ticket]; twice {
				t.Fatalf("ticket %s admitted twice", s.r.Ticket)
			}
			admitted[s.r.Ticket] = s.r
		case s.r.Outcome != door.AlreadyAdmitted:
			t.Fatalf("scan %d: %+v", i, s.r)
		}
	}
	if len(admitted) != len(tickets) {
		t.Fatalf("%d of %d tickets admitted", len(admitted), len(tickets))
	}
	for i, s := range scans {
		if i%len(codes) < 2 || s.r.Outcome != door.AlreadyAdmitted {
			continue
		}
		if win := admitted[s.r.Ticket]; s.r.Entrance != win.Entrance || !s.r.At.Equal(win.At) {
			t.Fatalf("scan %d: %+v names another admission than %+v", i, s.r, win)
		}
	}
	statements, carried := checkins.BatchStats()
	if carried != int64(len(scans)) || statements >= carried {
		t.Fatalf("%d scans went in %d statements, want all %d in fewer", carried, statements, len(scans))
	}
	if n := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2`); n != len(tickets) {
		t.Fatalf("%d check-ins, want %d", n, len(tickets))
	}
	if n := f.count(t, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND event_id = $2 AND action = 'ticket.checked_in'`); n != len(tickets) {
		t.Fatalf("%d audit rows, want %d", n, len(tickets))
	}
}

// TestAdmitWhileCancelled: scans of a booking's tickets admitted together
// while the box office cancels the booking neither deadlock nor fail: the
// cancellation locks the tickets in the order the admission statement
// does. Each scan is admitted or refused as cancelled, and a ticket is
// admitted only if its admission committed before the cancellation.
func TestAdmitWhileCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	d := door.New(store.NewCheckins(f.a.Pool), f.keys, nil, door.Options{KeyPrefix: f.a.Cfg.KeyPrefix})
	for round := range 5 {
		b := f.sell(t, 6, "Round "+string(rune('A'+round)))
		codes := make([]string, len(b.Tickets))
		for i, tk := range b.Tickets {
			codes[i] = f.code(t, tk)
		}
		results := make([]door.Result, len(codes))
		errs := make([]error, len(codes))
		var cancelErr error
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				<-start
				results[i], errs[i] = d.Admit(ctx, f.staff, f.ev.ID, codes[i], "", time.Time{})
			})
		}
		wg.Go(func() {
			<-start
			_, cancelErr = f.a.BoxOffice.Cancel(ctx, actor(f.tn.BoxOffice), b.ID, nil, "refund")
		})
		close(start)
		wg.Wait()
		if cancelErr != nil {
			t.Fatalf("round %d: cancel: %v", round, cancelErr)
		}
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("round %d, scan %d: %v", round, i, errs[i])
			}
			if r.Outcome != door.Admitted && r.Outcome != door.Cancelled {
				t.Fatalf("round %d, scan %d: %+v", round, i, r)
			}
		}
	}
}
