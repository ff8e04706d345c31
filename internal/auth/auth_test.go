package auth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/config"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestHashingCap: with every hashing slot taken, a sign-in waits in line
// and is served when a slot frees; one that waits too long, and one that
// finds the line full, are refused as unavailable (503) with Retry-After,
// the latter at once rather than queueing.
func TestHashingCap(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.MaxPasswordHashes = 2 })
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	signIn := func() error {
		_, _, err := a.Accounts.Authenticate(ctx, tn.Org.Slug, tn.Buyers[0].Email, testenv.Password)
		return err
	}

	// Served in turn.
	release := a.Accounts.TakeHashSlots()
	served := make(chan error, 1)
	go func() { served <- signIn() }()
	testsvc.Eventually(t, 5*time.Second, "a sign-in waiting in line", func() bool { return a.Accounts.Waiting() == 1 })
	release()
	if err := <-served; err != nil {
		t.Fatalf("a sign-in waiting when a slot freed: %v", err)
	}

	// Too long in line.
	release = a.Accounts.TakeHashSlots()
	defer func() { release() }()
	err := signIn()
	var ra interface{ RetryAfter() int }
	if !errors.Is(err, auth.ErrBusy) || apperr.CodeOf(err) != apperr.Unavailable || !errors.As(err, &ra) || ra.RetryAfter() < 1 {
		t.Fatalf("sign-in while no slot frees: %v, want ErrBusy with a Retry-After", err)
	}

	// The line full: 32 a slot wait; the next is refused at once,
	// sign-ups too.
	var wg sync.WaitGroup
	results := make(chan error, 64)
	for range 64 {
		wg.Go(func() { results <- signIn() })
	}
	testsvc.Eventually(t, 5*time.Second, "64 sign-ins in line", func() bool { return a.Accounts.Waiting() == 64 })
	start := time.Now()
	if err := signIn(); !errors.Is(err, auth.ErrBusy) {
		t.Fatalf("sign-in with the line full: %v, want ErrBusy", err)
	}
	if _, err := a.Accounts.Create(ctx, tn.Org.ID, "new@x.example", testenv.Password, "buyer"); !errors.Is(err, auth.ErrBusy) {
		t.Fatalf("sign-up with the line full: %v, want ErrBusy", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("refusals with the line full took %v; they must not queue", took)
	}
	release()
	release = func() {}
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Errorf("a sign-in in line when the slots freed: %v", err)
		}
	}
}

// TestDisabledCannotSignIn: a disabled account's right password is
// refused; a wrong one gets the usual answer.
func TestDisabledCannotSignIn(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	u := tn.Buyers[0]
	if _, err := a.Accounts.Disable(ctx, tn.Org.ID, u.Email); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Accounts.Authenticate(ctx, tn.Org.Slug, u.Email, testenv.Password); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Fatalf("disabled sign-in: %v, want unauthorized", err)
	}
	if ok, err := a.Accounts.Current(ctx, tn.Org.ID, u.ID, u.Role); err != nil || ok {
		t.Fatalf("disabled account current: %v %v", ok, err)
	}
}
