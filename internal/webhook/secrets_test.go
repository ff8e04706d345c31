package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
	"seatd/internal/webhook"
)

// TestSecretSealed: an endpoint's signing secret is stored sealed, never
// in the clear; a sealed secret copied to another endpoint's row does not
// open there, and that endpoint's deliveries are not sent (unsigned)
// rather than signed with anything else.
func TestSecretSealed(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 2)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	r := newReceiver(t)
	ep := r.register(t, a, tn.Org.ID)
	var plain *string
	var sealed []byte
	if err := a.Pool.QueryRow(ctx, `SELECT secret, sealed_secret FROM webhook_endpoints WHERE org_id = $1 AND id = $2`,
		tn.Org.ID, ep.ID).Scan(&plain, &sealed); err != nil {
		t.Fatal(err)
	}
	if plain != nil || len(sealed) == 0 || bytes.Contains(sealed, []byte(ep.Secret)) || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("stored: secret %v, sealed %x; created with %q", plain, sealed, ep.Secret)
	}
	if got, err := a.Store.Webhooks.Endpoint(ctx, tn.Org.ID, ep.ID); err != nil || got.Secret != "" {
		t.Fatalf("a read of the endpoint: %+v, %v; want no secret", got, err)
	}

	copied := newReceiver(t)
	other := copied.register(t, a, tn.Org.ID)
	t.Cleanup(func() { _ = a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, other.ID) })
	if _, err := a.Pool.Exec(ctx, `UPDATE webhook_endpoints SET sealed_secret = $3 WHERE org_id = $1 AND id = $2`,
		tn.Org.ID, other.ID, sealed); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[0], true, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "the delivery", func() bool { return len(r.received()) == 1 })
	var lastError string
	testsvc.Eventually(t, 5*time.Second, "the other endpoint's attempt", func() bool {
		ds, err := a.Store.Webhooks.Deliveries(ctx, tn.Org.ID, other.ID, 0, 1)
		if err == nil && len(ds) == 1 && ds[0].LastError != nil {
			lastError = *ds[0].LastError
		}
		return lastError != ""
	})
	copied.mu.Lock()
	hits := copied.hits
	copied.mu.Unlock()
	if hits != 0 || !strings.Contains(lastError, "signing secret") {
		t.Fatalf("a secret moved to another endpoint: %d requests sent, recorded %q", hits, lastError)
	}
}

// TestSecretRotation: after a rotation, deliveries carry two signatures,
// one under the new secret and one under the old, until the grace period
// ends; then only the new one. The grace is bounded, and another
// organization's endpoint is not found.
func TestSecretRotation(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, func(c *config.Config) {
		fastRetries(c)
		// Only this test's worker claims its deliveries: another test's
		// worker stopping mid-send gives one back unannounced, and this
		// worker would find it only at its backstop poll.
		c.DatabaseURL = testsvc.OwnDatabase(t, "webhook_secret_rotation")
	})
	testenv.Background(t, a)
	tn, stranger := testenv.NewTenant(t, a, 0), testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 3)
	seats := testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)
	ctx := context.Background()
	hooks := webhook.NewEndpoints(a.Store.Webhooks, true)
	r := newReceiver(t)
	ep := r.register(t, a, tn.Org.ID)
	old := ep.Secret

	rotated, err := hooks.RotateSecret(ctx, tn.Org.ID, ep.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Secret == old || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.PreviousUntil == nil ||
		time.Until(*rotated.PreviousUntil).Round(time.Minute) != time.Hour {
		t.Fatalf("rotated: %+v", rotated)
	}
	if got, err := a.Store.Webhooks.Endpoint(ctx, tn.Org.ID, ep.ID); err != nil || got.PreviousUntil == nil {
		t.Fatalf("during the grace: %+v, %v; want the end of the grace", got, err)
	}
	// The receiver still checks the old secret: the delivery passes; one
	// that checks only the new one passes as well.
	block := func(i int) {
		t.Helper()
		if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[i], true, ""); err != nil {
			t.Fatal(err)
		}
		testsvc.Eventually(t, 5*time.Second, "the delivery", func() bool { return len(r.received()) == i+1 })
	}
	block(0)
	r.mu.Lock()
	header, body := r.headers[0], r.raw[0]
	bad := r.bad
	r.mu.Unlock()
	if bad != nil || strings.Count(header, "v1=") != 2 || verify(old, header, body) != "" || verify(rotated.Secret, header, body) != "" {
		t.Fatalf("during the grace: header %q (failures %v), want a signature under each secret", header, bad)
	}

	// Time passes: the grace is over.
	if _, err := a.Pool.Exec(ctx, `UPDATE webhook_endpoints SET previous_secret_until = now() - interval '1 second'
		WHERE org_id = $1 AND id = $2`, tn.Org.ID, ep.ID); err != nil {
		t.Fatal(err)
	}
	r.secret.Store(rotated.Secret)
	block(1)
	r.mu.Lock()
	header, body, bad = r.headers[1], r.raw[1], r.bad
	r.mu.Unlock()
	if bad != nil || strings.Count(header, "v1=") != 1 || verify(old, header, body) == "" {
		t.Fatalf("after the grace: header %q (failures %v), want the new signature alone", header, bad)
	}
	// And the old secret no longer signs.
	r.secret.Store(old)
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, seats[2], true, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "a delivery refused by a receiver checking the old secret", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.bad) > 0
	})
	t.Cleanup(func() { _ = a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, ep.ID) })

	for _, g := range []time.Duration{-time.Second, 8 * 24 * time.Hour} {
		if _, err := hooks.RotateSecret(ctx, tn.Org.ID, ep.ID, g); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("grace %s: %v, want invalid", g, err)
		}
	}
	if _, err := hooks.RotateSecret(ctx, stranger.Org.ID, ep.ID, 0); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("another organization's endpoint: %v, want not found", err)
	}
	if _, err := hooks.RotateSecret(ctx, tn.Org.ID, uuid.New(), 0); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("no such endpoint: %v, want not found", err)
	}
}

// TestClearSecretsSealed: a secret stored in the clear before secrets
// were sealed is sealed by SealClearSecrets (app.Migrate runs it), once,
// and deliveries are still signed with it.
func TestClearSecretsSealed(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, fastRetries)
	testenv.Background(t, a)
	tn := testenv.NewTenant(t, a, 0)
	ev := testenv.NewEvent(t, a, tn.Org.ID, 1, 1, 1)
	ctx := context.Background()
	r := newReceiver(t)
	const legacy = "whsec_stored_in_the_clear"
	r.secret.Store(legacy)
	var id uuid.UUID
	if err := a.Pool.QueryRow(ctx, `INSERT INTO webhook_endpoints (org_id, url, events, secret) VALUES ($1, $2, $3, $4) RETURNING id`,
		tn.Org.ID, r.url(), webhook.Types, legacy).Scan(&id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Store.Webhooks.DeleteEndpoint(ctx, tn.Org.ID, id) })
	if n, err := a.Store.Webhooks.SealClearSecrets(ctx); err != nil || n < 1 {
		t.Fatalf("sealed %d (%v), want this one at least", n, err)
	}
	var plain *string
	var sealed []byte
	if err := a.Pool.QueryRow(ctx, `SELECT secret, sealed_secret FROM webhook_endpoints WHERE org_id = $1 AND id = $2`,
		tn.Org.ID, id).Scan(&plain, &sealed); err != nil || plain != nil || len(sealed) == 0 {
		t.Fatalf("after sealing: secret %v, sealed %x (%v)", plain, sealed, err)
	}
	if n, err := a.Store.Webhooks.SealClearSecrets(ctx); err != nil || n != 0 {
		t.Fatalf("again: sealed %d (%v), want none", n, err)
	}
	if _, err := a.Holds.SetBlocked(ctx, actor(tn.Organizer), ev.ID, testenv.SeatIDs(t, a, tn.Org.ID, ev.ID)[0], true, ""); err != nil {
		t.Fatal(err)
	}
	testsvc.Eventually(t, 5*time.Second, "the delivery signed with the old secret", func() bool { return len(r.received()) == 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad != nil {
		t.Fatalf("signature failures: %v", r.bad)
	}
}
