package door_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/apperr"
	"seatd/internal/door"
)

// TestSync: two scanners, offline, both let one ticket in. Whichever syncs
// first, the earlier scan by scanned_at is the admission and the other is
// flagged; syncing again changes nothing. A cancelled ticket admitted
// offline is flagged too; forged and foreign codes are answered and not
// recorded; results come in the order of the scans; the counts follow.
func TestSync(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.buy(t, 4)
	twice, once, gone := b.Tickets[0], b.Tickets[1], b.Tickets[2]
	f.cancel(t, b, gone)
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	north := []door.Scan{{Code: f.code(t, twice), Entrance: "North", ScannedAt: base.Add(5 * time.Second)}}
	south := []door.Scan{
		{Code: f.code(t, once), Entrance: "South", ScannedAt: base.Add(9 * time.Second)},
		{Code: f.code(t, twice), Entrance: "South", ScannedAt: base.Add(1 * time.Second)},
		{Code: f.code(t, gone), Entrance: "South", ScannedAt: base.Add(2 * time.Second)},
		{Code: "not a code", Entrance: "South", ScannedAt: base},
	}

	// North syncs first: its scan is the admission, for now.
	rs, err := f.door.Sync(ctx, f.staff, f.ev.ID, north)
	if err != nil || len(rs) != 1 || rs[0].Outcome != door.Admitted || rs[0].Conflict || rs[0].Entrance != "North" {
		t.Fatalf("north: %+v, %v", rs, err)
	}
	// South's scan of the same ticket was earlier: it stands, North's is
	// flagged.
	for range 2 { // and once more, as a scanner that lost the answer would
		rs, err = f.door.Sync(ctx, f.staff, f.ev.ID, south)
		if err != nil || len(rs) != 4 {
			t.Fatalf("south: %+v, %v", rs, err)
		}
		if r := rs[0]; r.Outcome != door.Admitted || r.Conflict || r.Ticket != once.ID {
			t.Errorf("south, a ticket scanned once: %+v", r)
		}
		if r := rs[1]; r.Outcome != door.Admitted || !r.Conflict || r.Entrance != "South" || !r.At.Equal(south[1].ScannedAt) {
			t.Errorf("south, the ticket scanned twice: %+v, want admitted (earlier) and flagged", r)
		}
		if r := rs[2]; r.Outcome != door.Cancelled || !r.Conflict {
			t.Errorf("south, a cancelled ticket: %+v, want cancelled and flagged", r)
		}
		if r := rs[3]; r.Outcome != door.Forged {
			t.Errorf("south, not a code: %+v", r)
		}
	}
	// North syncs again: its scan is now the later one.
	rs, err = f.door.Sync(ctx, f.staff, f.ev.ID, north)
	if err != nil || rs[0].Outcome != door.AlreadyAdmitted || !rs[0].Conflict || rs[0].Entrance != "South" {
		t.Fatalf("north again: %+v, %v", rs, err)
	}
	// Online, the ticket is admitted at South.
	r, err := f.door.Admit(ctx, f.staff, f.ev.ID, f.code(t, twice), "West", time.Time{})
	if err != nil || r.Outcome != door.AlreadyAdmitted || r.Entrance != "South" {
		t.Fatalf("online after the sync: %+v, %v", r, err)
	}

	// Staff see the two flagged scans, oldest first.
	cs, err := f.door.Conflicts(ctx, actor(f.tn.Organizer), f.ev.ID)
	if err != nil || len(cs) != 2 {
		t.Fatalf("conflicts: %+v, %v", cs, err)
	}
	if c := cs[0]; c.Ticket != gone.ID || c.Reason != "cancelled" || c.Entrance != "South" || c.Admission != nil ||
		!strings.HasPrefix(c.ScannedBy, "door-") || c.Seat != "A-A-3" {
		t.Errorf("first conflict: %+v", c)
	}
	if c := cs[1]; c.Ticket != twice.ID || c.Reason != "duplicate" || c.Entrance != "North" || !c.ScannedAt.Equal(north[0].ScannedAt) ||
		c.Admission == nil || c.Admission.Entrance != "South" || !c.Admission.At.Equal(south[1].ScannedAt) {
		t.Errorf("second conflict: %+v", c)
	}
	if _, err := f.door.Conflicts(ctx, f.staff, f.ev.ID); !errors.Is(err, apperr.ErrForbidden) {
		t.Errorf("door staff see conflicts: %v", err)
	}
	n, err := f.door.Counts(ctx, f.staff, f.ev.ID)
	if err != nil || n.Admitted != 2 || n.Expected != 3 || n.Conflicts != 2 ||
		!slices.Equal(n.Entrances, []door.EntranceCount{{Name: "South", Admitted: 2}}) {
		t.Fatalf("counts: %+v, %v", n, err)
	}
	if rows := f.count(t, `SELECT count(*) FROM checkins WHERE org_id = $1 AND event_id = $2`); rows != 2 {
		t.Fatalf("%d check-ins", rows)
	}
}

// TestSyncRefusals: a sync is refused whole for an actor who may not
// scan, an event of another organization, too many scans, or an entrance
// that cannot be.
func TestSyncRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	scan := []door.Scan{{Code: "x", Entrance: "North", ScannedAt: time.Now()}}
	if _, err := f.door.Sync(ctx, actor(f.tn.Buyers[0]), f.ev.ID, scan); !errors.Is(err, apperr.ErrForbidden) {
		t.Errorf("a buyer: %v", err)
	}
	if _, err := f.door.Sync(ctx, f.staff, uuid.New(), scan); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("no such event: %v", err)
	}
	if _, err := f.door.Sync(ctx, f.staff, f.ev.ID, make([]door.Scan, 1001)); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("1001 scans: %v", err)
	}
	bad := []door.Scan{scan[0], {Code: "x", Entrance: strings.Repeat("x", 61)}}
	_, err := f.door.Sync(ctx, f.staff, f.ev.ID, bad)
	if e, ok := apperr.As(err); !ok || e.Code != apperr.Invalid || e.Fields["scans[1].entrance"] == "" {
		t.Errorf("a long entrance: %v", err)
	}
}

// TestCSV: checkins.csv has its header and one row per admission, and a
// cell a spreadsheet would run as a formula is escaped.
func TestCSV(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.sell(t, 2, "=HYPERLINK(\"http://evil.example\")")
	for i, ent := range []string{"@door", "Main"} {
		if _, err := f.door.Admit(ctx, f.staff, f.ev.ID, f.code(t, b.Tickets[i]), ent, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := f.door.WriteCSV(ctx, actor(f.tn.Organizer), f.ev.ID, &out); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !slices.Equal(rows[0], door.CSVColumns) {
		t.Fatalf("rows %q", rows)
	}
	col := func(name string) int { return slices.Index(door.CSVColumns, name) }
	for _, row := range rows[1:] {
		if row[col("holder_name")] != `'=HYPERLINK("http://evil.example")` {
			t.Errorf("holder %q is not escaped", row[col("holder_name")])
		}
		if row[col("booking_reference")] != b.Reference || row[col("scanned_by")] != "" && !strings.HasPrefix(row[col("scanned_by")], "door-") {
			t.Errorf("row %q", row)
		}
	}
	ents := []string{rows[1][col("entrance")], rows[2][col("entrance")]}
	slices.Sort(ents)
	if !slices.Equal(ents, []string{"'@door", "Main"}) {
		t.Errorf("entrances %q", ents)
	}
	if err := f.door.WriteCSV(ctx, f.staff, f.ev.ID, &out); !errors.Is(err, apperr.ErrForbidden) {
		t.Errorf("door staff export: %v", err)
	}
}
