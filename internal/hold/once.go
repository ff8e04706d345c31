package hold

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

// HoldGAOnce is HoldGA under the buyer's idempotency key (see once).
func (s *Service) HoldGAOnce(ctx context.Context, a Actor, event uuid.UUID, section string, count int, source, key string) (Result, error) {
	return s.once(ctx, a, event, key, fmt.Sprintf("ga %s %d %q", event, count, section), func(ctx context.Context) (Result, error) {
		return s.HoldGA(ctx, a, event, section, count, source)
	})
}

// HoldBestOnce is HoldBest under the buyer's idempotency key (see once).
func (s *Service) HoldBestOnce(ctx context.Context, a Actor, event uuid.UUID, b Best, source, key string) (Result, error) {
	return s.once(ctx, a, event, key, b.request(event), func(ctx context.Context) (Result, error) {
		return s.HoldBest(ctx, a, event, b, source)
	})
}

// HoldBestForOnce is HoldBestFor under the staff member's idempotency key
// (see once); the customer and the hold's end are part of the request.
func (s *Service) HoldBestForOnce(ctx context.Context, a Actor, event uuid.UUID, b Best, c store.Customer, until time.Time, key string) (Result, error) {
	what := fmt.Sprintf("%s for %q %q %q until %s", b.request(event), c.Name, c.Email, c.Note, until.UTC().Format(time.RFC3339Nano))
	return s.once(ctx, a, event, key, what, func(ctx context.Context) (Result, error) {
		return s.HoldBestFor(ctx, a, event, b, c, until)
	})
}

// request fingerprints a best-available request for its idempotency key.
func (b Best) request(event uuid.UUID) string {
	return fmt.Sprintf("best %s %d %q %q accessible=%t", event, b.Count, b.Category, b.Section, b.Accessible)
}

// once runs do, a hold whose seats the service picks (best available, GA
// places), at most once per key: repeating such a request would hold
// more, so with the same key a repeat answers the holds the first request
// made (Created false) and holds nothing more, whichever process it
// reaches and however many arrive at once. what fingerprints the request:
// the same key with another one is refused (idempotency_mismatch). The
// key is claimed in Postgres before do runs, with an id of this
// request's own that the holds do makes carry (requestOf), so the claim
// is done when they commit; a request that held nothing frees it, so the
// key may be used again. No key: do alone.
func (s *Service) once(ctx context.Context, a Actor, event uuid.UUID, key, what string, do func(context.Context) (Result, error)) (Result, error) {
	if key == "" {
		return do(ctx)
	}
	if _, err := s.event(ctx, a.Org, event); err != nil {
		return Result{}, err
	}
	k := store.HoldKey{Org: a.Org, User: a.User, Event: event, Key: key, Hash: what, Request: store.NewID()}
	deadline := s.now().Add(keyWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		// The claim does not follow the caller away: a claim cancelled
		// mid-statement may have committed all the same, and nothing would
		// then free it; made, it is freed below if the request holds nothing.
		claim, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
		c, err := s.store.Holds.ClaimRequest(claim, k, keyStale)
		cancel()
		switch {
		case err != nil:
			return Result{}, err
		case c.Mine:
			return s.onceClaimed(ctx, a, k, do)
		case c.Done:
			hs, err := s.store.Holds.ByIDs(ctx, a.Org, c.HoldIDs)
			return Result{Holds: hs}, err
		}
		if s.now().After(deadline) {
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
func (s *Service) onceClaimed(ctx context.Context, a Actor, k store.HoldKey, do func(context.Context) (Result, error)) (Result, error) {
	res, err := do(context.WithValue(ctx, requestKey{}, k.Request))
	if err != nil {
		// The caller going away must not leave the claim behind.
		if derr := s.store.Holds.DropRequest(context.WithoutCancel(ctx), k); derr != nil {
			s.log.Error("free idempotency key", "org", a.Org, "user", a.User, "err", derr)
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
