package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// GAFlash is a flash sale of one general-admission section against the
// same buyers holding as many distinct seats, one place or seat a request.
type GAFlash struct {
	Places  int `json:"places"`
	Buyers  int `json:"buyers"`
	Granted int `json:"granted"` // 201s, one place each
	// Held is what Postgres holds at the end; must equal Places.
	Held     int     `json:"held_in_postgres"`
	Retries  int     `json:"retries"` // 409 seat_taken: picked places taken meanwhile
	SoldOut  int     `json:"sold_out"`
	Other    int     `json:"other"`
	WallMS   float64 `json:"wall_ms"`
	PerSec   float64 `json:"places_per_second"`
	Latency  Latency `json:"latency"`
	Seated   Latency `json:"seated_latency"`
	SeatedPS float64 `json:"seated_holds_per_second"`
}

// phaseGA: -ga-buyers buyers (default 200) hold the 10 000 places of one
// GA section, one place a request, asking again after a seat_taken
// (their picks were taken meanwhile) until sold_out; then the same buyers
// hold the 10 000 seats of a seated event, one seat each request, no two
// asking for the same seat. Places granted must be exactly 10 000.
func (b *bench) phaseGA(ctx context.Context) error {
	main, err := b.mainServer(ctx)
	if err != nil {
		return err
	}
	const places = 10_000
	n := min(b.cfg.gaBuyers, len(b.fx.buyers))
	ga, err := b.genGAEvent(ctx, places, true)
	if err != nil {
		return err
	}
	seated, err := b.genGAEvent(ctx, places, false)
	if err != nil {
		return err
	}
	if err := b.warmEvent(ctx, []*server{main}, ga); err != nil {
		return err
	}
	if err := b.warmEvent(ctx, []*server{main}, seated); err != nil {
		return err
	}
	g := &GAFlash{Places: places, Buyers: n}

	// The flash sale.
	var mu sync.Mutex
	var lats []float64
	var granted, retries, soldOut, other atomic.Int64
	body := []byte(`{"ga":{"section":"GA","count":1}}`)
	var wg sync.WaitGroup
	start := time.Now()
	for _, s := range b.fx.buyers[:n] {
		wg.Go(func() {
			var mine []float64
			defer func() { mu.Lock(); lats = append(lats, mine...); mu.Unlock() }()
			for ctx.Err() == nil {
				t0 := time.Now()
				code, resp, err := main.call(ctx, s, http.MethodPost, "/api/v1/events/"+ga+"/holds", body)
				mine = append(mine, ms(time.Since(t0)))
				switch {
				case err == nil && code == http.StatusCreated:
					granted.Add(1)
				case err == nil && code == http.StatusConflict && bytes.Contains(resp, []byte(`"sold_out"`)):
					soldOut.Add(1)
					return
				case err == nil && code == http.StatusConflict:
					retries.Add(1)
				default:
					other.Add(1)
					if other.Load() > 100 {
						return
					}
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	g.Granted, g.Retries, g.SoldOut, g.Other = int(granted.Load()), int(retries.Load()), int(soldOut.Load()), int(other.Load())
	g.WallMS, g.PerSec = round3(ms(wall)), round3(float64(g.Granted)/wall.Seconds())
	g.Latency = latencyOf(lats)
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM seats WHERE org_id = $1 AND event_id = $2 AND status = 'held'`, b.fx.orgID, ga).Scan(&g.Held); err != nil {
		return err
	}

	// The same buyers on distinct seats.
	ids, err := b.seatIDs(ctx, seated)
	if err != nil {
		return err
	}
	var next atomic.Int64
	lats = nil
	start = time.Now()
	for _, s := range b.fx.buyers[:n] {
		wg.Go(func() {
			var mine []float64
			defer func() { mu.Lock(); lats = append(lats, mine...); mu.Unlock() }()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				t0 := time.Now()
				_ = main.post(ctx, s, "/api/v1/events/"+seated+"/holds", holdBody(ids[i]))
				mine = append(mine, ms(time.Since(t0)))
			}
		})
	}
	wg.Wait()
	g.Seated, g.SeatedPS = latencyOf(lats), round3(float64(len(ids))/time.Since(start).Seconds())
	b.rep.GA = g
	b.log.printf("GA flash sale: %d/%d places granted (held in Postgres %d) by %d buyers in %.0f ms: %.0f places/s, p99 %.1f ms, %d retries, %d sold_out, %d other; seated: %.0f holds/s, p99 %.1f ms",
		g.Granted, places, g.Held, n, g.WallMS, g.PerSec, g.Latency.P99, g.Retries, g.SoldOut, g.Other, g.SeatedPS, g.Seated.P99)
	if g.Granted != places || g.Held != places {
		return fmt.Errorf("GA flash sale granted %d places, Postgres holds %d; want exactly %d", g.Granted, g.Held, places)
	}
	return nil
}

// genGAEvent creates an on-sale event with no per-buyer cap to speak of:
// one GA section of n places (stored as place rows, as events made from a
// chart are) or, with ga false, one seated section of n seats in rows of 50.
func (b *bench) genGAEvent(ctx context.Context, n int, ga bool) (string, error) {
	ev, sec := uuid.NewString(), uuid.NewString()
	kind, label, capacity := "seated", "S", 0
	if ga {
		kind, label, capacity = "ga", "GA", n
	}
	tx, err := b.db.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO events (id, org_id, name, venue, starts_at, status, max_holds_per_buyer)
		VALUES ($1, $2, $3, 'Seatbench Hall', now() + interval '30 days', 'on_sale', 1000000)`,
		ev, b.fx.orgID, "flash sale "+kind); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sections (id, org_id, event_id, label, name, position, kind, capacity)
		VALUES ($1, $2, $3, $4, $4, 0, $5, $6)`, sec, b.fx.orgID, ev, label, kind, capacity); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO seats (org_id, event_id, section_id, row_label, number, idx, x, y)
		SELECT $1, $2, $3, CASE WHEN $5 THEN 'GA' ELSE 'R' || (i / 50) END,
		       CASE WHEN $5 THEN i + 1 ELSE i % 50 + 1 END, i,
		       CASE WHEN $5 THEN 0 ELSE i % 50 END, CASE WHEN $5 THEN 0 ELSE i / 50 END
		FROM generate_series(0, $4 - 1) i`, b.fx.orgID, ev, sec, n, ga); err != nil {
		return "", fmt.Errorf("generate places: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return "", err
	}
	for _, q := range []string{`ANALYZE seats`, `CHECKPOINT`} {
		if _, err := b.db.Exec(ctx, q); err != nil {
			return "", err
		}
	}
	return ev, nil
}

func (b *bench) seatIDs(ctx context.Context, event string) ([]string, error) {
	rows, err := b.db.Query(ctx, `SELECT id::text FROM seats WHERE org_id = $1 AND event_id = $2 ORDER BY idx`, b.fx.orgID, event)
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
