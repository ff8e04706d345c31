package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"seatd/internal/store"
)

// Occupancy is the occupancy of one big event: served by seatd (from its
// hot cache) and recomputed with the SQL aggregate.
type Occupancy struct {
	Seats      int     `json:"seats"`
	ColdLoadMS float64 `json:"first_request_ms"` // loads the event into the hot cache
	Served     Latency `json:"served"`
	// RecomputedFresh is the aggregate right after the seats were
	// written (hint bits and visibility map not set yet); Recomputed is
	// after VACUUM, the steady state autovacuum reaches.
	RecomputedFresh Latency `json:"recomputed_fresh"`
	Recomputed      Latency `json:"recomputed"`
	Consistent      bool    `json:"served_equals_recomputed"`
	OthersCPU       float64 `json:"others_cpu_share"` // share of the machine other processes used meanwhile
}

func (b *bench) phaseOccupancy(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	n := b.cfg.occSeats
	ev, _, err := b.fx.newEvent(ctx, "occupancy", n, true)
	if err != nil {
		return err
	}
	o := &Occupancy{Seats: n}
	path := "/api/v1/events/" + ev + "/occupancy"
	get := func() (time.Duration, []byte, error) {
		t0 := time.Now()
		code, body, err := main.call(ctx, b.fx.organizer, http.MethodGet, path, nil)
		d := time.Since(t0)
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("GET occupancy: %d %s", code, body)
		}
		return d, body, err
	}
	d, _, err := get()
	if err != nil {
		return err
	}
	o.ColdLoadMS = round3(ms(d))
	cpu0 := b.procs.sampleCPU([]*server{main})
	defer func() { o.OthersCPU = round3(cpu0.to(b.procs.sampleCPU([]*server{main})).otherShare()) }()
	recompute := func() ([]float64, map[string]int, error) {
		var lat []float64
		totals := map[string]int{}
		for i := range 30 {
			t0 := time.Now()
			rows, err := b.db.Query(ctx, store.OccupancyStatement(), b.fx.orgID, ev)
			if err != nil {
				return nil, nil, err
			}
			sum := map[string]int{}
			for rows.Next() {
				var sec, cat, status string
				var c int
				if err := rows.Scan(&sec, &cat, &status, &c); err != nil {
					rows.Close()
					return nil, nil, err
				}
				sum[status] += c
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, nil, err
			}
			lat = append(lat, ms(time.Since(t0)))
			if i == 0 {
				totals = sum
			}
		}
		return lat, totals, nil
	}
	fresh, _, err := recompute()
	if err != nil {
		return err
	}
	o.RecomputedFresh = latencyOf(fresh)
	var lat []float64
	var body []byte
	for range b.cfg.occRequests {
		d, bd, err := get()
		if err != nil {
			return err
		}
		lat = append(lat, ms(d))
		body = bd
	}
	o.Served = latencyOf(lat)
	if _, err := b.db.Exec(ctx, `VACUUM (ANALYZE) seats`); err != nil {
		return err
	}
	vac, totals, err := recompute()
	if err != nil {
		return err
	}
	o.Recomputed = latencyOf(vac)
	var served struct {
		Available, Held, Sold, Blocked int
	}
	if err := json.Unmarshal(body, &served); err != nil {
		return err
	}
	o.Consistent = served.Available == totals["available"] && served.Held == totals["held"] &&
		served.Sold == totals["sold"] && served.Blocked == totals["blocked"]
	b.rep.Occupancy = o
	b.log.printf("occupancy %d seats: served p50 %.2f p99 %.2f ms; SQL p50 %.1f p99 %.1f ms (just written %.1f / %.1f); first load %.0f ms",
		n, o.Served.P50, o.Served.P99, o.Recomputed.P50, o.Recomputed.P99, o.RecomputedFresh.P50, o.RecomputedFresh.P99, o.ColdLoadMS)
	return nil
}
