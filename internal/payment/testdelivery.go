package payment

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/stripe/stripe-go/v82/webhook"
)

// Delivery limits of the test provider. A delivery that keeps failing is
// dropped: the payment flow's reconciler asks Retrieve about payments that
// stay processing, which is how a lost Stripe webhook is found too.
const (
	maxQueued        = 10_000           // deliveries waiting (delayed cards and retries)
	maxSendAttempts  = 8                // sends of one event before it is dropped
	firstRetryDelay  = time.Second      // doubles per failed send
	maxRetryDelay    = time.Minute      //
	deliveryBodyPeek = 512              // bytes of a refusal's body kept for the log
	deliveryAgent    = "seatd-test-pay" // User-Agent of the test provider's events
)

// delivery is one event waiting in the test provider's queue: a built
// event to send again, or a delayed card's success to send at its time.
type delivery struct {
	at       time.Time
	body     []byte // the event; nil for a settle
	intentID string // the intent it is about; for a settle, whose success to announce
	attempts int    // failed sends so far
}

// deliveries is the bounded queue Run works through.
type deliveries struct {
	mu    sync.Mutex
	items []delivery
	wake  chan struct{}
}

func newDeliveries() *deliveries { return &deliveries{wake: make(chan struct{}, 1)} }

// add queues d and wakes Run; a full queue drops d (logged).
func (q *deliveries) add(d delivery, log *slog.Logger) {
	q.mu.Lock()
	full := len(q.items) >= maxQueued
	if !full {
		q.items = append(q.items, d)
	}
	q.mu.Unlock()
	if full {
		log.Warn("test payments: delivery queue full; event dropped", "intent", d.intentID)
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes the deliveries due at now and answers when the next one is.
func (q *deliveries) take(now time.Time) (due []delivery, next time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.items[:0]
	for _, d := range q.items {
		switch {
		case !d.at.After(now):
			due = append(due, d)
		default:
			kept = append(kept, d)
			if next.IsZero() || d.at.Before(next) {
				next = d.at
			}
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
	return due, next
}

// Pending is how many deliveries wait for Run (delayed cards, retries).
func (p *TestProvider) Pending() int {
	p.queue.mu.Lock()
	defer p.queue.mu.Unlock()
	return len(p.queue.items)
}

// Run sends what is due — delayed cards' successes and retries of failed
// sends — until ctx ends. What is still queued then is lost with the
// process; the ledger still answers Retrieve for it.
func (p *TestProvider) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, next := p.queue.take(time.Now())
		for _, d := range due {
			if ctx.Err() != nil {
				return
			}
			p.fire(ctx, d)
		}
		if len(due) > 0 {
			continue // sending took time; look again before sleeping
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-p.queue.wake:
		case <-timer.C:
		}
	}
}

// fire sends one due delivery, queueing it again after a failure.
func (p *TestProvider) fire(ctx context.Context, d delivery) {
	if d.body == nil {
		in, err := p.ledger.Intent(ctx, d.intentID)
		if err != nil {
			p.retry(d, fmt.Errorf("read intent: %w", err))
			return
		}
		in = in.settled(time.Now())
		switch in.Status {
		case Processing: // not yet (a clock step): wait for its time
			d.at = in.SettlesAt
			p.queue.add(d, p.log)
			return
		case Succeeded:
			d.body = intentEvent(in, EventIntentSucceeded)
		default:
			return
		}
	}
	if err := p.send(ctx, d.body); err != nil {
		p.retry(d, err)
	}
}

func (p *TestProvider) retry(d delivery, err error) {
	d.attempts++
	if d.attempts >= maxSendAttempts {
		p.log.Error("test payments: event not delivered; giving up", "intent", d.intentID, "attempts", d.attempts, "err", err)
		return
	}
	delay := min(firstRetryDelay<<(d.attempts-1), maxRetryDelay)
	p.log.Warn("test payments: event not delivered; will retry", "intent", d.intentID, "in", delay, "err", err)
	d.at = time.Now().Add(delay)
	p.queue.add(d, p.log)
}

// publish sends an event now, from the request that caused it, and hands
// it to Run for retries if that fails.
func (p *TestProvider) publish(ctx context.Context, intentID string, body []byte) {
	if err := p.send(ctx, body); err != nil {
		p.retry(delivery{body: body, intentID: intentID}, err)
	}
}

// send posts one event to the webhook endpoint, signed as Stripe signs
// (stripe-go's own signing, timestamp now). Any 2xx is delivered.
func (p *TestProvider) send(ctx context.Context, body []byte) error {
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: p.secret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set(SignatureHeader, signed.Header)
	req.Header.Set("User-Agent", deliveryAgent)
	res, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	peek, _ := io.ReadAll(io.LimitReader(res.Body, deliveryBodyPeek))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20)) // reuse the connection
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("webhook endpoint answered %s: %s", res.Status, bytes.TrimSpace(peek))
	}
	return nil
}
