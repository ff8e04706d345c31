package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/app"
	"seatd/internal/apperr"
	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestPruneHoldRequests claims three keys, ages two of them, and prunes
// with a limit of one, then again: the aged keys go one batch at a time,
// the fresh one stays, and a pruned key can be claimed anew.
func TestPruneHoldRequests(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 3)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	key := func(k string) store.HoldKey {
		return store.HoldKey{Org: tn.Org.ID, User: tn.Buyers[0].ID, Event: ev.ID, Key: k, Hash: "h", Request: store.NewID()}
	}
	for i, k := range []string{"old-1", "old-2", "new"} {
		hk := key(k)
		c, err := a.Store.Holds.ClaimRequest(ctx, hk, time.Minute)
		if err != nil || !c.Mine {
			t.Fatalf("claim %s: %+v %v", k, c, err)
		}
		holdFor(t, a, hk, seats[i])
	}
	if _, err := a.Pool.Exec(ctx, `UPDATE hold_requests SET claimed_at = now() - interval '25 hours'
		WHERE org_id = $1 AND idempotency_key LIKE 'old-%'`, tn.Org.ID); err != nil {
		t.Fatal(err)
	}
	left := func() int {
		var n int
		if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM hold_requests WHERE org_id = $1`, tn.Org.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := time.Now().Add(-24 * time.Hour)
	// Other tests' rows may be older too: prune until this org's are gone,
	// one at a time, and count only this org's.
	for i := 0; left() > 1; i++ {
		if i > 1000 {
			t.Fatalf("%d keys left after %d prunes", left(), i)
		}
		n, err := a.Store.Holds.PruneRequests(ctx, before, 1)
		if err != nil || n != 1 {
			t.Fatalf("prune: %d, %v; want 1", n, err)
		}
	}
	if left() != 1 {
		t.Fatalf("%d keys left, want the fresh one", left())
	}
	c, err := a.Store.Holds.ClaimRequest(ctx, key("old-1"), time.Minute)
	if err != nil || !c.Mine || c.Done {
		t.Fatalf("claim a pruned key: %+v %v; want a new claim", c, err)
	}
	c, err = a.Store.Holds.ClaimRequest(ctx, key("new"), time.Minute)
	if err != nil || c.Mine || !c.Done {
		t.Fatalf("claim the kept key: %+v %v; want its first request's holds", c, err)
	}
}

// holdFor holds seats for keyed request k through the hold statement, as
// the request's own holds are made, and returns the holds' ids.
func holdFor(t *testing.T, a *app.App, k store.HoldKey, seats ...uuid.UUID) []uuid.UUID {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := store.HoldParams{Org: k.Org, Event: k.Event, User: k.User, Now: now, HeldUntil: now.Add(time.Hour), Source: "api",
		Request: k.Request}
	var ids []uuid.UUID
	for _, st := range seats {
		ids = append(ids, store.NewID())
		p.Seats = append(p.Seats, store.HoldRequest{SeatID: st, HoldID: ids[len(ids)-1], Fence: 1})
	}
	out, err := a.Store.Holds.Create(context.Background(), p)
	if err != nil || len(out.Created) != len(seats) {
		t.Errorf("hold %v for %s: %+v %v", seats, k.Key, out, err)
	}
	return ids
}

// TestClaimHoldRequestsAtOnce claims 100 keys twice each, all at once
// (the claims share statements, a key's two claims often the same one):
// each key is claimed exactly once; once each claim's holds are made (at
// once, sharing hold statements), every key answers its own holds, in
// the order they were made, and a key asked with another request is
// refused.
func TestClaimHoldRequestsAtOnce(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 10, 21)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	const keys = 100
	key := func(i int, hash string) store.HoldKey {
		return store.HoldKey{Org: tn.Org.ID, User: tn.Buyers[i%2].ID, Event: ev.ID, Key: fmt.Sprintf("k%d", i), Hash: hash,
			Request: store.NewID()}
	}
	var mu sync.Mutex
	mine := make([]int, keys)
	won := make([]store.HoldKey, keys)
	var wg sync.WaitGroup
	for i := range 2 * keys {
		wg.Go(func() {
			k := key(i%keys, "h")
			c, err := a.Store.Holds.ClaimRequest(ctx, k, time.Minute)
			if err != nil || c.Done {
				t.Errorf("claim %d: %+v %v", i, c, err)
			}
			if c.Mine {
				mu.Lock()
				mine[i%keys]++
				won[i%keys] = k
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, n := range mine {
		if n != 1 {
			t.Fatalf("key %d claimed %d times, want once", i, n)
		}
	}
	ids := make([][]uuid.UUID, keys)
	for i := range keys {
		wg.Go(func() { ids[i] = holdFor(t, a, won[i], seats[2*i], seats[2*i+1]) })
	}
	wg.Wait()
	for i := range keys {
		wg.Go(func() {
			c, err := a.Store.Holds.ClaimRequest(ctx, key(i, "h"), time.Minute)
			if err != nil || c.Mine || !c.Done || !slices.Equal(c.HoldIDs, ids[i]) {
				t.Errorf("claim %d again: %+v %v; want done with %v", i, c, err, ids[i])
			}
		})
	}
	wg.Go(func() {
		if _, err := a.Store.Holds.ClaimRequest(ctx, key(7, "other"), time.Minute); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
			t.Errorf("key 7 with another request: %v; want idempotency_mismatch", err)
		}
	})
	wg.Wait()

	// A key claimed and without holds yet, asked 40 times at once, half with
	// its request and half with another (so that one statement often has
	// both): the first are told it is still running, the others refused.
	if c, err := a.Store.Holds.ClaimRequest(ctx, key(keys, "h"), time.Minute); err != nil || !c.Mine {
		t.Fatalf("claim: %+v %v", c, err)
	}
	for i := range 40 {
		hash := []string{"h", "other"}[i%2]
		wg.Go(func() {
			c, err := a.Store.Holds.ClaimRequest(ctx, key(keys, hash), time.Minute)
			switch {
			case hash == "h" && (err != nil || c.Mine || c.Done):
				t.Errorf("the same request again while the first runs: %+v %v; want still running", c, err)
			case hash == "other" && apperr.CodeOf(err) != apperr.IdempotencyMismatch:
				t.Errorf("another request under a running key: %+v %v; want idempotency_mismatch", c, err)
			}
		})
	}
	wg.Wait()
}

// TestKeyedRequestDoneWithItsHolds: a claim is done once holds carrying
// its request id commit, with no record after them, so a claim whose
// process died right after its holds committed is not taken over when it
// goes stale, nor freed by a drop; a stale claim without holds is taken
// over, and a drop frees only a claim still its own and without holds.
func TestKeyedRequestDoneWithItsHolds(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 1)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 4)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	key := func(k string) store.HoldKey {
		return store.HoldKey{Org: tn.Org.ID, User: tn.Buyers[0].ID, Event: ev.ID, Key: k, Hash: "h", Request: store.NewID()}
	}
	claim := func(k store.HoldKey) store.HoldClaim {
		t.Helper()
		c, err := a.Store.Holds.ClaimRequest(ctx, k, time.Minute)
		if err != nil {
			t.Fatalf("claim %s: %v", k.Key, err)
		}
		return c
	}
	age := func(k string) {
		t.Helper()
		if _, err := a.Pool.Exec(ctx, `UPDATE hold_requests SET claimed_at = now() - interval '1 hour'
			WHERE org_id = $1 AND idempotency_key = $2`, tn.Org.ID, k); err != nil {
			t.Fatal(err)
		}
	}

	held := key("held")
	if c := claim(held); !c.Mine {
		t.Fatalf("claim: %+v", c)
	}
	ids := holdFor(t, a, held, seats[0], seats[1])
	// The process dies here: nothing more is written for the request.
	age("held")
	if c := claim(key("held")); c.Mine || !c.Done || !slices.Equal(c.HoldIDs, ids) {
		t.Fatalf("a stale claim with holds, asked again: %+v; want done with %v", c, ids)
	}
	if err := a.Store.Holds.DropRequest(ctx, held); err != nil {
		t.Fatal(err)
	}
	if c := claim(key("held")); !c.Done || !slices.Equal(c.HoldIDs, ids) {
		t.Fatalf("after a drop of a claim with holds: %+v; want still done with %v", c, ids)
	}

	lost := key("lost")
	if c := claim(lost); !c.Mine {
		t.Fatalf("claim: %+v", c)
	}
	age("lost")
	again := key("lost")
	if c := claim(again); !c.Mine {
		t.Fatalf("a stale claim without holds, asked again: %+v; want taken over", c)
	}
	// The first request's drop comes late: the claim is the second's now.
	if err := a.Store.Holds.DropRequest(ctx, lost); err != nil {
		t.Fatal(err)
	}
	if c := claim(key("lost")); c.Mine || c.Done {
		t.Fatalf("after another request's drop: %+v; want still running", c)
	}
	if err := a.Store.Holds.DropRequest(ctx, again); err != nil {
		t.Fatal(err)
	}
	if c := claim(key("lost")); !c.Mine {
		t.Fatalf("after its own drop: %+v; want claimed anew", c)
	}
}
