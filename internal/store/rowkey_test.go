package store_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestRowKeyAgreesWithPostgres: the row lock key a process computes from
// its cache is the one Postgres computes from the seat row, for any row
// label a chart may have (non-ASCII letters included); otherwise the
// shared transaction would lock keys its check never finds, and decide
// every strict request a second time.
func TestRowKeyAgreesWithPostgres(t *testing.T) {
	t.Parallel()
	a := testenv.App(t, nil)
	ctx := context.Background()
	event, section := uuid.New(), uuid.New()
	for _, row := range []string{"A", "R12", "AA", "Ü", "Reihe 3", "行", "1", "z/y"} {
		var got int64
		if err := a.Pool.QueryRow(ctx, `SELECT `+store.RowKeyExpr+` FROM (SELECT $1::uuid AS event_id, $2::uuid AS section_id, $3::text AS row_label) s`,
			event, section, row).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := store.RowKey(event, section, row); got != want {
			t.Errorf("row %q: Postgres %d, Go %d", row, got, want)
		}
	}
	if store.RowKey(event, section, "A") == store.RowKey(event, section, "B") {
		t.Error("two rows share a key")
	}
}
