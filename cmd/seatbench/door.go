package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Door is the door's check-in API under a closed loop of scanners, beside
// GET /api/v1/me at the same concurrency in the same run (the reference:
// an authenticated request that does no work of its own), and the time
// from a sale to its confirmation mail in the mail server.
type Door struct {
	Tickets  int     `json:"tickets"`
	Scanners int     `json:"scanners"`
	PerSec   float64 `json:"scans_per_s"`
	Scan     Latency `json:"scan"`
	Refused  int     `json:"refused"` // first scans not answered 201
	// Rescan is a second scan of admitted tickets: 409 already_admitted,
	// answered from the recent-scan cache.
	Rescan    Latency `json:"rescan"`
	RefPerSec float64 `json:"ref_per_s"`
	Ref       Latency `json:"ref_me"`
	// Sales paced one at a time, each timed from just before its purchase
	// request to the confirmation's arrival in Mailpit (its Created time):
	// rendering (QR codes, PDF), the outbox and SMTP included.
	Sales      int     `json:"sales"`
	SaleToMail Latency `json:"sale_to_mail"`
	MailMissed int     `json:"mail_missed"`
}

// phaseDoor sells an event's seats ten to a booking, times the first
// sales' mail, waits for the rest of the mail to go out, then scans every
// ticket once with s scanners in a closed loop (each records its request's
// start and duration; a closed loop does not correct for coordinated
// omission), scans some again, and runs the reference the same way.
func (b *bench) phaseDoor(ctx context.Context) error {
	b.procs.stopNamed("main", "fallback", "live", "expiry", "waitlist")
	smtp, inbox := b.services["SEATD_SMTP_URL"], b.services["SEATD_MAILPIT_URL"]
	if smtp == "" || inbox == "" {
		return fmt.Errorf("services.sh exported no SEATD_SMTP_URL / SEATD_MAILPIT_URL: the door phase needs the bench Mailpit")
	}
	// The bench Mailpit keeps earlier runs' mail to the same buyers.
	if err := emptyInbox(ctx, inbox); err != nil {
		return err
	}
	s, err := b.procs.start(ctx, "door", map[string]string{"SEATD_SMTP_URL": smtp})
	if err != nil {
		return err
	}
	defer b.procs.stop(s)
	const perSale = 10
	n := min(b.cfg.doorTickets, perSale*len(b.fx.buyers))
	ev, seats, err := b.fx.newEvent(ctx, "door", n, false)
	if err != nil {
		return err
	}
	if _, err := b.db.Exec(ctx, `UPDATE events SET status = 'on_sale' WHERE org_id = $1 AND id = $2`, b.fx.orgID, ev); err != nil {
		return err
	}
	if err := b.load.warm(ctx, []*server{s}, ev); err != nil {
		return err
	}
	sales := (n + perSale - 1) / perSale
	d := &Door{Tickets: n, Scanners: b.cfg.doorScanners, Sales: min(b.cfg.doorMailSales, sales)}
	codes := make([][]string, sales)
	sold := make([]time.Time, sales) // just before each paced sale's purchase
	sell := func(i int) error {
		seatsOf := seats[i*perSale : min((i+1)*perSale, n)]
		at, cs, err := sale(ctx, s, b.fx.buyers[i], ev, seatsOf)
		sold[i], codes[i] = at, cs
		return err
	}
	// The timed sales one at a time, a little apart, so each mail is
	// rendered and sent on its own; then the rest at once.
	for i := range d.Sales {
		if err := sell(i); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := parallel(ctx, 8, sales-d.Sales, func(i int) error { return sell(d.Sales + i) }); err != nil {
		return err
	}
	b.log.printf("door: %d tickets sold in %d bookings", n, sales)
	if err := d.mail(ctx, inbox, b.fx.buyers[:sales], sold[:d.Sales]); err != nil {
		return err
	}

	var all []string
	for _, cs := range codes {
		all = append(all, cs...)
	}
	scan := func(i int) (int, []byte, error) {
		body := `{"code":"` + all[i%len(all)] + `","entrance":"Gate ` + strconv.Itoa(i%4+1) + `"}`
		return s.call(ctx, b.fx.organizer, http.MethodPost, "/api/v1/events/"+ev+"/checkins", []byte(body))
	}
	var refused atomic.Int64
	var once sync.Once
	d.Scan, d.PerSec, err = closedLoop(ctx, d.Scanners, len(all), func(i int) error {
		code, answer, err := scan(i)
		if err == nil && code != http.StatusCreated {
			refused.Add(1)
			once.Do(func() { b.log.printf("door: a first scan answered %d %s", code, answer) })
		}
		return err
	})
	if err != nil {
		return err
	}
	d.Refused = int(refused.Load())
	again := min(len(all), 500)
	if d.Rescan, _, err = closedLoop(ctx, d.Scanners, again, func(i int) error {
		code, answer, err := scan(i)
		if err == nil && code != http.StatusConflict {
			return fmt.Errorf("second scan of ticket %d answered %d %s, want 409", i, code, answer)
		}
		return err
	}); err != nil {
		return err
	}
	d.Ref, d.RefPerSec, err = closedLoop(ctx, d.Scanners, len(all), func(int) error {
		code, _, err := s.call(ctx, b.fx.organizer, http.MethodGet, "/api/v1/me", nil)
		if err == nil && code != http.StatusOK {
			return fmt.Errorf("GET /api/v1/me answered %d", code)
		}
		return err
	})
	if err != nil {
		return err
	}
	b.rep.Door = d
	b.log.printf("door: %d scans by %d scanners, %.0f/s, p99 %.1f ms (GET /api/v1/me p99 %.1f ms), %d refused; sale → mail p99 %.0f ms, %d missed",
		len(all), d.Scanners, d.PerSec, d.Scan.P99, d.Ref.P99, d.Refused, d.SaleToMail.P99, d.MailMissed)
	return nil
}

// sale holds seats for buyer and buys them; it answers when the purchase
// was sent and the tickets' codes.
func sale(ctx context.Context, s *server, buyer *session, event string, seats []string) (time.Time, []string, error) {
	body, _ := json.Marshal(map[string]any{"seat_ids": seats})
	code, raw, err := s.call(ctx, buyer, http.MethodPost, "/api/v1/events/"+event+"/holds", body)
	if err != nil || code != http.StatusCreated {
		return time.Time{}, nil, fmt.Errorf("door hold: %d %s %v", code, raw, err)
	}
	var held struct {
		Holds []struct {
			ID string `json:"id"`
		} `json:"holds"`
	}
	if err := json.Unmarshal(raw, &held); err != nil {
		return time.Time{}, nil, err
	}
	ids := make([]string, len(held.Holds))
	for i, h := range held.Holds {
		ids[i] = h.ID
	}
	body, _ = json.Marshal(map[string]any{"hold_ids": ids})
	at := time.Now()
	code, raw, err = s.call(ctx, buyer, http.MethodPost, "/api/v1/events/"+event+"/purchase", body, "Idempotency-Key: door-"+ids[0])
	if err != nil || code != http.StatusCreated {
		return at, nil, fmt.Errorf("door purchase: %d %s %v", code, raw, err)
	}
	var booking struct {
		ID      string `json:"id"`
		Tickets []struct {
			Code string `json:"code"`
		} `json:"tickets"`
	}
	if err := json.Unmarshal(raw, &booking); err != nil {
		return at, nil, err
	}
	// The purchase's answer is the booking; its tickets' codes come with
	// the booking as the buyer reads it.
	code, raw, err = s.call(ctx, buyer, http.MethodGet, "/api/v1/bookings/"+booking.ID, nil)
	if err != nil || code != http.StatusOK {
		return at, nil, fmt.Errorf("read booking: %d %s %v", code, raw, err)
	}
	if err := json.Unmarshal(raw, &booking); err != nil {
		return at, nil, err
	}
	codes := make([]string, len(booking.Tickets))
	for i, t := range booking.Tickets {
		codes[i] = t.Code
	}
	return at, codes, nil
}

// emptyInbox deletes every message of the Mailpit at inbox.
func emptyInbox(ctx context.Context, inbox string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, inbox+"/api/v1/messages", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("empty the bench Mailpit: %w", err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("empty the bench Mailpit: %s", res.Status)
	}
	return nil
}

// mail waits until Mailpit holds a confirmation for every buyer (the whole
// queue drained, so scans do not share the cores with mail rendering) and
// times the paced sales' mail from their purchase.
func (d *Door) mail(ctx context.Context, inbox string, buyers []*session, sold []time.Time) error {
	hc := &http.Client{Timeout: 10 * time.Second}
	first := map[string]time.Time{} // address → the earliest mail to it
	deadline := time.Now().Add(2 * time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, inbox+"/api/v1/messages?limit="+strconv.Itoa(4*len(buyers)+100), nil)
		if err != nil {
			return err
		}
		res, err := hc.Do(req)
		if err != nil {
			return fmt.Errorf("mailpit: %w", err)
		}
		var page struct {
			Messages []struct {
				To []struct {
					Address string
				}
				Created time.Time
			}
		}
		err = json.NewDecoder(res.Body).Decode(&page)
		_ = res.Body.Close()
		if err != nil {
			return fmt.Errorf("mailpit: %w", err)
		}
		for _, m := range page.Messages {
			for _, to := range m.To {
				a := strings.ToLower(to.Address)
				if t, ok := first[a]; !ok || m.Created.Before(t) {
					first[a] = m.Created
				}
			}
		}
		got := 0
		for _, bu := range buyers {
			if _, ok := first[bu.email]; ok {
				got++
			}
		}
		if got == len(buyers) || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var lat []float64
	for i, at := range sold {
		t, ok := first[buyers[i].email]
		if !ok {
			d.MailMissed++
			continue
		}
		lat = append(lat, ms(t.Sub(at)))
	}
	d.SaleToMail = latencyOf(lat)
	return ctx.Err()
}
