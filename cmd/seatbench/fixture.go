package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/crypto/bcrypt"
)

// benchPassword is every bench account's password.
const benchPassword = "seatbench-password"

// fixture is what every phase shares: one organization, its organizer and
// buyers, all signed in, and the events generated in it for each
// measurement. Sessions live in Postgres, so a cookie works on every
// seatd process of the run.
type fixture struct {
	db        *pgxpool.Pool
	slug      string
	orgID     string
	organizer *session
	buyers    []*session
}

// newFixture makes the organization and organizer with the seatd CLI
// (the supported way to create staff), then the buyers with one bulk
// INSERT sharing a single bcrypt hash of cost 4, and signs everyone in
// through POST /login.
//
// Why not /o/{slug}/signup for buyers: signup hashes each password at
// bcrypt cost 11 (~100 ms of CPU each), so 1 000 buyers would spend more
// than a minute of both cores on account creation, which is not what the
// bench measures. A cost-4 hash is still a real bcrypt hash: login checks
// it through the normal path (cost is read from the hash), creates a real
// session row, and the hold path never sees passwords at all.
func newFixture(ctx context.Context, log *progress, db *pgxpool.Pool, p *procs, main *server, n int, freshDB bool) (*fixture, error) {
	fx := &fixture{db: db, slug: "bench"}
	if !freshDB {
		fx.slug = fmt.Sprintf("bench-%d", time.Now().Unix())
	}
	email := "organizer@" + fx.slug + ".example"
	cmd := exec.CommandContext(ctx, p.bin, "user", "add", "-org", fx.slug, "-email", email,
		"-role", "organizer", "-create-org", "Seatbench "+fx.slug)
	cmd.Env = p.env("127.0.0.1:0", nil)
	cmd.Stdin = strings.NewReader(benchPassword + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("seatd user add: %w: %s", err, out.String())
	}
	if err := db.QueryRow(ctx, `SELECT id::text FROM organizations WHERE slug = $1`, fx.slug).Scan(&fx.orgID); err != nil {
		return nil, err
	}

	start := time.Now()
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `
		INSERT INTO users (org_id, email, role, password_hash)
		SELECT $1, 'buyer' || g || '@' || $2 || '.example', 'buyer', $3 FROM generate_series(1, $4) g
		RETURNING email`, fx.orgID, fx.slug, string(hash), n)
	if err != nil {
		return nil, fmt.Errorf("insert buyers: %w", err)
	}
	var emails []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			rows.Close()
			return nil, err
		}
		emails = append(emails, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	fx.organizer, err = main.login(ctx, fx.slug, email, benchPassword)
	if err != nil {
		return nil, err
	}
	fx.buyers = make([]*session, len(emails))
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(emails) || ctx.Err() != nil {
					return
				}
				s, err := main.login(ctx, fx.slug, emails[i], benchPassword)
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				fx.buyers[i] = s
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	log.printf("organization %s: organizer (CLI) + %d buyers (bulk insert), all signed in, in %s",
		fx.slug, n, time.Since(start).Round(10*time.Millisecond))
	return fx, nil
}

// newEvent creates an event of n seats with SQL generate_series: ten
// sections (fewer for small events), rows of 50. With mixed set, about a
// tenth of the seats are sold and a fortieth blocked (no holds: a held
// seat needs a hold row). It returns the event id and the seat ids in idx
// order.
func (fx *fixture) newEvent(ctx context.Context, name string, n int, mixed bool) (string, []string, error) {
	const perRow = 50
	sections := min(10, max(1, n/perRow))
	return fx.newEventLayout(ctx, name, n, sections, sections, mixed)
}

// newEventLayout is newEvent with the number of sections chosen, laid out
// cols to a line (front to back), each line of sections behind the last.
func (fx *fixture) newEventLayout(ctx context.Context, name string, n, sections, cols int, mixed bool) (string, []string, error) {
	const perRow = 50
	perSection := (n + sections - 1) / sections
	depth := (perSection + perRow - 1) / perRow // rows of a section
	ev := uuid.NewString()
	tx, err := fx.db.Begin(ctx)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// On sale, as published events are (new events start as drafts,
	// which take no buyer's hold).
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, org_id, name, venue, starts_at, status)
		VALUES ($1, $2, $3, 'Seatbench Hall', now() + interval '30 days', 'on_sale')`, ev, fx.orgID, name); err != nil {
		return "", nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sections (org_id, event_id, label, name, position)
		SELECT $1, $2, 'S' || g, 'Section ' || g, g FROM generate_series(0, $3 - 1) g`,
		fx.orgID, ev, sections); err != nil {
		return "", nil, err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO seats (org_id, event_id, section_id, row_label, number, idx, x, y, status)
		SELECT $1, $2, sec.id, 'R' || ((i % $3) / $4), (i % $4) + 1, i,
		       (i % $4) + (sec.position % $7) * ($4 + 2), (i % $3) / $4 + (sec.position / $7) * ($8 + 2),
		       CASE WHEN $6 AND i % 10 = 3 THEN 'sold' WHEN $6 AND i % 40 = 7 THEN 'blocked' ELSE 'available' END
		FROM generate_series(0, $5 - 1) i
		JOIN sections sec ON sec.event_id = $2 AND sec.position = i / $3`,
		fx.orgID, ev, perSection, perRow, n, mixed, cols, depth); err != nil {
		return "", nil, fmt.Errorf("generate seats: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", nil, err
	}
	// Fresh statistics, so every run plans the hold statement alike; the
	// new rows vacuumed (visible to all, hint bits set), as pgbench does
	// before its runs, so autovacuum's pass over a bulk insert and the
	// first readers' hint-bit writes do not land in the measured window
	// that follows; and a checkpoint, so the WAL of the insert is not
	// flushed there either (it made a paced run's p95 jump tenfold, for
	// seatd and pgbench alike).
	for _, q := range []string{`VACUUM (ANALYZE) seats`, `CHECKPOINT`} {
		if _, err := fx.db.Exec(ctx, q); err != nil {
			return "", nil, err
		}
	}
	rows, err := fx.db.Query(ctx, `SELECT id::text FROM seats WHERE org_id = $1 AND event_id = $2 ORDER BY idx`, fx.orgID, ev)
	if err != nil {
		return "", nil, err
	}
	defer rows.Close()
	ids := make([]string, 0, n)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", nil, err
		}
		ids = append(ids, id)
	}
	return ev, ids, rows.Err()
}

// newGAEvent creates an on-sale event with no per-buyer cap to speak of:
// one GA section of n places (stored as place rows, as events made from a
// chart are) or, with ga false, one seated section of n seats in rows of 50.
func (fx *fixture) newGAEvent(ctx context.Context, n int, ga bool) (string, error) {
	ev, sec := uuid.NewString(), uuid.NewString()
	kind, label, capacity := "seated", "S", 0
	if ga {
		kind, label, capacity = "ga", "GA", n
	}
	tx, err := fx.db.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, org_id, name, venue, starts_at, status, max_holds_per_buyer)
		VALUES ($1, $2, $3, 'Seatbench Hall', now() + interval '30 days', 'on_sale', 1000000)`,
		ev, fx.orgID, "flash sale "+kind); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sections (id, org_id, event_id, label, name, position, kind, capacity)
		VALUES ($1, $2, $3, $4, $4, 0, $5, $6)`, sec, fx.orgID, ev, label, kind, capacity); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO seats (org_id, event_id, section_id, row_label, number, idx, x, y)
		SELECT $1, $2, $3, CASE WHEN $5 THEN 'GA' ELSE 'R' || (i / 50) END,
		       CASE WHEN $5 THEN i + 1 ELSE i % 50 + 1 END, i,
		       CASE WHEN $5 THEN 0 ELSE i % 50 END, CASE WHEN $5 THEN 0 ELSE i / 50 END
		FROM generate_series(0, $4 - 1) i`, fx.orgID, ev, sec, n, ga); err != nil {
		return "", fmt.Errorf("generate places: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", err
	}
	for _, q := range []string{`ANALYZE seats`, `CHECKPOINT`} {
		if _, err := fx.db.Exec(ctx, q); err != nil {
			return "", err
		}
	}
	return ev, nil
}

// seatIDs is an event's seat ids in idx order.
func (fx *fixture) seatIDs(ctx context.Context, event string) ([]string, error) {
	rows, err := fx.db.Query(ctx, `SELECT id::text FROM seats WHERE org_id = $1 AND event_id = $2 ORDER BY idx`, fx.orgID, event)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
