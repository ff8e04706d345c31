package query

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/store"
)

// EncodeHoldCursor makes the cursor of a page of active holds opaque to
// clients: they hand it back, they do not build it.
func EncodeHoldCursor(c store.HoldCursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.HeldUntil.UTC().Format(time.RFC3339Nano) + "|" + c.ID.String()))
}

// DecodeHoldCursor reads a cursor of EncodeHoldCursor; "" is the start.
func DecodeHoldCursor(v string) (store.HoldCursor, error) {
	if v == "" {
		return store.HoldCursor{}, nil
	}
	bad := &apperr.Error{Code: apperr.Invalid, Message: "after must be the next cursor of a previous page",
		Fields: map[string]string{"after": "is not a cursor this server gave"}}
	if len(v) > 200 {
		return store.HoldCursor{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil {
		return store.HoldCursor{}, bad
	}
	at, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return store.HoldCursor{}, bad
	}
	t, err1 := time.Parse(time.RFC3339Nano, at)
	u, err2 := uuid.Parse(id)
	if err1 != nil || err2 != nil || u == uuid.Nil {
		return store.HoldCursor{}, bad
	}
	return store.HoldCursor{HeldUntil: t, ID: u}, nil
}
