package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
	CPU      CPU     `json:"cpu"` // during the sale
	Seated   Latency `json:"seated_latency"`
	SeatedPS float64 `json:"seated_holds_per_second"`
	// Keyed is the sale again, right after, on a section of its own,
	// every request with an Idempotency-Key of its own.
	Keyed *GAKeyed `json:"keyed,omitempty"`
}

// GAKeyed is a flash sale whose every request carries an Idempotency-Key
// of its own, as the map's standing-places form sends them; each granted
// request is then sent again with its key, which must answer 200 with
// the first answer's hold and hold nothing more.
type GAKeyed struct {
	Granted  int     `json:"granted"`
	Held     int     `json:"held_in_postgres"`
	Retries  int     `json:"retries"`
	SoldOut  int     `json:"sold_out"`
	Other    int     `json:"other"`
	WallMS   float64 `json:"wall_ms"`
	PerSec   float64 `json:"places_per_second"`
	Latency  Latency `json:"latency"`
	CPU      CPU     `json:"cpu"`
	Repeat   Latency `json:"repeat_latency"`
	Same     int     `json:"repeat_same"`      // 200 with the first answer's hold
	NotSame  int     `json:"repeat_otherwise"` // anything else
	HeldThen int     `json:"held_after_repeats"`
}

// phaseGA: -ga-buyers buyers (default 200) hold the 10 000 places of one
// GA section, one place a request, asking again after a seat_taken
// (their picks were taken meanwhile) until sold_out; with -ga-keyed, the
// same again on another section with an Idempotency-Key on every request,
// and its granted requests sent again; then the same buyers hold the
// 10 000 seats of a seated event, one seat each request, no two asking
// for the same seat. Places granted must be exactly 10 000 in each sale.
func (b *bench) phaseGA(ctx context.Context) error {
	main, err := b.procs.mainServer(ctx)
	if err != nil {
		return err
	}
	const places = 10_000
	n := min(b.cfg.gaBuyers, len(b.fx.buyers))
	buyers := b.fx.buyers[:n]
	ga, err := b.fx.newGAEvent(ctx, places, true)
	if err != nil {
		return err
	}
	var keyedEv string
	if b.cfg.gaKeyed {
		if keyedEv, err = b.fx.newGAEvent(ctx, places, true); err != nil {
			return err
		}
	}
	seated, err := b.fx.newGAEvent(ctx, places, false)
	if err != nil {
		return err
	}
	for _, ev := range []string{ga, keyedEv, seated} {
		if ev == "" {
			continue
		}
		if err := b.load.warm(ctx, []*server{main}, ev); err != nil {
			return err
		}
	}
	g := &GAFlash{Places: places, Buyers: n}

	sale, err := b.flashSale(ctx, main, ga, buyers, false)
	if err != nil {
		return err
	}
	g.Granted, g.Held, g.Retries, g.SoldOut, g.Other = sale.granted, sale.held, sale.retries, sale.soldOut, sale.other
	g.WallMS, g.PerSec, g.Latency, g.CPU = round3(ms(sale.wall)), sale.perSec(), latencyOf(sale.lats), sale.cpu
	if keyedEv != "" {
		k, err := b.keyedFlashSale(ctx, main, keyedEv, buyers)
		if err != nil {
			return err
		}
		g.Keyed = k
	}

	// The same buyers on distinct seats.
	ids, err := b.fx.seatIDs(ctx, seated)
	if err != nil {
		return err
	}
	var next atomic.Int64
	var mu sync.Mutex
	var lats []float64
	var wg sync.WaitGroup
	start := time.Now()
	for _, s := range buyers {
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
	b.log.printf("GA flash sale: %d/%d places granted (held in Postgres %d) by %d buyers in %.0f ms: %.0f places/s, p99 %.1f ms, %d retries, %d sold_out, %d other; CPU a place: seatd %.0f µs, Postgres %.0f µs; seated: %.0f holds/s, p99 %.1f ms",
		g.Granted, places, g.Held, n, g.WallMS, g.PerSec, g.Latency.P99, g.Retries, g.SoldOut, g.Other,
		perPlaceUS(g.CPU.Seatd, g.Granted), perPlaceUS(g.CPU.Postgres, g.Granted), g.SeatedPS, g.Seated.P99)
	if g.Granted != places || g.Held != places {
		return fmt.Errorf("GA flash sale granted %d places, Postgres holds %d; want exactly %d", g.Granted, g.Held, places)
	}
	if k := g.Keyed; k != nil && (k.Granted != places || k.Held != places || k.NotSame != 0 || k.HeldThen != places) {
		return fmt.Errorf("keyed GA flash sale granted %d places, Postgres held %d, then %d after the repeats (%d not the same answer); want exactly %d and all the same",
			k.Granted, k.Held, k.HeldThen, k.NotSame, places)
	}
	return nil
}

// keyedFlashSale runs the flash sale on ev with a key on every request,
// then sends every granted request again with its key.
func (b *bench) keyedFlashSale(ctx context.Context, main *server, ev string, buyers []*session) (*GAKeyed, error) {
	sale, err := b.flashSale(ctx, main, ev, buyers, true)
	if err != nil {
		return nil, err
	}
	k := &GAKeyed{Granted: sale.granted, Held: sale.held, Retries: sale.retries, SoldOut: sale.soldOut, Other: sale.other,
		WallMS: round3(ms(sale.wall)), PerSec: sale.perSec(), Latency: latencyOf(sale.lats), CPU: sale.cpu}
	var mu sync.Mutex
	var lats []float64
	var wg sync.WaitGroup
	for s, grants := range sale.grants {
		wg.Go(func() {
			var mine []float64
			same := 0
			for _, x := range grants {
				t0 := time.Now()
				code, resp, err := main.call(ctx, s, http.MethodPost, "/api/v1/events/"+ev+"/holds", gaBody, "Idempotency-Key: "+x.key)
				mine = append(mine, ms(time.Since(t0)))
				if err == nil && code == http.StatusOK && sameHolds(x.answer, resp) {
					same++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lats = append(lats, mine...)
			k.Same += same
			k.NotSame += len(grants) - same
		})
	}
	wg.Wait()
	k.Repeat = latencyOf(lats)
	if err := b.db.QueryRow(ctx, `SELECT count(*) FROM seat_holds WHERE org_id = $1 AND event_id = $2 AND status = 'active'`,
		b.fx.orgID, ev).Scan(&k.HeldThen); err != nil {
		return nil, err
	}
	b.log.printf("GA flash sale, keyed: %d places granted (held in Postgres %d) in %.0f ms: %.0f places/s, p99 %.1f ms, %d retries, %d other; CPU a place: seatd %.0f µs, Postgres %.0f µs; sent again with the same keys: p99 %.1f ms, %d answered with the same hold, %d otherwise; %d held then",
		k.Granted, k.Held, k.WallMS, k.PerSec, k.Latency.P99, k.Retries, k.Other, perPlaceUS(k.CPU.Seatd, k.Granted),
		perPlaceUS(k.CPU.Postgres, k.Granted), k.Repeat.P99, k.Same, k.NotSame, k.HeldThen)
	return k, nil
}

// gaBody asks for one place of the bench's GA section.
var gaBody = []byte(`{"ga":{"section":"GA","count":1}}`)

// flashRun is what one flash sale did.
type flashRun struct {
	granted, held, retries, soldOut, other int
	wall                                   time.Duration
	lats                                   []float64
	cpu                                    CPU
	// grants are a keyed sale's granted requests, by buyer.
	grants map[*session][]keyedGrant
}

// keyedGrant is a granted keyed request: its key and its answer.
type keyedGrant struct {
	key    string
	answer []byte
}

func (r flashRun) perSec() float64 { return round3(float64(r.granted) / r.wall.Seconds()) }

// flashSale has buyers hold the places of GA event ev, one place a
// request, asking again after a seat_taken (their picks were taken
// meanwhile) until sold_out; keyed, every request carries a key of its
// own.
func (b *bench) flashSale(ctx context.Context, main *server, ev string, buyers []*session, keyed bool) (flashRun, error) {
	var r flashRun
	var mu sync.Mutex
	var granted, retries, soldOut, other atomic.Int64
	r.grants = map[*session][]keyedGrant{}
	var wg sync.WaitGroup
	cpu0 := b.procs.sampleCPU([]*server{main})
	start := time.Now()
	for i, s := range buyers {
		wg.Go(func() {
			var mine []float64
			var grants []keyedGrant
			defer func() {
				mu.Lock()
				r.lats = append(r.lats, mine...)
				if len(grants) > 0 {
					r.grants[s] = grants
				}
				mu.Unlock()
			}()
			for n := 0; ctx.Err() == nil; n++ {
				var header []string
				key := fmt.Sprintf("ga-%s-%d-%d", ev, i, n)
				if keyed {
					header = append(header, "Idempotency-Key: "+key)
				}
				t0 := time.Now()
				code, resp, err := main.call(ctx, s, http.MethodPost, "/api/v1/events/"+ev+"/holds", gaBody, header...)
				mine = append(mine, ms(time.Since(t0)))
				switch {
				case err == nil && code == http.StatusCreated:
					granted.Add(1)
					if keyed {
						grants = append(grants, keyedGrant{key: key, answer: resp})
					}
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
	r.wall = time.Since(start)
	r.cpu = cpu0.to(b.procs.sampleCPU([]*server{main}))
	r.granted, r.retries, r.soldOut, r.other = int(granted.Load()), int(retries.Load()), int(soldOut.Load()), int(other.Load())
	err := b.db.QueryRow(ctx, `SELECT count(*) FROM seats WHERE org_id = $1 AND event_id = $2 AND status = 'held'`, b.fx.orgID, ev).Scan(&r.held)
	return r, err
}

// perPlaceUS is CPU seconds per place in µs.
func perPlaceUS(cpu float64, places int) float64 {
	if places == 0 {
		return 0
	}
	return cpu * 1e6 / float64(places)
}
