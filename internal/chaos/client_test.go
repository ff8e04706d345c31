package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// client is one signed-in user talking HTTP to any seatd process. Session
// cookies do not depend on the port, so one jar serves every process.
type client struct {
	idx  int
	user store.User
	jar  http.CookieJar
	hc   *http.Client

	// chooser, when set, makes this a buyer who lets the server choose:
	// best available seats or general-admission places.
	chooser chooser

	// Only the client's own load goroutine touches these.
	holds []heldSeat
	sold  map[uuid.UUID]bool
	own   []uuid.UUID
	// got is every hold a choosing request granted this buyer, kept or
	// walked away from.
	got map[uuid.UUID]bool
	// A waitlister's place in line: since when it has asked (the first
	// join since its last offer, answered or not), and the offered
	// entries already taken in.
	waitingSince time.Time
	offersSeen   map[uuid.UUID]bool
}

// chooser names how a buyer who does not click seats asks for them.
type chooser string

const (
	viaBest chooser = "best" // {"best_available":{"count":2}}
	viaGA   chooser = "ga"   // {"ga":{"section":"GA","count":1 or 2}} with an Idempotency-Key
	// viaWaitlist joins the line for one seat of waitSection and takes
	// the seat the offer worker holds for it.
	viaWaitlist chooser = "waitlist"
)

type heldSeat struct {
	seat, hold uuid.UUID
	// until is the hold's held_until as answered: past it the reaper may
	// end the hold and the seat be held again, by this buyer too.
	until time.Time
	hot   bool
	via   chooser
}

// newTransport is shared by every client of a test.
func newTransport() *http.Transport {
	return &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
}

// login signs u in on n.
func login(ctx context.Context, tr http.RoundTripper, n *node, slug string, u store.User, idx int) (*client, error) {
	jar, _ := cookiejar.New(nil)
	cl := &client{idx: idx, user: u, jar: jar, hc: &http.Client{Transport: tr, Jar: jar}, sold: map[uuid.UUID]bool{}}
	status, body, err := cl.call(ctx, n, http.MethodPost, "/login",
		map[string]string{"org": slug, "email": u.Email, "password": testenv.Password}, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, &errStatus{status, string(body)}
	}
	return cl, nil
}

// loginAll signs users in, a few at a time.
func loginAll(t testing.TB, c *cluster, tr http.RoundTripper, users []store.User) []*client {
	t.Helper()
	out := make([]*client, len(users))
	errs := make([]error, len(users))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out[i], errs[i] = login(ctx, tr, c.nodes[i%len(c.nodes)], c.tenant.Org.Slug, u, i)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("login: %v", err)
		}
	}
	return out
}

// call sends a JSON request to n and returns the status and body.
func (cl *client) call(ctx context.Context, n *node, method, path string, body any, hdr http.Header) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.url(path), rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// seats reads the event's seat map from n.
func (cl *client) seats(ctx context.Context, n *node, event uuid.UUID) (map[uuid.UUID]seatState, error) {
	status, body, err := cl.call(ctx, n, http.MethodGet, "/api/v1/events/"+event.String()+"/seats", nil, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, &errStatus{status, string(body)}
	}
	var out struct {
		Seats []struct {
			ID      uuid.UUID `json:"id"`
			Status  string    `json:"status"`
			Version int64     `json:"version"`
		} `json:"seats"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, err
	}
	m := make(map[uuid.UUID]seatState, len(out.Seats))
	for _, s := range out.Seats {
		m[s.ID] = seatState{s.Status, s.Version}
	}
	return m, nil
}

// ---------------------------------------------------------------------------
// recorded operations

type opKind uint8

const (
	opHold opKind = iota
	opRelease
	opPurchase
)

func (k opKind) String() string { return [...]string{"hold", "release", "purchase"}[k] }

// result is what the client learned from an operation.
type result uint8

const (
	resCreated  result = iota // hold: 201, a new hold
	resExisting               // hold: 200, the caller's hold again
	resTaken                  // hold: 409 seat_taken
	resOK                     // release 204, purchase 201/200
	resNotFound               // release: 404, the hold is no longer active
	resExpired                // purchase: 409 holds_expired
	resRefused                // another refusal with no effect (hold limit, 429)
	resUnknown                // error, timeout or 5xx: it may or may not have happened
)

func (r result) String() string {
	return [...]string{"created", "existing", "taken", "ok", "notfound", "expired", "refused", "unknown"}[r]
}

// op is one operation as a client saw it.
type op struct {
	Client int
	User   uuid.UUID
	Kind   opKind
	Seat   uuid.UUID
	Hold   uuid.UUID // release and purchase: the input; hold: the answer
	Until  time.Time // hold: the answer's held_until
	Result result
	Status int
	Err    string
	Node   string
	Hot    bool
	Call   time.Time
	Return time.Time
	// Resolved marks an unknown outcome settled afterwards from Postgres:
	// its effect is known, its return time is not.
	Resolved bool
	// Attempts is how many requests a purchase took (retries under the
	// same Idempotency-Key), and Tried the processes they went to.
	Attempts int
	Tried    []string
	// Via: a seat the server chose (best available, a GA place); the
	// request named none, so only its granted seats are recorded, one
	// operation each with the request's call and return.
	Via chooser
}

func (o op) String() string {
	s := fmt.Sprintf("c%d %s %s", o.Client, o.Kind, o.Seat.String()[:8])
	if o.Hold != uuid.Nil {
		s += " h=" + o.Hold.String()[:8]
	}
	return s + " → " + o.Result.String()
}

// recorder keeps every operation of a run.
type recorder struct {
	mu  sync.Mutex
	ops []op
}

func (r *recorder) add(o op) {
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

func (r *recorder) all() []op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ops)
}

// windowStats summarises the holds that started within [from, to).
type windowStats struct {
	Holds, Answered, Granted, Taken, Errors int
	OwnHolds, OwnGranted                    int
	P50, P99                                time.Duration
	// LastError is when the last hold that failed was made.
	LastError time.Time
	// ErrorKinds counts the failures by what the client saw.
	ErrorKinds map[string]int
}

func (r *recorder) stats(from, to time.Time) windowStats {
	var s windowStats
	var lat []time.Duration
	for _, o := range r.all() {
		if o.Kind != opHold || o.Call.Before(from) || !o.Call.Before(to) {
			continue
		}
		s.Holds++
		own := !o.Hot && o.Via == ""
		if own {
			s.OwnHolds++
		}
		switch o.Result {
		case resCreated, resExisting:
			s.Granted++
			s.Answered++
			if own {
				s.OwnGranted++
			}
		case resTaken, resRefused:
			s.Taken++
			s.Answered++
		default:
			s.Errors++
			if o.Call.After(s.LastError) {
				s.LastError = o.Call
			}
			if s.ErrorKinds == nil {
				s.ErrorKinds = map[string]int{}
			}
			k := o.Err
			if len(k) > 60 {
				k = k[:60]
			}
			s.ErrorKinds[k]++
		}
		lat = append(lat, o.Return.Sub(o.Call))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	s.P50, s.P99 = pct(0.50), pct(0.99)
	return s
}

// ---------------------------------------------------------------------------
// the load

// load drives buyers against the cluster: holds on a few hot seats that
// everyone wants and on seats of their own, releases, purchases (with
// retries under one Idempotency-Key), re-holds that must be idempotent, and
// holds left to expire.
type load struct {
	c       *cluster
	rec     *recorder
	clients []*client
	hot     []uuid.UUID
	// hotShare is the share of new holds aimed at hot seats.
	hotShare float64
	timeout  time.Duration
	born     time.Time // before any request of the run

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// chosen counts the answers to requests that named no seat, by
	// chooser and result ("best/created"), for the log.
	chosenMu sync.Mutex
	chosen   map[string]int
	bad      []op
}

// addChoosers signs in n more buyers who let the server choose (via).
func (l *load) addChoosers(t testing.TB, tr http.RoundTripper, via chooser, n int) {
	t.Helper()
	users := testenv.AddBuyers(t, l.c.admin, l.c.tenant.Org.ID, n)
	base := len(l.clients)
	for i, cl := range loginAll(t, l.c, tr, users) {
		cl.idx, cl.chooser = base+i, via
		l.clients = append(l.clients, cl)
	}
}

// countChosen counts an answer; a refusal by its error code.
func (l *load) countChosen(via chooser, r result, code ...string) {
	l.chosenMu.Lock()
	defer l.chosenMu.Unlock()
	if l.chosen == nil {
		l.chosen = map[string]int{}
	}
	k := string(via) + "/" + r.String()
	if r == resRefused && len(code) > 0 && code[0] != "" {
		k += "(" + code[0] + ")"
	}
	l.chosen[k]++
}

// noteChosen counts a case of the choosing buyers' answers by name.
func (l *load) noteChosen(via chooser, what string) {
	l.chosenMu.Lock()
	defer l.chosenMu.Unlock()
	if l.chosen == nil {
		l.chosen = map[string]int{}
	}
	l.chosen[string(via)+"/"+what]++
}

// chosenSummary describes the answers to the choosing buyers' requests.
func (l *load) chosenSummary() string {
	l.chosenMu.Lock()
	defer l.chosenMu.Unlock()
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(l.chosen)) {
		fmt.Fprintf(&b, "%s=%d ", k, l.chosen[k])
	}
	return strings.TrimSpace(b.String())
}

// newLoad signs in buyers; seats are split into hot ones and a private
// share per buyer.
func newLoad(t testing.TB, c *cluster, tr http.RoundTripper, buyers, hot int) *load {
	t.Helper()
	users := testenv.AddBuyers(t, c.admin, c.tenant.Org.ID, buyers)
	l := &load{c: c, rec: &recorder{}, hot: c.seats[:hot], hotShare: 0.3, timeout: 4 * time.Second, born: time.Now()}
	l.clients = loginAll(t, c, tr, users)
	rest := c.seats[hot:]
	per := len(rest) / buyers
	for i, cl := range l.clients {
		cl.own = rest[i*per : (i+1)*per]
	}
	return l
}

// start runs every buyer until stop.
func (l *load) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	// The context only says "no new requests": a request in flight runs to
	// its answer (or its own timeout), so stopping the load never cuts one
	// off. Clients going away mid-request is a fault of its own.
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for _, cl := range l.clients {
		l.wg.Go(func() {
			for ctx.Err() == nil {
				l.step(context.WithoutCancel(ctx), cl)
				time.Sleep(time.Duration(rand.IntN(4)) * time.Millisecond) // a buyer's think time: spreads the requests
			}
		})
	}
}

// stop ends the buyers and waits for their last requests.
func (l *load) stop() {
	l.mu.Lock()
	cancel := l.cancel
	l.cancel = nil
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		l.wg.Wait()
	}
}

func (l *load) pick() *node {
	up := l.c.upNodes()
	if len(up) == 0 {
		return nil
	}
	return up[rand.IntN(len(up))]
}

func (l *load) step(ctx context.Context, cl *client) {
	n := l.pick()
	if n == nil {
		time.Sleep(20 * time.Millisecond) // every process is down: a buyer waiting before the next try
		return
	}
	if len(cl.holds) > 0 && (len(cl.holds) >= 3 || rand.Float64() < 0.5) {
		i := rand.IntN(len(cl.holds))
		h := cl.holds[i]
		r := rand.Float64()
		switch {
		case r < 0.08:
			// Walk away: the reaper expires it.
			cl.holds = slices.Delete(cl.holds, i, i+1)
		case r < 0.16 && h.via != viaGA:
			// Ask again: the same hold must come back. (A GA place is not
			// asked for by id.)
			l.hold(ctx, n, cl, h.seat, h.hot)
		case r < 0.20 && !h.hot && (h.via != viaGA || r < 0.17):
			// GA places are bought less often, so the section does not
			// sell out early in the run and its places keep changing hands.
			cl.holds = slices.Delete(cl.holds, i, i+1)
			l.purchase(ctx, cl, h)
		default:
			cl.holds = slices.Delete(cl.holds, i, i+1)
			l.release(ctx, n, cl, h)
		}
		return
	}
	if cl.chooser == viaWaitlist {
		l.waitlist(ctx, n, cl)
		return
	}
	if cl.chooser != "" {
		l.holdChosen(ctx, cl)
		return
	}
	if rand.Float64() < l.hotShare || len(cl.own) == 0 {
		l.hold(ctx, n, cl, l.hot[rand.IntN(len(l.hot))], true)
		return
	}
	seat := cl.own[rand.IntN(len(cl.own))]
	if cl.sold[seat] || slices.ContainsFunc(cl.holds, func(h heldSeat) bool { return h.seat == seat }) {
		return
	}
	l.hold(ctx, n, cl, seat, false)
}

// outcome classifies an answer; err and 5xx are unknown outcomes.
func classify(status int, body []byte, err error) (result, string) {
	if err != nil {
		return resUnknown, err.Error()
	}
	var e struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	switch {
	case status == http.StatusConflict && e.Error == "seat_taken":
		return resTaken, ""
	case status == http.StatusConflict && e.Error == "holds_expired":
		return resExpired, ""
	case status == http.StatusNotFound:
		return resNotFound, ""
	case status == http.StatusConflict || status == http.StatusTooManyRequests:
		return resRefused, e.Error
	case status >= 500 || status == 0:
		return resUnknown, fmt.Sprintf("HTTP %d %s", status, e.Error)
	}
	return resOK, ""
}

func (l *load) hold(ctx context.Context, n *node, cl *client, seat uuid.UUID, hot bool) {
	o := op{Client: cl.idx, User: cl.user.ID, Kind: opHold, Seat: seat, Hot: hot, Node: n.name, Call: time.Now()}
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	status, body, err := cl.call(rctx, n, http.MethodPost, "/api/v1/events/"+l.c.event.ID.String()+"/holds",
		map[string]string{"seat_id": seat.String()}, nil)
	cancel()
	o.Return, o.Status = time.Now(), status
	o.Result, o.Err = classify(status, body, err)
	if o.Result == resOK {
		var h struct {
			ID        uuid.UUID `json:"id"`
			SeatID    uuid.UUID `json:"seat_id"`
			HeldUntil time.Time `json:"held_until"`
		}
		if err := json.Unmarshal(body, &h); err != nil || h.SeatID != seat {
			o.Result, o.Err = resUnknown, fmt.Sprintf("bad hold answer %q", body)
		} else {
			o.Hold, o.Until = h.ID, h.HeldUntil
			o.Result = resExisting
			if status == http.StatusCreated {
				o.Result = resCreated
			}
			if !slices.ContainsFunc(cl.holds, func(x heldSeat) bool { return x.hold == h.ID }) {
				cl.holds = append(cl.holds, heldSeat{seat: seat, hold: h.ID, until: h.HeldUntil, hot: hot})
			}
		}
	}
	l.rec.add(o)
}

// holdChosen asks for seats the server chooses: the two best available,
// or 1 or 2 places of the GA section under an Idempotency-Key, retried
// like a purchase when its outcome is unknown (a repeat must answer the
// same holds, never more). Each seat granted is recorded as a hold of that
// seat from the first call to the last answer; a refusal or an outcome
// never learned names no seat, so it is only counted. The answer must
// name as many holds as asked, of different seats, none already this
// buyer's.
func (l *load) holdChosen(ctx context.Context, cl *client) {
	body := map[string]any{"best_available": map[string]int{"count": 2}}
	want := 2
	var hdr http.Header
	if cl.chooser == viaGA {
		want = 1 + rand.IntN(2)
		body = map[string]any{"ga": map[string]any{"section": gaSection, "count": want}}
		hdr = http.Header{"Idempotency-Key": {uuid.NewString()}}
	}
	o := op{Client: cl.idx, User: cl.user.ID, Kind: opHold, Via: cl.chooser, Call: time.Now()}
	var status int
	var resp []byte
	for attempt := 0; attempt < 4; attempt++ {
		n := l.pick()
		if n == nil {
			time.Sleep(100 * time.Millisecond) // every process is down: a buyer waiting before the next try
			continue
		}
		o.Node = n.name
		rctx, cancel := context.WithTimeout(ctx, l.timeout)
		var err error
		status, resp, err = cl.call(rctx, n, http.MethodPost, "/api/v1/events/"+l.c.event.ID.String()+"/holds", body, hdr)
		cancel()
		o.Return, o.Status = time.Now(), status
		o.Result, o.Err = classify(status, resp, err)
		if o.Result != resUnknown || hdr == nil {
			break // a best-available request has no key to repeat it under
		}
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond) // a client's back-off before repeating the request
	}
	if o.Result != resOK {
		l.countChosen(cl.chooser, o.Result, o.Err)
		return
	}
	var got struct {
		Holds []struct {
			ID        uuid.UUID `json:"id"`
			SeatID    uuid.UUID `json:"seat_id"`
			HeldUntil time.Time `json:"held_until"`
		} `json:"holds"`
	}
	seen := map[uuid.UUID]bool{}
	bad := json.Unmarshal(resp, &got) != nil || len(got.Holds) != want
	mine := map[uuid.UUID]bool{} // seats the answer names that this buyer held already, under the same hold
	if cl.got == nil {
		cl.got = map[uuid.UUID]bool{}
	}
	for _, h := range got.Holds {
		// A seat this buyer holds under another hold that was still live
		// when the request was made must not be answered as a new hold;
		// one whose hold had lapsed may be (expired, reaped, held again).
		i := slices.IndexFunc(cl.holds, func(x heldSeat) bool { return x.seat == h.SeatID && !x.until.Before(o.Call) })
		if i < 0 && !cl.got[h.ID] && slices.ContainsFunc(cl.holds, func(x heldSeat) bool { return x.seat == h.SeatID }) {
			l.noteChosen(cl.chooser, "held_again_after_lapse")
		}
		switch {
		case cl.got[h.ID] && cl.chooser == viaBest:
			// Best available may pick a seat this buyer holds already,
			// kept or walked away from (a process whose cache lags sees
			// it free); Postgres answers it as the buyer's own hold.
			mine[h.SeatID] = true
		case i >= 0 || cl.got[h.ID]:
			bad = true
		}
		bad = bad || seen[h.SeatID]
		seen[h.SeatID] = true
	}
	if bad {
		// Recorded against no seat: checkAcks names it.
		o.Result, o.Err = resUnknown, fmt.Sprintf("bad %s answer %q", cl.chooser, resp)
		l.countChosen(cl.chooser, resUnknown)
		l.badChosen(o)
		return
	}
	l.countChosen(cl.chooser, resCreated)
	if len(mine) > 0 {
		l.countChosen(cl.chooser, resExisting)
	}
	for _, h := range got.Holds {
		x := o
		// A 200 is a repeat's answer naming the holds its first request
		// made: within this one logical request, they were created.
		x.Seat, x.Hold, x.Until, x.Result = h.SeatID, h.ID, h.HeldUntil, resCreated
		if mine[h.SeatID] {
			x.Result = resExisting
		} else if !slices.ContainsFunc(cl.holds, func(y heldSeat) bool { return y.hold == h.ID }) {
			cl.got[h.ID] = true
			cl.holds = append(cl.holds, heldSeat{seat: h.SeatID, hold: h.ID, until: h.HeldUntil, via: cl.chooser})
		}
		l.rec.add(x)
	}
}

// waitlist is one step of a buyer in the waitlist: join the line (for one
// seat of waitSection) when not in it, else look at its entries and take
// in an offer made since. An offered seat is recorded as a hold of that
// seat from the first join since the last offer (no offer can come
// before it) to the answer naming it; from then on the buyer treats it
// like any hold (releases it, buys it, asks for it again or walks away).
// An offer whose hold ended before the buyer saw it is only counted.
func (l *load) waitlist(ctx context.Context, n *node, cl *client) {
	if cl.offersSeen == nil {
		cl.offersSeen = map[uuid.UUID]bool{}
	}
	base := "/api/v1/events/" + l.c.event.ID.String()
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	status, body, err := cl.call(rctx, n, http.MethodGet, base+"/waitlist/mine", nil, nil)
	if res, _ := classify(status, body, err); res != resOK {
		l.noteChosen(viaWaitlist, "mine/"+res.String())
		return
	}
	var mine struct {
		Entries []struct {
			ID      uuid.UUID   `json:"id"`
			Status  string      `json:"status"`
			HoldIDs []uuid.UUID `json:"hold_ids"`
			Offer   string      `json:"offer"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(body, &mine); err != nil {
		l.badChosen(op{Client: cl.idx, User: cl.user.ID, Kind: opHold, Via: viaWaitlist, Node: n.name, Call: time.Now(),
			Result: resUnknown, Err: fmt.Sprintf("bad waitlist/mine answer %q", body)})
		return
	}
	seen := time.Now()
	waiting := false
	for _, e := range mine.Entries {
		switch {
		case e.Status == "waiting":
			waiting = true
		case e.Status == "offered" && !cl.offersSeen[e.ID]:
			cl.offersSeen[e.ID] = true
			l.takeOffer(rctx, n, cl, e.HoldIDs, e.Offer, seen)
			cl.waitingSince = time.Time{}
		}
	}
	if waiting {
		time.Sleep(25 * time.Millisecond) // a buyer glancing at the line, not polling it flat out
		return
	}
	if len(cl.holds) > 0 {
		return
	}
	o := op{Client: cl.idx, User: cl.user.ID, Kind: opHold, Via: viaWaitlist, Node: n.name, Call: time.Now()}
	if cl.waitingSince.IsZero() {
		cl.waitingSince = o.Call
	}
	status, body, err = cl.call(rctx, n, http.MethodPost, base+"/waitlist", map[string]any{"count": 1, "section": waitSection}, nil)
	res, code := classify(status, body, err)
	if res == resOK && status != http.StatusCreated {
		res, code = resUnknown, fmt.Sprintf("join answered %d", status)
	}
	if res == resRefused && code != "" {
		code = "(" + code + ")"
	} else {
		code = ""
	}
	l.noteChosen(viaWaitlist, "join/"+res.String()+code)
}

// takeOffer takes in an offer of holds seen in the buyer's entries at
// seen: each hold still active is recorded and kept.
func (l *load) takeOffer(ctx context.Context, n *node, cl *client, holds []uuid.UUID, state string, seen time.Time) {
	if state != "held" {
		l.noteChosen(viaWaitlist, "offer_"+state+"_unseen")
		return
	}
	status, body, err := cl.call(ctx, n, http.MethodGet, "/api/v1/events/"+l.c.event.ID.String()+"/holds/mine", nil, nil)
	if res, _ := classify(status, body, err); res != resOK {
		// Seen offered and held: the holds exist; unrecorded, a later
		// refusal of their seats only reads as stale to the checker.
		l.noteChosen(viaWaitlist, "offer_holds_unread")
		return
	}
	var got struct {
		Holds []holdAnswer `json:"holds"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		l.badChosen(op{Client: cl.idx, User: cl.user.ID, Kind: opHold, Via: viaWaitlist, Node: n.name, Call: seen,
			Result: resUnknown, Err: fmt.Sprintf("bad holds/mine answer %q", body)})
		return
	}
	for _, id := range holds {
		i := slices.IndexFunc(got.Holds, func(h holdAnswer) bool { return h.ID == id })
		if i < 0 {
			l.noteChosen(viaWaitlist, "offer_lapsed_unseen")
			continue
		}
		h := got.Holds[i]
		call := cl.waitingSince
		if call.IsZero() {
			call = l.born // not joined since its last offer: unknown, bounded by the run
		}
		l.rec.add(op{Client: cl.idx, User: cl.user.ID, Kind: opHold, Via: viaWaitlist, Node: n.name, Seat: h.SeatID, Hold: h.ID,
			Until: h.HeldUntil, Result: resCreated, Status: http.StatusCreated, Call: call, Return: time.Now()})
		cl.holds = append(cl.holds, heldSeat{seat: h.SeatID, hold: h.ID, until: h.HeldUntil, via: viaWaitlist})
		l.noteChosen(viaWaitlist, "offer_taken")
	}
}

// badChosen keeps a malformed answer to a choosing request, for the
// checks to report.
func (l *load) badChosen(o op) {
	l.chosenMu.Lock()
	defer l.chosenMu.Unlock()
	l.bad = append(l.bad, o)
}

func (l *load) release(ctx context.Context, n *node, cl *client, h heldSeat) {
	o := op{Client: cl.idx, User: cl.user.ID, Kind: opRelease, Seat: h.seat, Hold: h.hold, Hot: h.hot, Node: n.name, Call: time.Now()}
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	status, body, err := cl.call(rctx, n, http.MethodDelete, "/api/v1/holds/"+h.hold.String(), nil, nil)
	cancel()
	o.Return, o.Status = time.Now(), status
	o.Result, o.Err = classify(status, body, err)
	if o.Result == resOK && status != http.StatusNoContent {
		o.Result, o.Err = resUnknown, fmt.Sprintf("release answered %d", status)
	}
	l.rec.add(o)
}

// purchase buys one hold, retrying an unknown outcome under the same
// Idempotency-Key (on any process) for a while: it is one logical operation
// from the first call to the last answer.
func (l *load) purchase(ctx context.Context, cl *client, h heldSeat) {
	key := uuid.NewString()
	o := op{Client: cl.idx, User: cl.user.ID, Kind: opPurchase, Seat: h.seat, Hold: h.hold, Call: time.Now()}
	hdr := http.Header{"Idempotency-Key": {key}}
	var first uuid.UUID
	for attempt := 0; attempt < 6; attempt++ {
		n := l.pick()
		if n == nil {
			time.Sleep(100 * time.Millisecond) // every process is down: a buyer waiting before the next try
			continue
		}
		o.Node = n.name
		o.Attempts++
		o.Tried = append(o.Tried, n.name)
		rctx, cancel := context.WithTimeout(ctx, l.timeout)
		status, body, err := cl.call(rctx, n, http.MethodPost, "/api/v1/events/"+l.c.event.ID.String()+"/purchase",
			map[string][]string{"hold_ids": {h.hold.String()}}, hdr)
		cancel()
		o.Return, o.Status = time.Now(), status
		o.Result, o.Err = classify(status, body, err)
		if o.Result == resOK {
			var b struct {
				ID      uuid.UUID `json:"id"`
				Tickets []struct {
					SeatID uuid.UUID `json:"seat_id"`
				} `json:"tickets"`
			}
			switch {
			case json.Unmarshal(body, &b) != nil || len(b.Tickets) != 1 || b.Tickets[0].SeatID != h.seat:
				o.Result, o.Err = resUnknown, fmt.Sprintf("bad booking %q", body)
			case first != uuid.Nil && b.ID != first:
				o.Err = fmt.Sprintf("replay returned booking %s, first was %s", b.ID, first)
			}
			if status == http.StatusCreated {
				first = b.ID
			}
			cl.sold[h.seat] = true
		}
		if o.Result != resUnknown {
			break
		}
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond) // a client's back-off before repeating the request
	}
	l.rec.add(o)
}

// summary of results by kind, for logs.
func summarize(ops []op) string {
	counts := map[string]int{}
	for _, o := range ops {
		counts[o.Kind.String()+"/"+o.Result.String()]++
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	return strings.TrimSpace(b.String())
}
