// Package pg connects to Postgres, applies the embedded migrations and
// classifies Postgres errors that the hold rules care about.
package pg

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"seatd/migrations"
)

// DBTX is satisfied by a pool, a connection and a transaction, so store
// methods run the same SQL inside or outside a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ DBTX = (*pgxpool.Pool)(nil)
	_ DBTX = (pgx.Tx)(nil)
)

// Options tunes a pool.
type Options struct {
	MaxConns         int
	LockTimeout      time.Duration
	StatementTimeout time.Duration
	AppName          string
}

// Open creates a pool. Lock and statement timeouts are set per connection
// so a hold can never queue behind a stuck row lock for long: the fallback
// path relies on failing fast rather than waiting.
func Open(ctx context.Context, url string, o Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = int32(min(o.MaxConns, 1000)) // #nosec G115 -- bounded above
	}
	rp := cfg.ConnConfig.RuntimeParams
	if o.LockTimeout > 0 {
		rp["lock_timeout"] = strconv.FormatInt(o.LockTimeout.Milliseconds(), 10)
	}
	if o.StatementTimeout > 0 {
		rp["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	}
	if o.AppName != "" {
		rp["application_name"] = o.AppName
	}
	rp["timezone"] = "UTC"
	// No JIT: seatd's statements are short, and a cost estimate that
	// overshoots (a range whose size the planner cannot know, such as the
	// change feed's) made Postgres spend 14 ms compiling a statement that
	// then ran in 0.03 ms.
	if _, set := rp["jit"]; !set {
		rp["jit"] = "off"
	}
	// uuid.UUID values otherwise go through database/sql's Valuer and
	// Scanner: a string per value, parsed again (RegisterUUID).
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		RegisterUUID(c.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping Postgres: %w", err)
	}
	return pool, nil
}

// Migrate applies every pending migration. Concurrent callers (several
// processes starting at once) are serialized by the migrator's advisory lock.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (from, to int32, err error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("acquire connection: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), "schema_version")
	if err != nil {
		return 0, 0, fmt.Errorf("migrator: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return 0, 0, fmt.Errorf("load migrations: %w", err)
	}
	from, err = m.GetCurrentVersion(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return from, 0, fmt.Errorf("migrate: %w", err)
	}
	to, err = m.GetCurrentVersion(ctx)
	return from, to, err
}

func code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// Refused reports that Postgres answered with an error, which rolls the
// statement (or transaction) back: nothing of it was written.
func Refused(err error) bool { return code(err) != "" }

// IsUniqueViolation reports a 23505: the row the caller wanted exists
// already (for a hold: the seat is taken; never retry).
func IsUniqueViolation(err error) bool { return code(err) == pgerrcode.UniqueViolation }

// IsUniqueViolationOf reports a 23505 of the named constraint or index.
func IsUniqueViolationOf(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.UniqueViolation && pgErr.ConstraintName == constraint
}

// IsForeignKeyViolation reports a 23503: a row refers to one that is
// gone, or a deleted row is still referred to.
func IsForeignKeyViolation(err error) bool { return code(err) == pgerrcode.ForeignKeyViolation }

// IsLockNotAvailable reports 55P03 (NOWAIT or lock_timeout): another
// transaction is working on the row right now.
func IsLockNotAvailable(err error) bool { return code(err) == pgerrcode.LockNotAvailable }

// IsDeadlock reports 40P01 (deadlock detected) or 40001 (serialization
// failure): the transaction rolled back and may simply run again.
func IsDeadlock(err error) bool {
	c := code(err)
	return c == pgerrcode.DeadlockDetected || c == pgerrcode.SerializationFailure
}

// IsStatementTimeout reports 57014: the statement ran past
// statement_timeout (or was cancelled).
func IsStatementTimeout(err error) bool { return code(err) == pgerrcode.QueryCanceled }

// IsHoldsNotAllWritten reports SD001, seatd's own (holds_all_written):
// a shared hold transaction's statement wrote fewer holds than it
// checked, so the transaction rolled back.
func IsHoldsNotAllWritten(err error) bool { return code(err) == "SD001" }

// IsCheckViolation reports a 23514 of the named constraint.
func IsCheckViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == pgerrcode.CheckViolation && pgErr.ConstraintName == constraint
}

// MaybeCommitted reports whether a write that returned err may have
// committed anyway: Postgres did not answer with an error (which rolls the
// statement or transaction back) and the request may have been sent (the
// connection broke, the reply was lost, the context ended mid-flight). A
// connection that could not be made sent nothing (Postgres down or
// restarting), though pgconn does not mark that error safe to retry.
func MaybeCommitted(err error) bool {
	var connErr *pgconn.ConnectError
	if err == nil || Refused(err) || errors.As(err, &connErr) {
		return false
	}
	return !pgconn.SafeToRetry(err)
}

// IsInvalidInput reports errors caused by malformed input values (bad uuid
// text, bad enum value, failed CHECK, foreign key to a missing row).
func IsInvalidInput(err error) bool {
	switch code(err) {
	case pgerrcode.InvalidTextRepresentation, pgerrcode.CheckViolation, pgerrcode.ForeignKeyViolation,
		pgerrcode.StringDataRightTruncationDataException, pgerrcode.CharacterNotInRepertoire,
		pgerrcode.UntranslatableCharacter:
		return true
	}
	return false
}
