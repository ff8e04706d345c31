package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestMaybeCommitted: only a write that may have reached Postgres without
// its answer coming back has an unknown outcome. A connection refused
// (Postgres down or restarting) sent nothing: its holds were not made.
func TestMaybeCommitted(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nobody listens there now
	pool, err := pgxpool.New(ctx, "postgres://seatd@"+addr+"/seatd?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, refused := pool.Exec(ctx, "SELECT 1")
	if refused == nil {
		t.Fatalf("a query to %s succeeded", addr)
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused by a pool", fmt.Errorf("create holds: %w", refused), false},
		{"reset mid-statement", fmt.Errorf("create holds: %w", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}), true},
		{"server went away mid-reply", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"statement refused", &pgconn.PgError{Code: "23505"}, false},
		{"nil", nil, false},
	} {
		if got := MaybeCommitted(c.err); got != c.want {
			t.Errorf("%s: MaybeCommitted = %v, want %v (%v)", c.name, got, c.want, c.err)
		}
	}
}
