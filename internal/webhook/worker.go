package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"seatd/internal/notify"
	"seatd/internal/store"
	"seatd/internal/telemetry"
)

// Options are the worker's settings (see config: SEATD_WEBHOOK_*).
type Options struct {
	AllowPrivate bool          // deliver to loopback and private addresses (tests, closed networks)
	Timeout      time.Duration // one attempt, connect to answer
	RetryFor     time.Duration // give up on a delivery this long after its change
	Backoff      time.Duration // wait after the first failure; doubles per failure
	BackoffMax   time.Duration // longest wait between attempts
	Poll         time.Duration // how often an idle worker looks for due deliveries, a backstop to DeliveriesChannel
	Batch        int           // deliveries claimed at once
	Concurrency  int           // attempts in flight at once per worker, besides the probes
	Probes       int           // attempts to failing endpoints in flight at once per worker (see probe.go)
	// Keep is how long delivered and given-up deliveries stay listed.
	Keep time.Duration
}

// Worker sends due deliveries. Every process runs one; they share the
// outbox safely (see store.ClaimDeliveries).
//
// A hand-written worker rather than a job queue such as river: the outbox
// rows are written by a trigger in the change's own transaction (the hold
// core does not know webhooks exist), which a queue's insert API cannot
// do without writing into its private tables; and deliveries must go out
// in order per endpoint and seat, which river does not offer (its
// sequences are a paid add-on). What the worker needs of a queue — SKIP
// LOCKED claims, a lease, backoff — is the one query in the store.
type Worker struct {
	st  *store.Webhooks
	n   notify.Subscriber
	hc  *http.Client
	o   Options
	log *slog.Logger
	m   *telemetry.Webhooks
	now func() time.Time
	// pruned is when Run last pruned (only its goroutine touches it).
	pruned time.Time
	// probing holds a place for each attempt to a failing endpoint in
	// flight; probes tracks their goroutines; a probe that ends sends on
	// probed, after lowering probeRetry to its retry's time (see
	// probe.go).
	probing    chan struct{}
	probes     sync.WaitGroup
	probed     chan struct{}
	mu         sync.Mutex
	probeRetry time.Time
}

// DeliveriesChannel is the Postgres notification channel on which the
// statements that queue deliveries (the outbox trigger, a redelivery)
// announce them, in their transaction (migration 029).
const DeliveriesChannel = "seatd_webhooks"

// NewWorker returns a worker on st that wakes on n's notifications.
func NewWorker(st *store.Webhooks, n notify.Subscriber, o Options, log *slog.Logger, m *telemetry.Webhooks) *Worker {
	tr := &http.Transport{
		// No proxy: a proxy would dial for us, past the address check.
		Proxy:                 nil,
		DialContext:           Dialer(o.AllowPrivate, o.Timeout).DialContext,
		MaxIdleConnsPerHost:   o.Concurrency,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
	}
	hc := &http.Client{Transport: tr, Timeout: o.Timeout,
		// A redirect is an answer, not a delivery: following it would
		// let a receiver point us anywhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Worker{st: st, n: n, hc: hc, o: o, log: log, m: m, now: time.Now, probing: make(chan struct{}, max(o.Probes, 1)),
		probed: make(chan struct{}, 1)}
}

// pruneEvery is how often a worker deletes old deliveries.
const pruneEvery = time.Hour

// maybePrune deletes deliveries finished more than Keep ago, a batch at a
// time, at most once per pruneEvery per worker (every worker may; the
// deletes do not conflict).
func (w *Worker) maybePrune(ctx context.Context) {
	now := w.now()
	if w.o.Keep <= 0 || now.Sub(w.pruned) < pruneEvery {
		return
	}
	w.pruned = now
	n, err := w.st.PruneDeliveries(ctx, now.Add(-w.o.Keep), 10_000)
	switch {
	case err != nil:
		w.log.Warn("prune webhook deliveries", "err", err)
	case n > 0:
		w.log.Info("pruned webhook deliveries", "count", n)
	}
}

// cooldown is the least time between two rounds woken by announcements,
// and the wait after a round that found deliveries but not a full batch
// (a delivery finished may let its seat's next one go): under a stream
// of changes a round takes what accumulated meanwhile.
const cooldown = 100 * time.Millisecond

// Run sends deliveries until ctx ends: it claims a batch, sends it, records
// the outcomes, and goes on at once while batches come back full, after
// cooldown while it finds any. Else it waits for deliveries announced
// (DeliveriesChannel; see notify.Work for when exactly), a retry it
// scheduled falling due, or Poll — a backstop for what it was not told of
// (another process's retries, announcements lost).
func (w *Worker) Run(ctx context.Context) {
	// Keep-alive connections to receivers end with the worker, after the
	// probes still in flight.
	defer w.hc.CloseIdleConnections()
	defer w.probes.Wait()
	var retryAt time.Time // the earliest retry scheduled here and not yet looked for
	s := notify.Schedule{Cooldown: cooldown, Settle: 250 * time.Millisecond, Backstop: w.o.Poll, Wake: w.probed}
	notify.Work(ctx, w.n, DeliveriesChannel, s, func(ctx context.Context) time.Duration {
		w.maybePrune(ctx)
		if !retryAt.After(w.now()) {
			retryAt = time.Time{} // due: this round looks for it
		}
		n, retry, err := w.once(ctx)
		for _, r := range []time.Time{retry, w.takeProbeRetry()} {
			if !r.IsZero() && (retryAt.IsZero() || r.Before(retryAt)) {
				retryAt = r
			}
		}
		soon := notify.Idle
		switch {
		case err != nil && ctx.Err() == nil:
			w.log.Warn("webhook deliveries", "err", err)
		case n == w.o.Batch:
			return 0
		case n > 0:
			soon = cooldown
		}
		if !retryAt.IsZero() {
			soon = min(soon, max(retryAt.Sub(w.now()), 0))
		}
		return soon
	})
}

// Once claims and sends one batch, returning how many were claimed, and
// waits for the batch's probes too.
func (w *Worker) Once(ctx context.Context) (int, error) {
	n, _, err := w.once(ctx)
	w.probes.Wait()
	return n, err
}

// once is Once, also returning when the earliest retry it scheduled is
// due (zero: none).
func (w *Worker) once(ctx context.Context) (int, time.Time, error) {
	claimed, err := w.st.ClaimDeliveries(ctx, w.o.Batch, cap(w.probing)-len(w.probing), w.o.Timeout+5*time.Second)
	if err != nil || len(claimed) == 0 {
		return 0, time.Time{}, err
	}
	ds := w.probe(ctx, claimed)
	out := make([]store.Attempt, len(ds))
	cut := make([]bool, len(ds))
	sem := make(chan struct{}, w.o.Concurrency)
	var wg sync.WaitGroup
	for i, d := range ds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], cut[i] = w.send(ctx, d)
		})
	}
	wg.Wait()
	if err := w.record(ctx, out, cut); err != nil {
		return len(claimed), time.Time{}, err
	}
	var retry time.Time
	for _, a := range out {
		if a.State == store.DeliveryPending && (retry.IsZero() || a.NextAt.Before(retry)) {
			retry = a.NextAt
		}
	}
	return len(claimed), retry, nil
}

// Body is the JSON a delivery posts.
type Body struct {
	ID        uuid.UUID       `json:"id"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"created_at"`
	EventID   *uuid.UUID      `json:"event_id"`
	Data      json.RawMessage `json:"data"`
}

// errNoAnswer is what a delivery's record says of any attempt that got no
// HTTP answer.
const errNoAnswer = "no answer: the connection failed or timed out"

// errUnsigned is an attempt not made: the endpoint's secret does not open
// (the log says why; it is the operator's to fix).
var errUnsigned = errors.New("not sent: the endpoint's signing secret could not be read; the operator has been told")

// record stores the outcomes of attempts, even when ctx ended meanwhile
// (shutdown): otherwise a delivered row would be sent again after the
// lease. Those cut short by that shutdown (cut[i]) are not outcomes: they
// go back to the outbox unrecorded (store.ReleaseDeliveries), where
// another process sends them at once, instead of counting as the
// receiver's failure, with a backoff and the endpoint marked failing.
func (w *Worker) record(ctx context.Context, as []store.Attempt, cut []bool) error {
	var done, back []store.Attempt
	for i, a := range as {
		if cut[i] {
			back = append(back, a)
		} else {
			done = append(done, a)
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return errors.Join(w.st.FinishDeliveries(fctx, done), w.st.ReleaseDeliveries(fctx, back))
}

// send makes one attempt and decides what follows it; cut says the
// attempt got no answer because ctx ended (the worker is stopping), so
// its outcome is not the receiver's.
func (w *Worker) send(ctx context.Context, d store.Claimed) (a store.Attempt, cut bool) {
	start := w.now()
	a = store.Attempt{Org: d.OrgID, Delivery: d.ID, At: start}
	body, err := json.Marshal(Body{ID: d.PublicID, Type: d.Type, CreatedAt: d.CreatedAt.UTC(), EventID: d.EventID, Data: d.Data})
	if err == nil && d.SecretErr != nil {
		err = errUnsigned
		w.log.Error("webhook delivery cannot be signed", "org", d.OrgID, "endpoint", d.EndpointID, "err", d.SecretErr)
	}
	if err == nil {
		a.Status, err = w.post(ctx, d, body, start)
		if err != nil && a.Status == 0 && ctx.Err() != nil {
			return a, true
		}
	}
	end := w.now()
	a.Duration = end.Sub(start)
	w.m.AttemptDuration.Observe(a.Duration.Seconds())
	switch {
	case err == nil:
		a.State = store.DeliveryDelivered
		a.NextAt = end
		w.m.Attempts.WithLabelValues("delivered").Inc()
		w.m.Latency.Observe(end.Sub(d.CreatedAt).Seconds())
		return a, false
	case errors.Is(err, ErrPrivateAddress):
		a.Error = "refused: the URL resolves to a loopback, private or reserved address"
	case errors.Is(err, ErrPort):
		a.Error = "refused: the URL's port is not 80, 443 or one from 1024 to 65535"
	case errors.Is(err, errUnsigned):
		a.Error = err.Error()
	case a.Status != 0:
		a.Error = err.Error() // "the receiver answered N"
	default:
		// Which of refused, reset, timed out or unreachable it was is kept
		// from the tenant: told apart, they would map the ports of any host
		// the URL names (a port scan through seatd). The log keeps it.
		a.Error = errNoAnswer
		w.log.Info("webhook attempt failed", "org", d.OrgID, "endpoint", d.EndpointID, "delivery", d.PublicID, "err", err)
	}
	next := end.Add(w.backoff(d.Attempts))
	if next.Sub(d.CreatedAt) > w.o.RetryFor {
		a.State, a.NextAt = store.DeliveryFailed, end
		w.m.Attempts.WithLabelValues("failed").Inc()
		w.log.Warn("webhook delivery given up", "delivery", d.PublicID, "endpoint", d.EndpointID, "attempts", d.Attempts, "err", a.Error)
		return a, false
	}
	a.State, a.NextAt = store.DeliveryPending, next
	w.m.Attempts.WithLabelValues("retry").Inc()
	return a, false
}

// post sends body; a 2xx answer is a delivery, anything else an error.
func (w *Worker) post(ctx context.Context, d store.Claimed, body []byte, at time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seatd-webhooks/1")
	req.Header.Set(SignatureHeader, Sign(d.Secrets, at, body))
	req.Header.Set("Seatd-Delivery", d.PublicID.String())
	res, err := w.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	// Drain a little so the connection can be reused; the answer's body
	// means nothing to us.
	_, _ = io.CopyN(io.Discard, res.Body, 4<<10)
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.StatusCode, errors.New("the receiver answered " + strconv.Itoa(res.StatusCode))
	}
	return res.StatusCode, nil
}

// backoff is the wait after the n-th failed attempt: Backoff doubled per
// failure, at most BackoffMax, with ±20 % jitter so that deliveries that
// failed together (a receiver down) do not all come back at once.
func (w *Worker) backoff(n int) time.Duration {
	d := w.o.BackoffMax
	if n <= 30 {
		d = min(w.o.Backoff<<max(n-1, 0), w.o.BackoffMax)
	}
	jitter := 0.8 + 0.4*rand.Float64() // #nosec G404 -- spreading retries needs no secrecy
	return time.Duration(float64(d) * jitter)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
