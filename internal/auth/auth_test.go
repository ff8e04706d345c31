package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"seatd/internal/apperr"
	"seatd/internal/auth"
	"seatd/internal/config"
	"seatd/internal/testenv"
)

// TestHashingCap: with every hashing slot taken, a sign-in or sign-up is
// refused at once as unavailable (503) instead of queueing, and works
// again when a slot frees.
func TestHashingCap(t *testing.T) {
	a := testenv.App(t, func(c *config.Config) { c.MaxPasswordHashes = 2 })
	tn := testenv.NewTenant(t, a, 1)
	ctx := context.Background()
	release := a.Accounts.TakeHashSlots()
	start := time.Now()
	_, _, err := a.Accounts.Authenticate(ctx, tn.Org.Slug, tn.Buyers[0].Email, testenv.Password)
	if !errors.Is(err, auth.ErrBusy) || apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("sign-in with every slot taken: %v, want ErrBusy", err)
	}
	if _, err := a.Accounts.Create(ctx, tn.Org.ID, "new@x.example", testenv.Password, "buyer"); !errors.Is(err, auth.ErrBusy) {
		t.Fatalf("sign-up with every slot taken: %v, want ErrBusy", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("refusals took %v; they must not queue", took)
	}
	release()
	if _, _, err := a.Accounts.Authenticate(ctx, tn.Org.Slug, tn.Buyers[0].Email, testenv.Password); err != nil {
		t.Fatalf("sign-in after the slots freed: %v", err)
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
