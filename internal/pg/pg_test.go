package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestConnectionFailed: only failures of the connection empty the pool;
// a statement Postgres refused, or a caller giving up, do not.
func TestConnectionFailed(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"reset by peer", fmt.Errorf("create holds: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), true},
		{"server went away mid-reply", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"refused at dial", &pgconn.ConnectError{}, true},
		{"statement refused", &pgconn.PgError{Code: "23505"}, false},
		{"caller gave up", fmt.Errorf("x: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
		{"domain error", errors.New("hold is no longer active"), false},
		{"nil", nil, false},
	} {
		if got := ConnectionFailed(c.err); got != c.want {
			t.Errorf("%s: ConnectionFailed = %v, want %v", c.name, got, c.want)
		}
	}
}
