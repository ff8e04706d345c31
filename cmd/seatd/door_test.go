package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"seatd/internal/testenv"
)

// TestUserAddDoor: `seatd user add -role door` makes door staff, who sign
// in with that role.
func TestUserAddDoor(t *testing.T) {
	a := testenv.App(t, nil)
	tn := testenv.NewTenant(t, a, 0)
	var out bytes.Buffer
	email := "gate@" + tn.Org.Slug + ".example"
	err := run(context.Background(), []string{"user", "add", "-org", tn.Org.Slug, "-email", email, "-role", "door"},
		getenvOf(t, map[string]string{"SEATD_ENV": "test"}), strings.NewReader(testenv.Password+"\n"), &out, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("user add: %v (%s)", err, out.String())
	}
	_, u, err := a.Accounts.Authenticate(context.Background(), tn.Org.Slug, email, testenv.Password)
	if err != nil || u.Role != "door" {
		t.Fatalf("door user: %+v, %v", u, err)
	}
}
