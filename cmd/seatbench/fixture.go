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
	"golang.org/x/crypto/bcrypt"
)

// benchPassword is every bench account's password.
const benchPassword = "seatbench-password"

// fixture is what every phase shares: one organization, its organizer and
// buyers, all signed in. Sessions live in Postgres, so a cookie works on
// every seatd process of the run.
type fixture struct {
	slug      string
	orgID     string
	organizer *session
	buyers    []*session
}

// createFixture makes the organization and organizer with the seatd CLI
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
func (b *bench) createFixture(ctx context.Context, main *server) (*fixture, error) {
	fx := &fixture{slug: "bench"}
	if !b.cfg.freshDB {
		fx.slug = fmt.Sprintf("bench-%d", time.Now().Unix())
	}
	email := "organizer@" + fx.slug + ".example"
	cmd := exec.CommandContext(ctx, b.seatdBin, "user", "add", "-org", fx.slug, "-email", email,
		"-role", "organizer", "-create-org", "Seatbench "+fx.slug)
	cmd.Env = b.serverEnv("127.0.0.1:0", nil)
	cmd.Stdin = strings.NewReader(benchPassword + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("seatd user add: %w: %s", err, out.String())
	}
	if err := b.db.QueryRow(ctx, `SELECT id::text FROM organizations WHERE slug = $1`, fx.slug).Scan(&fx.orgID); err != nil {
		return nil, err
	}

	n := b.cfg.buyersNeeded()
	start := time.Now()
	hash, err := bcrypt.GenerateFromPassword([]byte(benchPassword), bcrypt.MinCost)
	if err != nil {
		return nil, err
	}
	rows, err := b.db.Query(ctx, `
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
	b.log.printf("organization %s: organizer (CLI) + %d buyers (bulk insert), all signed in, in %s",
		fx.slug, n, time.Since(start).Round(10*time.Millisecond))
	return fx, nil
}

// genEvent creates an event of n seats with SQL generate_series: ten
// sections (fewer for small events), rows of 50. With mixed set, about a
// tenth of the seats are sold and a fortieth blocked (no holds: a held
// seat needs a hold row). It returns the event id and the seat ids in idx
// order.
func (b *bench) genEvent(ctx context.Context, name string, n int, mixed bool) (string, []string, error) {
	const perRow = 50
	sections := min(10, max(1, n/perRow))
	return b.genEventLayout(ctx, name, n, sections, sections, mixed)
}

// genEventLayout is genEvent with the number of sections chosen, laid out
// cols to a line (front to back), each line of sections behind the last.
func (b *bench) genEventLayout(ctx context.Context, name string, n, sections, cols int, mixed bool) (string, []string, error) {
	const perRow = 50
	perSection := (n + sections - 1) / sections
	depth := (perSection + perRow - 1) / perRow // rows of a section
	ev := uuid.NewString()
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return "", nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// On sale, as published events are (new events start as drafts,
	// which take no buyer's hold).
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, org_id, name, venue, starts_at, status)
		VALUES ($1, $2, $3, 'Seatbench Hall', now() + interval '30 days', 'on_sale')`, ev, b.fx.orgID, name); err != nil {
		return "", nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sections (org_id, event_id, label, name, position)
		SELECT $1, $2, 'S' || g, 'Section ' || g, g FROM generate_series(0, $3 - 1) g`,
		b.fx.orgID, ev, sections); err != nil {
		return "", nil, err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO seats (org_id, event_id, section_id, row_label, number, idx, x, y, status)
		SELECT $1, $2, sec.id, 'R' || ((i % $3) / $4), (i % $4) + 1, i,
		       (i % $4) + (sec.position % $7) * ($4 + 2), (i % $3) / $4 + (sec.position / $7) * ($8 + 2),
		       CASE WHEN $6 AND i % 10 = 3 THEN 'sold' WHEN $6 AND i % 40 = 7 THEN 'blocked' ELSE 'available' END
		FROM generate_series(0, $5 - 1) i
		JOIN sections sec ON sec.event_id = $2 AND sec.position = i / $3`,
		b.fx.orgID, ev, perSection, perRow, n, mixed, cols, depth); err != nil {
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
		if _, err := b.db.Exec(ctx, q); err != nil {
			return "", nil, err
		}
	}
	rows, err := b.db.Query(ctx, `SELECT id::text FROM seats WHERE org_id = $1 AND event_id = $2 ORDER BY idx`, b.fx.orgID, ev)
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
