package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"seatd/internal/apperr"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestUserDisableAndRoleCommands: `seatd user role` and `seatd user
// disable` change the account (the sockets side is
// TestSessionEndClosesSocketsEverywhere in package web, through the same
// auth functions).
func TestUserDisableAndRoleCommands(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 1)
	u := tn.Buyers[0]
	cfg := testsvc.Config(t)
	env := map[string]string{"DATABASE_URL": cfg.DatabaseURL, "REDIS_URL": cfg.RedisURL, "SEATD_ENV": "test", "SEATD_LOG_LEVEL": "warn"}
	seatd := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errs)
		return out.String(), err
	}
	ctx := context.Background()

	out, err := seatd("user", "role", "--org", tn.Org.Slug, "--email", u.Email, "--role", "box_office")
	if err != nil || !strings.Contains(out, "is now box_office") {
		t.Fatalf("user role: %q, %v", out, err)
	}
	if acct, err := a.Store.Accounts.AccountByEmail(ctx, tn.Org.ID, u.Email); err != nil || acct.Role != "box_office" {
		t.Fatalf("after user role: %+v, %v", acct, err)
	}
	out, err = seatd("user", "disable", "-org", tn.Org.Slug, "-email", strings.ToUpper(u.Email))
	if err != nil || !strings.Contains(out, "disabled "+u.Email) {
		t.Fatalf("user disable: %q, %v", out, err)
	}
	if _, _, err := a.Accounts.Authenticate(ctx, tn.Org.Slug, u.Email, testenv.Password); apperr.CodeOf(err) != apperr.Unauthorized {
		t.Fatalf("disabled user signed in: %v", err)
	}
	for _, args := range [][]string{
		{"user", "role", "-org", tn.Org.Slug, "-email", u.Email},                    // no role
		{"user", "role", "-org", tn.Org.Slug, "-email", u.Email, "-role", "admin"},  // unknown role
		{"user", "disable", "-org", "no-such-org", "-email", u.Email},               // unknown org
		{"user", "disable", "-org", tn.Org.Slug, "-email", "nobody@" + tn.Org.Slug}, // unknown user
	} {
		if _, err := seatd(args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
