package ticket_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/ticket"
)

func newKey(t testing.TB) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// flip changes one byte of a code's token and encodes it again.
func flip(t *testing.T, code string, i int) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(code)
	if err != nil {
		t.Fatal(err)
	}
	b[i] ^= 0x01
	return base64.RawURLEncoding.EncodeToString(b)
}

// TestSignVerify: a code verifies with its event's key, names its ticket
// and seat, is deterministic and of the documented length; a forged,
// truncated, garbled or foreign code is refused with the right error and
// class.
func TestSignVerify(t *testing.T) {
	t.Parallel()
	pub, priv := newKey(t)
	otherPub, otherPriv := newKey(t)
	c := ticket.Claims{Org: uuid.New(), Event: uuid.New(), Ticket: uuid.New(), Seat: uuid.New()}
	code := ticket.Sign(priv, c)
	if len(code) != ticket.CodeLen || ticket.CodeLen != 151 {
		t.Fatalf("code %q: length %d, CodeLen %d, want 151", code, len(code), ticket.CodeLen)
	}
	if again := ticket.Sign(priv, c); again != code {
		t.Fatalf("signing again gave another code: %q", again)
	}
	got, err := ticket.Verify(pub, c.Org, c.Event, code)
	if err != nil || got != c {
		t.Fatalf("verify: %+v, %v; want %+v", got, err, c)
	}
	// A scanner typing the code may add a newline.
	if _, err := ticket.Verify(pub, c.Org, c.Event, code+"\n"); err != nil {
		t.Fatalf("verify with a newline: %v", err)
	}
	parsed, err := ticket.Parse(code)
	if err != nil || parsed.Event != c.Event || parsed.Ticket != c.Ticket || parsed.Seat != c.Seat || parsed.Org != uuid.Nil {
		t.Fatalf("parse: %+v, %v", parsed, err)
	}

	otherEvent := c
	otherEvent.Event = uuid.New()
	otherOrg := c
	otherOrg.Org = uuid.New()
	for _, tc := range []struct {
		name       string
		key        ed25519.PublicKey
		org, event uuid.UUID
		code       string
		want       error
		class      apperr.Code
	}{
		{"flipped signature byte", pub, c.Org, c.Event, flip(t, code, 100), ticket.ErrForged, apperr.Invalid},
		{"flipped ticket byte", pub, c.Org, c.Event, flip(t, code, 20), ticket.ErrForged, apperr.Invalid},
		{"flipped seat byte", pub, c.Org, c.Event, flip(t, code, 40), ticket.ErrForged, apperr.Invalid},
		{"truncated", pub, c.Org, c.Event, code[:len(code)-1], ticket.ErrMalformed, apperr.Invalid},
		{"truncated by a byte", pub, c.Org, c.Event, code[:len(code)-2], ticket.ErrMalformed, apperr.Invalid},
		{"too long", pub, c.Org, c.Event, code + "A", ticket.ErrMalformed, apperr.Invalid},
		{"not base64url", pub, c.Org, c.Event, strings.Repeat("!", ticket.CodeLen), ticket.ErrMalformed, apperr.Invalid},
		{"other version", pub, c.Org, c.Event, flip(t, code, 0), ticket.ErrMalformed, apperr.Invalid},
		{"empty", pub, c.Org, c.Event, "", ticket.ErrMalformed, apperr.Invalid},
		{"signed with another event's key", pub, c.Org, c.Event, ticket.Sign(otherPriv, c), ticket.ErrForged, apperr.Invalid},
		{"checked with another event's key", otherPub, c.Org, c.Event, code, ticket.ErrForged, apperr.Invalid},
		{"of another event", pub, c.Org, c.Event, ticket.Sign(priv, otherEvent), ticket.ErrOtherEvent, apperr.NotFound},
		{"of another organization", pub, c.Org, c.Event, ticket.Sign(priv, otherOrg), ticket.ErrForged, apperr.Invalid},
		{"checked as another organization's", pub, otherOrg.Org, c.Event, code, ticket.ErrForged, apperr.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ticket.Verify(tc.key, tc.org, tc.event, tc.code)
			if !errors.Is(err, tc.want) {
				t.Fatalf("verify: %+v, %v; want %v", got, err, tc.want)
			}
			if apperr.CodeOf(err) != tc.class {
				t.Fatalf("class %s, want %s", apperr.CodeOf(err), tc.class)
			}
			if e, ok := apperr.As(err); !ok || e.Message != tc.want.Error() {
				t.Fatalf("apperr message %+v", e)
			}
			for _, other := range []error{ticket.ErrMalformed, ticket.ErrForged, ticket.ErrOtherEvent} {
				if other != tc.want && errors.Is(err, other) {
					t.Fatalf("%v is also %v", err, other)
				}
			}
		})
	}
}

// FuzzVerify: no input makes Parse or Verify panic, and nothing but the
// code itself verifies.
func FuzzVerify(f *testing.F) {
	pub, priv := newKey(f)
	c := ticket.Claims{Org: uuid.New(), Event: uuid.New(), Ticket: uuid.New(), Seat: uuid.New()}
	code := ticket.Sign(priv, c)
	f.Add(code)
	f.Add(code[:50])
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ticket.Parse(s)
		got, err := ticket.Verify(pub, c.Org, c.Event, s)
		if err == nil && (strings.TrimSpace(s) != code || got != c) {
			t.Fatalf("%q verified as %+v", s, got)
		}
	})
}
