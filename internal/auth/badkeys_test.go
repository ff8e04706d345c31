package auth_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"seatd/internal/auth"
	"seatd/internal/testenv"
	"seatd/internal/testsvc"
)

// TestBadKeysNeverQueried: a bearer key that is not of our shape is
// refused without a Postgres query; a well-formed unknown key costs one
// query, and asked again within the negative cache's time, none.
func TestBadKeysNeverQueried(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	keys := auth.NewAPIKeys(a.Store.Accounts, nil, testsvc.Logger(t))
	ctx := context.Background()
	valid := auth.KeyPrefix + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	for _, garbage := range []string{"", auth.KeyPrefix, "seatd_x", "Bearer", strings.Repeat("a", 49),
		valid[:len(valid)-1] + "!", valid + "A", valid[:len(valid)-1], "sk_" + valid[3:], strings.Repeat(valid, 3)} {
		if _, err := keys.Authenticate(ctx, garbage); !errors.Is(err, auth.ErrBadKey) {
			t.Fatalf("%q: %v, want ErrBadKey", garbage, err)
		}
	}
	if n := keys.Lookups(); n != 0 {
		t.Fatalf("garbage keys cost %d queries, want none", n)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	unknown := auth.KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	for range 5 {
		if _, err := keys.Authenticate(ctx, unknown); !errors.Is(err, auth.ErrBadKey) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := keys.Lookups(); n != 1 {
		t.Fatalf("an unknown key asked 5 times cost %d queries, want 1", n)
	}
}
