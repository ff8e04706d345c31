package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Best is many buyers asking for the 4 best seats at the same instant on
// an event with the strict orphan rule, several times (each burst on a
// fresh event): one burst lasts about as long as a scheduler hiccup or a
// background job of another process on the same two cores, so one burst
// is one sample. The fields are the burst with the median p99, except the
// checks (seats twice, blocks apart, orphans, other answers), which count
// every burst; Bursts lists them all.
type Best struct {
	Bursts  []BestBurst `json:"bursts"`
	Buyers  int         `json:"buyers"`
	Seats   int         `json:"event_seats"`
	Granted int         `json:"granted"`
	Refused int         `json:"refused"` // 409 not_enough_seats
	Other   int         `json:"other"`
	Refusal string      `json:"first_refusal,omitempty"`
	WallMS  float64     `json:"wall_ms"`
	Latency Latency     `json:"latency"`
	// Floor is the same buyers asking GET /api/v1/me at the same
	// instant, just before: what a burst of this many requests costs the
	// machine (HTTP, sessions, the load generator) with no hold at all.
	Floor Latency `json:"floor_latency"`
	// CPU is what each part used during the burst: where its time goes.
	CPU CPU `json:"cpu"`
	// Checked in SQL afterwards: seats with more than one active hold,
	// granted blocks that are not 4 seats side by side in one row, and
	// available seats left alone between taken ones.
	SeatsTwice  int `json:"seats_twice"`
	NotTogether int `json:"blocks_not_side_by_side"`
	Orphans     int `json:"orphans"`
	// Writes is the reference measured beside the bursts (before the
	// first, in the middle, after the last), WritesMS its median wall.
	Writes   []BestWrites `json:"writes_alone,omitempty"`
	WritesMS float64      `json:"writes_alone_ms,omitempty"`
	// Keyed is the same burst with an Idempotency-Key on every request
	// (what the map's best-seats form sends), run between the plain
	// bursts, each then sent again with the same keys.
	Keyed *BestKeyed `json:"keyed,omitempty"`
}

// BestWrites is Postgres alone writing what a burst writes: every
// buyer's 4 seats, their holds, audit rows and the buyer's count, with
// seatd's own hold statement, as many statements at once as seatd has
// statement slots, from pgbench with nothing else running. A burst cannot
// finish sooner on the same machine: besides these writes seatd answers
// the requests, locks the seats in Redis and checks the orphan rule, on
// the same cores. WallMS runs from the first statement's start to the
// last one's end.
type BestWrites struct {
	Seats      int     `json:"seats"`
	Statements int     `json:"statements"`
	WallMS     float64 `json:"wall_ms"`
}

// BestKeyed compares keyed bursts with the plain burst run just before
// each (interleaved, so both meet the machine in the same state), and
// counts what the repeats with the same keys did.
type BestKeyed struct {
	Bursts []BestBurst `json:"bursts"`
	Plain  []BestBurst `json:"plain_before"`
	// Medians over the keyed bursts and over the plain ones before them.
	P99           float64 `json:"median_p99_ms"`
	PlainP99      float64 `json:"plain_median_p99_ms"`
	Postgres      float64 `json:"median_postgres_cpu_ms"`
	PlainPostgres float64 `json:"plain_median_postgres_cpu_ms"`
	Seatd         float64 `json:"median_seatd_cpu_ms"`
	PlainSeatd    float64 `json:"plain_median_seatd_cpu_ms"`
	Granted       int     `json:"granted"`
	Requests      int     `json:"requests"`
	// The repeats: answered 200 with the first answer's holds, answered
	// otherwise, and active holds beyond the first answers' (all bursts).
	RepeatP99   []float64 `json:"repeat_p99_ms"`
	RepeatSame  int       `json:"repeat_same"`
	RepeatOther int       `json:"repeat_other"`
	ExtraHolds  int       `json:"extra_holds"`
	SeatsTwice  int       `json:"seats_twice"`
	NotTogether int       `json:"blocks_not_side_by_side"`
	Orphans     int       `json:"orphans"`
}

// keyedRepeat is what sending a keyed burst again did.
type keyedRepeat struct {
	p99         float64
	same, other int
	extraHolds  int
}

// BestBurst is one burst's outcome.
type BestBurst struct {
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	WallMS float64 `json:"wall_ms"`
	CPU    CPU     `json:"cpu"`
}

// phaseBest runs -best-bursts plain bursts (bestBurst) and reports the
// median one, with every burst's checks; -best-keyed keyed bursts run
// between them, spread evenly, each right after a plain one.
func (b *bench) phaseBest(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	var runs []*Best
	var k BestKeyed
	step := max(1, b.cfg.bestBursts/max(1, b.cfg.bestKeyed))
	var writes []BestWrites
	alone := func() error {
		if b.cfg.noRef {
			return nil
		}
		w, err := b.pgbench.writesAlone(ctx, bestEventSeats, bestBuyers(b.fx.buyers), 4, b.cfg.batchSlots())
		if err == nil {
			writes = append(writes, w)
			b.log.printf("best available, the writes alone: %d holds in %d statements at once in %.1f ms",
				w.Seats, w.Statements, w.WallMS)
		}
		return err
	}
	for i := range b.cfg.bestBursts {
		if i == 0 || i == b.cfg.bestBursts/2 {
			if err := alone(); err != nil {
				return err
			}
		}
		r, _, err := b.bestBurst(ctx, main, false)
		if err != nil {
			return err
		}
		runs = append(runs, r)
		if len(k.Bursts) == b.cfg.bestKeyed || i%step != step/2 {
			continue
		}
		x, rep, err := b.bestBurst(ctx, main, true)
		if err != nil {
			return err
		}
		k.add(r, x, rep)
	}
	if err := alone(); err != nil {
		return err
	}
	r := *slices.SortedFunc(slices.Values(runs), func(x, y *Best) int { return cmp.Compare(x.Latency.P99, y.Latency.P99) })[len(runs)/2]
	if len(writes) > 0 {
		r.Writes = writes
		r.WritesMS = slices.SortedFunc(slices.Values(writes), func(x, y BestWrites) int { return cmp.Compare(x.WallMS, y.WallMS) })[len(writes)/2].WallMS
	}
	r.SeatsTwice, r.NotTogether, r.Orphans, r.Other = 0, 0, 0, 0
	for _, x := range runs {
		r.Bursts = append(r.Bursts, x.burst())
		r.SeatsTwice, r.NotTogether, r.Orphans, r.Other = r.SeatsTwice+x.SeatsTwice, r.NotTogether+x.NotTogether, r.Orphans+x.Orphans, r.Other+x.Other
	}
	b.rep.Best = &r
	b.log.printf("best available: %d bursts, p99 %s ms; median burst p50/p99 %.1f/%.1f ms; over all bursts: seats twice %d, blocks apart %d, orphans %d, other answers %d",
		len(runs), burstP99s(r.Bursts), r.Latency.P50, r.Latency.P99, r.SeatsTwice, r.NotTogether, r.Orphans, r.Other)
	if len(k.Bursts) > 0 {
		k.summarize()
		r.Keyed = &k
		b.log.printf("best available, keyed: %d bursts, p99 %s ms (the plain bursts before them: %s ms); medians: p99 %.1f against %.1f ms, Postgres %.0f against %.0f ms, seatd %.0f against %.0f ms a burst; repeats: %d same holds, %d otherwise, %d holds more",
			len(k.Bursts), burstP99s(k.Bursts), burstP99s(k.Plain), k.P99, k.PlainP99, k.Postgres, k.PlainPostgres, k.Seatd, k.PlainSeatd, k.RepeatSame, k.RepeatOther, k.ExtraHolds)
	}
	return nil
}

// burst is the one-line summary of a burst.
func (r *Best) burst() BestBurst {
	return BestBurst{P50: r.Latency.P50, P99: r.Latency.P99, WallMS: r.WallMS, CPU: r.CPU}
}

// add records a keyed burst x, its repeat, and the plain burst before it.
func (k *BestKeyed) add(plain, x *Best, rep keyedRepeat) {
	k.Plain = append(k.Plain, plain.burst())
	k.Bursts = append(k.Bursts, x.burst())
	k.Granted += x.Granted
	k.Requests += x.Buyers
	k.RepeatP99 = append(k.RepeatP99, rep.p99)
	k.RepeatSame += rep.same
	k.RepeatOther += rep.other
	k.ExtraHolds += rep.extraHolds
	k.SeatsTwice += x.SeatsTwice
	k.NotTogether += x.NotTogether
	k.Orphans += x.Orphans
}

// summarize fills in the medians.
func (k *BestKeyed) summarize() {
	med := func(bs []BestBurst, f func(BestBurst) float64) float64 {
		v := make([]float64, len(bs))
		for i, x := range bs {
			v[i] = f(x)
		}
		slices.Sort(v)
		return round3(v[len(v)/2])
	}
	p99 := func(x BestBurst) float64 { return x.P99 }
	pg := func(x BestBurst) float64 { return x.CPU.Postgres * 1000 }
	sd := func(x BestBurst) float64 { return x.CPU.Seatd * 1000 }
	k.P99, k.PlainP99 = med(k.Bursts, p99), med(k.Plain, p99)
	k.Postgres, k.PlainPostgres = med(k.Bursts, pg), med(k.Plain, pg)
	k.Seatd, k.PlainSeatd = med(k.Bursts, sd), med(k.Plain, sd)
}

// bestEventSeats is the size of each burst's event.
const bestEventSeats = 4000

// bestBuyers is how many buyers a burst sends.
func bestBuyers(buyers []*session) int { return min(500, len(buyers)) }

// bestBurst sends 500 buyers, each with its own session and an open
// connection, for {"best_available":{"count":4}} at the same instant, on
// a fresh event. Keyed, each request carries an Idempotency-Key of its
// own, and the burst is sent again with the same keys once it is checked.
func (b *bench) bestBurst(ctx context.Context, main *server, keyed bool) (*Best, keyedRepeat, error) {
	var rep keyedRepeat
	n := bestBuyers(b.fx.buyers)
	const seats = bestEventSeats
	ev, _, err := b.fx.newEvent(ctx, "best available", seats, false)
	if err != nil {
		return nil, rep, err
	}
	if _, err := b.db.Exec(ctx, `UPDATE events SET orphan_rule = 'strict', status = 'on_sale' WHERE org_id = $1 AND id = $2`, b.fx.orgID, ev); err != nil {
		return nil, rep, err
	}
	if err := b.load.warm(ctx, []*server{main}, ev); err != nil {
		return nil, rep, err
	}
	// Every buyer's connection is open, and has served a request, before
	// the bursts.
	buyers := b.fx.buyers[:n]
	conns := make(map[*session]*rawConn, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for _, s := range buyers {
		c, err := main.dialRaw(ctx)
		if err != nil {
			return nil, rep, err
		}
		conns[s] = c
	}
	var wg sync.WaitGroup
	for _, s := range buyers {
		wg.Go(func() { _, _, _ = conns[s].call(s, http.MethodGet, "/api/v1/me", nil) })
	}
	wg.Wait()
	path := "/api/v1/events/" + ev + "/holds"
	body := []byte(`{"best_available":{"count":4}}`)
	header := make(map[*session][]string, n)
	if keyed {
		for i, s := range buyers {
			header[s] = []string{fmt.Sprintf("Idempotency-Key: best-%s-%d", ev, i)}
		}
	}
	hold := func(s *session) (int, []byte) {
		code, resp, _ := conns[s].call(s, http.MethodPost, path, body, header[s]...)
		return code, resp
	}
	_, _, floor, _ := burst(buyers, func(s *session) (int, []byte) {
		code, resp, _ := conns[s].call(s, http.MethodGet, "/api/v1/me", nil)
		return code, resp
	})
	cpu0 := b.procs.sampleCPU([]*server{main})
	codes, bodies, lats, ends := burst(buyers, hold)
	cpu := cpu0.to(b.procs.sampleCPU([]*server{main}))
	start := ends[len(ends)-1]
	ends = ends[:n]
	r := &Best{Buyers: n, Seats: seats, Latency: latencyOf(lats), Floor: latencyOf(floor), CPU: cpu}
	var last time.Time
	for i, c := range codes {
		switch c {
		case http.StatusCreated:
			r.Granted++
		case http.StatusConflict:
			r.Refused++
			if r.Refusal == "" {
				r.Refusal = string(bodies[i])
			}
		default:
			r.Other++
		}
		if ends[i].After(last) {
			last = ends[i]
		}
	}
	r.WallMS = round3(ms(last.Sub(start)))
	if err := b.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM (SELECT seat_id FROM seat_holds WHERE org_id = $2 AND event_id = $1 AND status = 'active'
		                              GROUP BY seat_id HAVING count(*) > 1) x),
		       (SELECT count(*) FROM (SELECT h.user_id FROM seat_holds h JOIN seats s ON s.org_id = h.org_id AND s.id = h.seat_id
		                              WHERE h.org_id = $2 AND h.event_id = $1 AND h.status = 'active' GROUP BY h.user_id
		                              HAVING count(*) <> 4 OR count(DISTINCT (s.section_id, s.row_label)) <> 1
		                                  OR max(s.number) - min(s.number) <> 3) y),
		       (SELECT count(*) FROM seats s WHERE s.org_id = $2 AND s.event_id = $1 AND s.status = 'available'
		          AND NOT EXISTS (SELECT 1 FROM seats o WHERE o.org_id = $2 AND o.event_id = $1 AND o.section_id = s.section_id
		                          AND o.row_label = s.row_label AND abs(o.number - s.number) = 1 AND o.status = 'available')
		          AND EXISTS (SELECT 1 FROM seats o WHERE o.org_id = $2 AND o.event_id = $1 AND o.section_id = s.section_id
		                      AND o.row_label = s.row_label AND abs(o.number - s.number) = 1))`, ev, b.fx.orgID).
		Scan(&r.SeatsTwice, &r.NotTogether, &r.Orphans); err != nil {
		return nil, rep, err
	}
	b.log.printf("best available: %d granted, %d refused, %d other in %.0f ms; p50/p99 %.1f/%.1f ms (the same burst of GET /api/v1/me: %.1f/%.1f ms); seats twice %d, blocks apart %d, orphans %d",
		r.Granted, r.Refused, r.Other, r.WallMS, r.Latency.P50, r.Latency.P99, r.Floor.P50, r.Floor.P99, r.SeatsTwice, r.NotTogether, r.Orphans)
	b.log.printf("best available: CPU during the burst (%.0f ms): seatd %.0f ms, postgres %.0f ms, redis %.0f ms, load generator %.0f ms, others %.0f ms, idle %.0f ms",
		cpu.Wall*1000, cpu.Seatd*1000, cpu.Postgres*1000, cpu.Redis*1000, cpu.Client*1000, cpu.Other*1000, cpu.Idle*1000)
	if r.Refusal != "" {
		b.log.printf("best available: first refusal %s", r.Refusal)
	}
	if !keyed {
		return r, rep, nil
	}
	again, bodies2, lats2, _ := burst(buyers, hold)
	rep.p99 = latencyOf(lats2).P99
	for i, c := range again {
		if c == http.StatusOK && codes[i] == http.StatusCreated && sameHolds(bodies[i], bodies2[i]) {
			rep.same++
		} else {
			rep.other++
		}
	}
	var active int
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE org_id = $2 AND event_id = $1 AND status = 'active'`, ev, b.fx.orgID).Scan(&active); err != nil {
		return nil, rep, err
	}
	rep.extraHolds = active - 4*r.Granted
	b.log.printf("best available, keyed: sent again with the same keys: p99 %.1f ms; %d answered with the same holds, %d otherwise; %d holds more",
		rep.p99, rep.same, rep.other, rep.extraHolds)
	return r, rep, nil
}

// sameHolds says whether two answers name the same, non-empty, holds.
func sameHolds(a, b []byte) bool {
	ids := func(body []byte) []string {
		var v struct {
			Holds []struct {
				ID string `json:"id"`
			} `json:"holds"`
		}
		if json.Unmarshal(body, &v) != nil {
			return nil
		}
		out := make([]string, len(v.Holds))
		for i, h := range v.Holds {
			out[i] = h.ID
		}
		slices.Sort(out)
		return out
	}
	x := ids(a)
	return len(x) > 0 && slices.Equal(x, ids(b))
}

// burst sends one request per session at the same instant (each on its
// own goroutine, released together) and returns each one's status, body,
// latency in ms and end time; the start of the burst is appended to ends.
func burst(ss []*session, call func(*session) (int, []byte)) (codes []int, bodies [][]byte, lats []float64, ends []time.Time) {
	n := len(ss)
	codes, bodies, lats, ends = make([]int, n), make([][]byte, n), make([]float64, n), make([]time.Time, n+1)
	gate := make(chan struct{})
	var ready, wg sync.WaitGroup
	ready.Add(n)
	for i, s := range ss {
		wg.Go(func() {
			ready.Done()
			<-gate
			t0 := time.Now()
			codes[i], bodies[i] = call(s)
			ends[i] = time.Now()
			lats[i] = ms(ends[i].Sub(t0))
		})
	}
	ready.Wait()
	ends[n] = time.Now()
	close(gate)
	wg.Wait()
	return codes, bodies, lats, ends
}
