package hold

// A keyed hold request runs at most once: its Idempotency-Key is claimed
// in Postgres before its seats are picked and held.

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// keyWait bounds how long a repeated keyed request waits for the first
// one to finish, and keyStale how old a claim without holds must be (its
// process died mid-request) before a repeat takes it over.
const (
	keyWait  = 10 * time.Second
	keyStale = 30 * time.Second
	// claimTimeout bounds one claim, which its caller cannot cancel.
	claimTimeout = 5 * time.Second
)

// fingerprint names what a keyed request asks for: the same key with
// another request is refused (idempotency_mismatch).
func (r Request) fingerprint() string {
	var what string
	if r.GA != nil {
		what = fmt.Sprintf("ga %s %d %q", r.Event, r.GA.Count, r.GA.Section)
	} else {
		what = fmt.Sprintf("best %s %d %q %q accessible=%t", r.Event, r.Best.Count, r.Best.Category, r.Best.Section, r.Accessible)
	}
	if c := r.Customer; c != nil {
		// The customer and the hold's end are part of the request.
		what += fmt.Sprintf(" for %q %q %q until %s", c.Name, c.Email, c.Note, r.Until.UTC().Format(time.RFC3339Nano))
	}
	return what
}

// once runs a hold whose seats the core picks (best available, GA
// places) at most once per key: repeating such a request would hold
// more, so with the same key a repeat answers the holds the first request
// made (Created false) and holds nothing more, whichever process it
// reaches and however many arrive at once. The key is claimed in Postgres
// before the hold runs, with an id of this request's own that the holds
// it makes carry (requestOf), so the claim is done when they commit; a
// request that held nothing frees it, so the key may be used again.
func (h *Holds) once(ctx context.Context, a Actor, r Request) (Result, error) {
	if _, err := h.e.event(ctx, a.Org, r.Event); err != nil {
		return Result{}, err
	}
	k := store.HoldKey{Org: a.Org, User: a.User, Event: r.Event, Key: r.Key, Hash: r.fingerprint(), Request: store.NewID()}
	deadline := h.e.now().Add(keyWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		// The claim does not follow the caller away: a claim cancelled
		// mid-statement may have committed all the same, and nothing would
		// then free it; made, it is freed below if the request holds nothing.
		claim, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		c, err := h.e.store.Holds.ClaimRequest(claim, k, keyStale)
		cancel()
		switch {
		case err != nil:
			return Result{}, err
		case c.Mine:
			return h.onceClaimed(ctx, a, k, r)
		case c.Done:
			hs, err := h.e.store.Holds.ByIDs(ctx, a.Org, c.HoldIDs)
			return Result{Holds: hs}, err
		}
		if h.e.now().After(deadline) {
			return Result{}, apperr.E(apperr.Conflict, "a request with this Idempotency-Key is still being processed; try again shortly")
		}
		select {
		case <-ctx.Done():
			return Result{}, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// onceClaimed runs a keyed request whose key it claimed, its holds
// carrying the request's id (which answers a repeat once they commit), or
// frees the key if it held nothing.
func (h *Holds) onceClaimed(ctx context.Context, a Actor, k store.HoldKey, r Request) (Result, error) {
	res, err := h.hold(context.WithValue(ctx, requestKey{}, k.Request), a, r)
	if err != nil {
		// The caller going away must not leave the claim behind.
		if derr := h.e.store.Holds.DropRequest(context.WithoutCancel(ctx), k); derr != nil {
			h.e.log.Error("free idempotency key", "org", a.Org, "user", a.User, "err", derr)
		}
	}
	return res, err
}

// requestKey is the context key of the keyed request a hold is made for.
type requestKey struct{}

// requestOf is the id of the keyed request ctx runs, or zero.
func requestOf(ctx context.Context) uuid.UUID {
	id, _ := ctx.Value(requestKey{}).(uuid.UUID)
	return id
}
