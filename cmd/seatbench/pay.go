package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Payments is a flash sale paid through the built-in test provider
// (SEATD_PAYMENTS=required, no Stripe keys: docs/payments.md) against the
// same sale with payments off, each on a fresh process and event of its
// own: Buyers buyers in a closed loop, each sale SeatsPerSale seats.
type Payments struct {
	Buyers       int `json:"buyers"`
	SeatsPerSale int `json:"seats_per_sale"`
	// Off: hold, then POST .../purchase (booked at once).
	Off *SaleRun `json:"without_payment"`
	// On: hold, POST .../payments (the checkout), the test provider's
	// card page read for its form, the form posted with the card that
	// succeeds: the provider confirms and sends the signed
	// payment_intent.succeeded to POST /webhooks/stripe from inside that
	// request, and the webhook books; the payment is then read back and
	// must carry its booking.
	On *SaleRun `json:"with_payment"`
}

// SaleRun is one sale run. Sale is each sale's time from its hold
// request to its booking; Pay (payments on) the card form's post, from
// sending it to its answer, which comes once the webhook it caused has
// made the booking. All timed from each request's own start, in a closed
// loop (no correction for coordinated omission).
type SaleRun struct {
	Sales   int     `json:"sales"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"sales_per_s"`
	Sale    Latency `json:"sale"`
	Hold    Latency `json:"hold"`
	Pay     Latency `json:"pay_to_booking,omitzero"`
	// Checked in Postgres afterwards: seats sold and the tickets of the
	// event, and seats with more than one live ticket.
	SeatsSold  int `json:"seats_sold"`
	Tickets    int `json:"tickets"`
	SeatsTwice int `json:"seats_sold_twice"`
	// Unbooked: payments read back without their booking.
	Unbooked int `json:"unbooked,omitempty"`
	// CPU is the processor time of the run by party, and CPUPerSale
	// seatd's, Postgres's and the load generator's per sale, in ms: where
	// a paid sale's extra cost goes.
	CPU        CPU        `json:"cpu"`
	CPUPerSale CPUPerSale `json:"cpu_ms_per_sale"`
}

// CPUPerSale is a run's processor time per sale, in milliseconds.
type CPUPerSale struct {
	Seatd    float64 `json:"seatd"`
	Postgres float64 `json:"postgres"`
	Redis    float64 `json:"redis"`
	Client   float64 `json:"client"`
}

func (b *bench) phasePay(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live", "expiry", "waitlist", "door", "room")
	buyers := b.fx.buyers[:min(b.cfg.payBuyers, len(b.fx.buyers))]
	p := &Payments{Buyers: len(buyers), SeatsPerSale: 2}
	var err error
	if p.Off, err = b.saleRun(ctx, "pay-off", buyers, p.SeatsPerSale, false); err != nil {
		return fmt.Errorf("without payment: %w", err)
	}
	if p.On, err = b.saleRun(ctx, "pay-on", buyers, p.SeatsPerSale, true); err != nil {
		return fmt.Errorf("with payment: %w", err)
	}
	b.rep.Payments = p
	for _, r := range []struct {
		name string
		run  *SaleRun
	}{{"without payment", p.Off}, {"with payment", p.On}} {
		c := r.run.CPUPerSale
		b.log.printf("pay: %s: CPU per sale %.1f ms seatd, %.1f ms Postgres, %.1f ms Redis, %.1f ms load generator (others %.0f%%)",
			r.name, c.Seatd, c.Postgres, c.Redis, c.Client, 100*r.run.CPU.otherShare())
	}
	b.log.printf("pay: %.0f sales/s with payment (p99 %.0f ms, pay → booking p99 %.1f ms), %.0f/s without (p99 %.0f ms); seats twice %d / %d",
		p.On.PerSec, p.On.Sale.P99, p.On.Pay.P99, p.Off.PerSec, p.Off.Sale.P99, p.On.SeatsTwice, p.Off.SeatsTwice)
	return nil
}

// saleRun sells cfg.paySales sales of per seats on a fresh process and a
// fresh priced event.
func (b *bench) saleRun(ctx context.Context, name string, buyers []*session, per int, pay bool) (*SaleRun, error) {
	env := map[string]string{"SEATD_PAYMENTS": "off"}
	if pay {
		// The built-in test provider: no Stripe keys, whatever the
		// environment holds.
		env = map[string]string{"SEATD_PAYMENTS": "required", "STRIPE_SECRET_KEY": "", "STRIPE_PUBLISHABLE_KEY": "", "STRIPE_WEBHOOK_SECRET": ""}
	}
	s, err := b.procs.start(ctx, name, env)
	if err != nil {
		return nil, err
	}
	defer b.procs.stop(s)
	n := b.cfg.paySales
	ev, seats, err := b.fx.newEvent(ctx, name, n*per, false)
	if err != nil {
		return nil, err
	}
	if err := b.fx.price(ctx, ev); err != nil {
		return nil, err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return nil, err
	}
	// Redirects are the answers measured (the card form's 303), not
	// followed.
	noFollow := &http.Client{Transport: s.http.Transport, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r := &SaleRun{Sales: n}
	saleLat := make([]float64, n)
	holdLat := make([]float64, n)
	payLat := make([]float64, n)
	var unbooked int
	var mu sync.Mutex
	if b.cfg.profilePay {
		// The whole run, or most of it: the profile's length is whole
		// seconds, and the run's is not known beforehand.
		prof := b.profileNamed(s, name, b.cfg.profileFor)
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Go(func() { prof(ctx) })
	}
	// Every booking queues its confirmation mail (ticket PDFs), written
	// by whichever process's mail worker gets to it. Mail of earlier
	// sales is written before the window, so a run is not charged for
	// another's (the run before it, or an earlier phase).
	if err := mailWritten(ctx, b.db, b.log, s, name, "before"); err != nil {
		return nil, err
	}
	cpu0 := b.procs.sampleCPU([]*server{s})
	start := time.Now()
	_, err = loop(ctx, len(buyers), n, time.Time{}, func(w, i int) error {
		buyer := buyers[w]
		t0 := time.Now()
		body, _ := json.Marshal(map[string]any{"seat_ids": seats[i*per : (i+1)*per]})
		code, raw, err := s.call(ctx, buyer, http.MethodPost, "/api/v1/events/"+ev+"/holds", body)
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("hold: %d %s %v", code, raw, err)
		}
		holdLat[i] = ms(time.Since(t0))
		key := fmt.Sprintf("Idempotency-Key: %s-%d", name, i)
		if !pay {
			var held struct {
				Holds []struct {
					ID string `json:"id"`
				} `json:"holds"`
			}
			if err := json.Unmarshal(raw, &held); err != nil {
				return err
			}
			ids := make([]string, len(held.Holds))
			for k, h := range held.Holds {
				ids[k] = h.ID
			}
			body, _ = json.Marshal(map[string]any{"hold_ids": ids})
			code, raw, err = s.call(ctx, buyer, http.MethodPost, "/api/v1/events/"+ev+"/purchase", body, key)
			if err != nil || code != http.StatusCreated {
				return fmt.Errorf("purchase: %d %s %v", code, raw, err)
			}
			saleLat[i] = ms(time.Since(t0))
			return nil
		}
		code, raw, err = s.call(ctx, buyer, http.MethodPost, "/api/v1/events/"+ev+"/payments", nil, key)
		if err != nil || code != http.StatusCreated {
			return fmt.Errorf("checkout: %d %s %v", code, raw, err)
		}
		var p struct {
			ID          string `json:"id"`
			RedirectURL string `json:"redirect_url"`
		}
		if err := json.Unmarshal(raw, &p); err != nil || p.RedirectURL == "" {
			return fmt.Errorf("checkout answered no redirect_url (is a Stripe key set?): %s", raw)
		}
		form, action, err := cardForm(ctx, s, buyer, p.RedirectURL)
		if err != nil {
			return err
		}
		t1 := time.Now()
		code, raw, err = sendWith(ctx, noFollow, s, buyer, http.MethodPost, action, "application/x-www-form-urlencoded", []byte(form.Encode()))
		payLat[i] = ms(time.Since(t1))
		if err != nil || code != http.StatusSeeOther {
			return fmt.Errorf("pay: %d %s %v", code, raw, err)
		}
		saleLat[i] = ms(time.Since(t0))
		code, raw, err = s.call(ctx, buyer, http.MethodGet, "/api/v1/payments/"+p.ID, nil)
		var got struct {
			Status    string `json:"status"`
			BookingID string `json:"booking_id"`
		}
		if err != nil || code != http.StatusOK || json.Unmarshal(raw, &got) != nil {
			return fmt.Errorf("read payment: %d %s %v", code, raw, err)
		}
		if got.BookingID == "" {
			mu.Lock()
			unbooked++
			mu.Unlock()
		}
		return nil
	})
	r.Seconds = round3(time.Since(start).Seconds())
	r.CPU = cpu0.to(b.procs.sampleCPU([]*server{s}))
	if err != nil {
		return nil, err
	}
	// This run's own mail, written by its process after the window.
	if err := mailWritten(ctx, b.db, b.log, s, name, "after"); err != nil {
		return nil, err
	}
	perSale := func(secs float64) float64 { return round3(secs * 1000 / float64(n)) }
	r.CPUPerSale = CPUPerSale{Seatd: perSale(r.CPU.Seatd), Postgres: perSale(r.CPU.Postgres), Redis: perSale(r.CPU.Redis), Client: perSale(r.CPU.Client)}
	r.PerSec = round3(float64(n) / r.Seconds)
	r.Sale, r.Hold = latencyOf(saleLat), latencyOf(holdLat)
	if pay {
		r.Pay = latencyOf(payLat)
	}
	r.Unbooked = unbooked
	err = b.db.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM seats WHERE org_id = $1 AND event_id = $2 AND status = 'sold'),
		       (SELECT count(*) FROM tickets WHERE org_id = $1 AND event_id = $2),
		       (SELECT count(*) FROM (SELECT seat_id FROM tickets WHERE org_id = $1 AND event_id = $2 AND cancelled_at IS NULL
		                              GROUP BY seat_id HAVING count(*) > 1) t)`, b.fx.orgID, ev).Scan(&r.SeatsSold, &r.Tickets, &r.SeatsTwice)
	return r, err
}

var (
	formAction = regexp.MustCompile(`<form[^>]*data-testid="card-form"[^>]*>`)
	attrAction = regexp.MustCompile(`action="([^"]*)"`)
	hiddenPair = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*>`)
	attrName   = regexp.MustCompile(`name="([^"]*)"`)
	attrValue  = regexp.MustCompile(`value="([^"]*)"`)
)

// cardForm reads the test provider's card page as a browser would and
// answers its form filled with the card that succeeds, and where it goes.
func cardForm(ctx context.Context, s *server, buyer *session, page string) (url.Values, string, error) {
	code, raw, err := s.call(ctx, buyer, http.MethodGet, page, nil)
	if err != nil || code != http.StatusOK {
		return nil, "", fmt.Errorf("card page: %d %v", code, err)
	}
	tag := formAction.Find(raw)
	m := attrAction.FindSubmatch(tag)
	if m == nil {
		return nil, "", fmt.Errorf("card page %s has no card form", page)
	}
	form := url.Values{}
	for _, in := range hiddenPair.FindAll(raw, -1) {
		nm, v := attrName.FindSubmatch(in), attrValue.FindSubmatch(in)
		if nm != nil && v != nil {
			form.Set(html.UnescapeString(string(nm[1])), html.UnescapeString(string(v[1])))
		}
	}
	if form.Get("client_secret") == "" {
		return nil, "", fmt.Errorf("card page %s has no client_secret", page)
	}
	form.Set("number", "4242424242424242")
	form.Set("expiry", "12/"+strconv.Itoa((time.Now().Year()+2)%100))
	form.Set("cvc", "123")
	form.Set("name", "Seatbench Buyer")
	return form, html.UnescapeString(string(m[1])), nil
}

// sendWith is server.send through another client (one that does not
// follow redirects).
func sendWith(ctx context.Context, hc *http.Client, s *server, sess *session, method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Cookie", sess.cookie)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// price puts every seat of event in one category with a price (a payment
// needs seats that cost something).
func (fx *fixture) price(ctx context.Context, event string) error {
	if _, err := fx.db.Exec(ctx, `INSERT INTO event_categories (org_id, event_id, key, name, price_minor, currency)
		VALUES ($1, $2, 'std', 'Standard', 4500, 'EUR')`, fx.orgID, event); err != nil {
		return err
	}
	if _, err := fx.db.Exec(ctx, `UPDATE seats SET category = 'std' WHERE org_id = $1 AND event_id = $2`, fx.orgID, event); err != nil {
		return err
	}
	// The update's dead rows out of the measured window, as newEvent does.
	_, err := fx.db.Exec(ctx, `VACUUM (ANALYZE) seats`)
	return err
}

// mailWritten waits (at most two minutes) until the booking mail queue
// in db is empty, s's mail worker writing it, and logs how much there was.
func mailWritten(ctx context.Context, db *pgxpool.Pool, log *progress, s *server, run, when string) error {
	var queued int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM booking_mail`).Scan(&queued); err != nil || queued == 0 {
		return err
	}
	t0 := time.Now()
	for left := queued; left > 0; {
		if time.Since(t0) > 2*time.Minute {
			return fmt.Errorf("%s: %d of %d booking mails still queued after 2 minutes", run, left, queued)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(200 * time.Millisecond):
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM booking_mail`).Scan(&left); err != nil {
			return err
		}
	}
	log.printf("%s: %d queued booking mails written by %s %s the window, in %.1fs", run, queued, s.name, when, time.Since(t0).Seconds())
	return nil
}
