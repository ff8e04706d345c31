package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

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
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	key := func(k string) store.HoldKey {
		return store.HoldKey{Org: tn.Org.ID, User: tn.Buyers[0].ID, Event: ev.ID, Key: k, Hash: "h"}
	}
	for _, k := range []string{"old-1", "old-2", "new"} {
		c, err := a.Store.ClaimHoldRequest(ctx, key(k), time.Minute)
		if err != nil || !c.Mine {
			t.Fatalf("claim %s: %+v %v", k, c, err)
		}
		if err := a.Store.FinishHoldRequest(ctx, key(k), []uuid.UUID{uuid.New()}); err != nil {
			t.Fatal(err)
		}
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
		n, err := a.Store.PruneHoldRequests(ctx, before, 1)
		if err != nil || n != 1 {
			t.Fatalf("prune: %d, %v; want 1", n, err)
		}
	}
	if left() != 1 {
		t.Fatalf("%d keys left, want the fresh one", left())
	}
	c, err := a.Store.ClaimHoldRequest(ctx, key("old-1"), time.Minute)
	if err != nil || !c.Mine || c.Done {
		t.Fatalf("claim a pruned key: %+v %v; want a new claim", c, err)
	}
	c, err = a.Store.ClaimHoldRequest(ctx, key("new"), time.Minute)
	if err != nil || c.Mine || !c.Done {
		t.Fatalf("claim the kept key: %+v %v; want its first request's holds", c, err)
	}
}

// TestClaimHoldRequestsAtOnce claims 100 keys twice each, all at once
// (the claims share statements, a key's two claims often the same one):
// each key is claimed exactly once; finished at once, every key then
// answers its own holds, and a key asked with another request is refused.
func TestClaimHoldRequestsAtOnce(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	tn := testenv.NewTenant(t, a, 2)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	const keys = 100
	key := func(i int, hash string) store.HoldKey {
		return store.HoldKey{Org: tn.Org.ID, User: tn.Buyers[i%2].ID, Event: ev.ID, Key: fmt.Sprintf("k%d", i), Hash: hash}
	}
	var mu sync.Mutex
	mine := make([]int, keys)
	var wg sync.WaitGroup
	for i := range 2 * keys {
		wg.Go(func() {
			c, err := a.Store.ClaimHoldRequest(ctx, key(i%keys, "h"), time.Minute)
			if err != nil || c.Done {
				t.Errorf("claim %d: %+v %v", i, c, err)
			}
			if c.Mine {
				mu.Lock()
				mine[i%keys]++
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
		ids[i] = []uuid.UUID{uuid.New(), uuid.New()}
		wg.Go(func() {
			if err := a.Store.FinishHoldRequest(ctx, key(i, "h"), ids[i]); err != nil {
				t.Errorf("finish %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range keys {
		wg.Go(func() {
			c, err := a.Store.ClaimHoldRequest(ctx, key(i, "h"), time.Minute)
			if err != nil || c.Mine || !c.Done || !slices.Equal(c.HoldIDs, ids[i]) {
				t.Errorf("claim %d again: %+v %v; want done with %v", i, c, err, ids[i])
			}
		})
	}
	wg.Go(func() {
		if _, err := a.Store.ClaimHoldRequest(ctx, key(7, "other"), time.Minute); apperr.CodeOf(err) != apperr.IdempotencyMismatch {
			t.Errorf("key 7 with another request: %v; want idempotency_mismatch", err)
		}
	})
	wg.Wait()

	// A key claimed and not finished, asked 40 times at once, half with
	// its request and half with another (so that one statement often has
	// both): the first are told it is still running, the others refused.
	if c, err := a.Store.ClaimHoldRequest(ctx, key(keys, "h"), time.Minute); err != nil || !c.Mine {
		t.Fatalf("claim: %+v %v", c, err)
	}
	for i := range 40 {
		hash := []string{"h", "other"}[i%2]
		wg.Go(func() {
			c, err := a.Store.ClaimHoldRequest(ctx, key(keys, hash), time.Minute)
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
