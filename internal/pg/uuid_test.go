package pg_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"seatd/internal/pg"
	"seatd/internal/testsvc"
)

// TestUUIDBinary: uuid.UUID goes to and from Postgres as its 16 bytes, not
// through its text form (uuid.UUID is a sql.Scanner, and pgx's check for
// one came before pgx-google-uuid's plans), and every shape seatd reads
// still round-trips: a value, a NULL into a pointer, an array, a
// NullUUID, and NULL into a value refused.
func TestUUIDBinary(t *testing.T) {
	ctx := context.Background()
	pool, err := pg.Open(ctx, testsvc.Config(t).DatabaseURL, pg.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	tm := conn.Conn().TypeMap()
	var u uuid.UUID
	if plan := fmt.Sprintf("%T", tm.PlanScan(pgtype.UUIDOID, pgtype.BinaryFormatCode, &u)); plan != "pg.scanUUID" {
		t.Errorf("a uuid is scanned with %s", plan)
	}
	if plan := fmt.Sprintf("%T", tm.PlanEncode(pgtype.UUIDOID, pgtype.BinaryFormatCode, u)); plan != "pg.encodeUUID" {
		t.Errorf("a uuid is sent with %s", plan)
	}

	a, b := uuid.New(), uuid.New()
	var (
		got     uuid.UUID
		none    *uuid.UUID
		some    *uuid.UUID
		list    []uuid.UUID
		null    uuid.NullUUID
		matches bool
	)
	if err := conn.QueryRow(ctx, `SELECT $1::uuid, NULL::uuid, $2::uuid, $3::uuid[], NULL::uuid, $1::uuid::text = $4`,
		a, b, []uuid.UUID{a, b}, a.String()).Scan(&got, &none, &some, &list, &null, &matches); err != nil {
		t.Fatal(err)
	}
	if got != a || none != nil || some == nil || *some != b || !slices.Equal(list, []uuid.UUID{a, b}) || null.Valid || !matches {
		t.Errorf("read back %v %v %v %v %v, text equal %v; sent %v %v", got, none, some, list, null, matches, a, b)
	}
	if err := conn.QueryRow(ctx, `SELECT NULL::uuid`).Scan(&got); err == nil {
		t.Error("NULL scanned into a uuid.UUID without an error")
	}
}
