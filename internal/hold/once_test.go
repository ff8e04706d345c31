package hold_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/hold"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestBestHoldIdempotent: one best-available request with a key, sent 20
// times at once through two processes, holds one block: every answer
// names the same 4 holds, one of them says it created them, and Postgres
// has no others. The key with another count is refused; a refused request
// frees its key. The box office's request for a customer is keyed the
// same way, the customer and the hold's end part of what the key names.
func TestBestHoldIdempotent(t *testing.T) {
	a := testenv.App(t, nil)
	b := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := onSale(t, a, tn, 3, nil)
	ctx := context.Background()
	u := buyer(tn.Buyers[0])
	answers := make([][]uuid.UUID, 20)
	created := make([]bool, 20)
	errs := make([]error, 20)
	var wg sync.WaitGroup
	for i := range answers {
		core := []*hold.Holds{a.Holds, b.Holds}[i%2]
		wg.Go(func() {
			res, err := core.Hold(ctx, u, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 4}, Key: "block-1", Source: hold.SourceAPI})
			errs[i], created[i] = err, res.Created
			for _, h := range res.Holds {
				answers[i] = append(answers[i], h.ID)
			}
		})
	}
	wg.Wait()
	made := 0
	for i := range answers {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if len(answers[i]) != 4 || !slices.Equal(answers[i], answers[0]) {
			t.Fatalf("request %d answered holds %v, the first %v", i, answers[i], answers[0])
		}
		if created[i] {
			made++
		}
	}
	if made != 1 {
		t.Fatalf("%d answers say they created the holds, want 1", made)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 4 {
		t.Fatalf("%d holds written, want 4", n)
	}
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 2}, Key: "block-1",
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
		t.Errorf("same key, another count: %v, want idempotency_mismatch", err)
	}
	// Refused: nothing held, the key is free again.
	if _, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 4, Section: "Z"}, Key: "block-2",
		Source: hold.SourceAPI}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("an unknown section: %v, want invalid", err)
	}
	res, err := b.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 2}, Key: "block-2", Source: hold.SourceAPI})
	if err != nil || !res.Created || len(res.Holds) != 2 {
		t.Fatalf("the freed key again: %+v, %v", res, err)
	}
	// Without a key, each request holds.
	for range 2 {
		if res, err := a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 2}, Key: "",
			Source: hold.SourceAPI}); err != nil || !res.Created {
			t.Fatalf("no key: %+v, %v", res, err)
		}
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 10 {
		t.Fatalf("%d holds written, want 10", n)
	}

	box := staff(tn.BoxOffice)
	until := time.Now().Add(48 * time.Hour).Truncate(time.Millisecond)
	first, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 3}, Customer: &customer, Until: until, Key: "for-1"})
	if err != nil || !first.Created || len(first.Holds) != 3 {
		t.Fatalf("for a customer: %+v, %v", first, err)
	}
	again, err := b.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 3}, Customer: &customer, Until: until, Key: "for-1"})
	if err != nil || again.Created || !slices.EqualFunc(again.Holds, first.Holds, func(x, y store.Hold) bool { return x.ID == y.ID }) {
		t.Fatalf("for a customer, again: %+v, %v; want the first request's holds", again, err)
	}
	if _, err := a.Holds.Hold(ctx, box, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 3}, Customer: &customer,
		Until: until.Add(time.Hour), Key: "for-1"}); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
		t.Errorf("same key, another end: %v, want idempotency_mismatch", err)
	}
	if n := count(t, a, `SELECT count(*) FROM seat_holds WHERE event_id = $1`, ev.ID); n != 13 {
		t.Fatalf("%d holds written, want 13", n)
	}
}

// TestKeyedRequestCutOff: a keyed request whose caller goes away at any
// moment (here: its context cancelled after 0 to 3 ms, 60 times) never
// leaves its key claimed with nothing done, which would make every repeat
// wait and then hear "still being processed" until the claim goes stale:
// once it returns, the key is free or its holds carry its request id.
func TestKeyedRequestCutOff(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ev := onSale(t, a, tn, 10, nil)
	u := buyer(tn.Buyers[0])
	for i := range 60 {
		ctx, cancel := context.WithCancel(context.Background())
		timer := time.AfterFunc(time.Duration(i%30)*100*time.Microsecond, cancel)
		key := fmt.Sprintf("cut-%d", i)
		_, _ = a.Holds.Hold(ctx, u, hold.Request{Event: ev.ID, Best: &hold.Best{Count: 1}, Key: key, Source: hold.SourceAPI})
		timer.Stop()
		cancel()
		var stranded bool
		if err := a.Pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM hold_requests h
			WHERE user_id = $1 AND idempotency_key = $2 AND hold_ids IS NULL
			  AND NOT EXISTS (SELECT 1 FROM seat_holds x WHERE x.org_id = h.org_id AND x.request_id = h.request_id))`,
			u.User, key).Scan(&stranded); err != nil {
			t.Fatal(err)
		}
		if stranded {
			t.Fatalf("request %d, cut off after %v: its key is left claimed with nothing done", i, time.Duration(i%30)*100*time.Microsecond)
		}
	}
}
