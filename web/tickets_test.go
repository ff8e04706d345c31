package web

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
	"seatd/internal/ticket"
)

// ticketFixture is an organization with a sold booking of three seats, a
// door user, and clients for the buyer, the door and the organizer.
type ticketFixture struct {
	s                       *testServer
	tn                      testenv.Tenant
	ev                      store.Event
	booking                 store.Booking
	buyer, other, door, org *client
	codes                   []string // the booking's tickets' codes, in ticket order
}

func newTicketFixture(t *testing.T) *ticketFixture {
	t.Helper()
	s := newTestServer(t, nil)
	tn := testenv.NewTenant(t, s.app, 2)
	ev := testenv.NewEvent(t, s.app, tn.Org.ID, 1, 1, 10)
	seats := testenv.SeatIDs(t, s.app, tn.Org.ID, ev.ID)
	hs := coreHold(t, s.app, tn.Buyers[0], ev.ID, seats[:3]...)
	ids := make([]uuid.UUID, len(hs))
	for i, h := range hs {
		ids[i] = h.ID
	}
	b, err := s.app.Holds.Purchase(context.Background(), actor(tn.Buyers[0]), ev.ID, uuid.NewString(), ids)
	if err != nil {
		t.Fatal(err)
	}
	door, err := s.app.Accounts.Create(context.Background(), tn.Org.ID, "door-"+uuid.NewString()[:8]+"@example.com", testenv.Password, "door")
	if err != nil {
		t.Fatal(err)
	}
	f := &ticketFixture{s: s, tn: tn, ev: ev, booking: b, buyer: s.as(tn.Org, tn.Buyers[0]), other: s.as(tn.Org, tn.Buyers[1]),
		door: s.as(tn.Org, door), org: s.as(tn.Org, tn.Organizer)}
	var got struct {
		Tickets []struct {
			ID   uuid.UUID `json:"id"`
			Code string    `json:"code"`
		} `json:"tickets"`
	}
	f.buyer.do("GET", "/api/v1/bookings/"+b.ID.String(), nil).want(t, http.StatusOK).json(t, &got)
	for _, tk := range got.Tickets {
		if len(tk.Code) != 151 {
			t.Fatalf("ticket %s code %q, want 151 characters", tk.ID, tk.Code)
		}
		f.codes = append(f.codes, tk.Code)
	}
	if len(f.codes) != 3 {
		t.Fatalf("%d codes, want 3", len(f.codes))
	}
	return f
}

func (f *ticketFixture) scan(c *client, code, entrance string) response {
	return c.do("POST", "/api/v1/events/"+f.ev.ID.String()+"/checkins", map[string]string{"code": code, "entrance": entrance})
}

// TestBuyerTickets: the buyer's booking page shows each ticket's QR code
// and links the PDF; My tickets and GET /api/v1/me/bookings list their
// bookings only; another buyer sees none of it.
func TestBuyerTickets(t *testing.T) {
	t.Parallel()
	f := newTicketFixture(t)
	t.Run("page", func(t *testing.T) {
		r := f.buyer.do("GET", "/bookings/"+f.booking.ID.String(), nil).want(t, http.StatusOK)
		page := string(r.body)
		if n := strings.Count(page, `data-testid="ticket-qr"`); n != 3 {
			t.Errorf("%d QR codes on the booking page, want 3", n)
		}
		for _, c := range f.codes {
			if !strings.Contains(page, c) {
				t.Errorf("the page does not carry code %s", c)
			}
		}
		if !strings.Contains(page, "/bookings/"+f.booking.ID.String()+"/tickets.pdf") {
			t.Error("the page does not link the PDF")
		}
	})
	t.Run("pdf", func(t *testing.T) {
		r := f.buyer.do("GET", "/bookings/"+f.booking.ID.String()+"/tickets.pdf", nil).want(t, http.StatusOK)
		if ct := r.header.Get("Content-Type"); ct != "application/pdf" || !bytes.HasPrefix(r.body, []byte("%PDF-")) {
			t.Errorf("Content-Type %q, body starts %q", ct, r.body[:min(8, len(r.body))])
		}
		f.other.do("GET", "/bookings/"+f.booking.ID.String()+"/tickets.pdf", nil).want(t, http.StatusNotFound)
	})
	t.Run("mine", func(t *testing.T) {
		var mine struct {
			Bookings []struct {
				ID          uuid.UUID `json:"id"`
				LiveTickets int       `json:"live_tickets"`
			} `json:"bookings"`
		}
		f.buyer.do("GET", "/api/v1/me/bookings", nil).want(t, http.StatusOK).json(t, &mine)
		if len(mine.Bookings) != 1 || mine.Bookings[0].ID != f.booking.ID || mine.Bookings[0].LiveTickets != 3 {
			t.Errorf("my bookings %+v, want the one booking with 3 live tickets", mine.Bookings)
		}
		f.other.do("GET", "/api/v1/me/bookings", nil).want(t, http.StatusOK).json(t, &mine)
		if len(mine.Bookings) != 0 {
			t.Errorf("another buyer's list %+v, want empty", mine.Bookings)
		}
		page := f.buyer.do("GET", "/me/tickets", nil).want(t, http.StatusOK)
		if !strings.Contains(string(page.body), store.FormatReference(f.booking.Reference)) {
			t.Error("My tickets does not list the booking")
		}
		f.door.do("GET", "/api/v1/me/bookings", nil).wantErr(t, http.StatusForbidden, "forbidden")
	})
}

// TestDoor: door staff admit each ticket once — a second scan says when
// and where it got in, under concurrency exactly one scan admits — refuse
// forged codes, other events' and cancelled tickets; offline scans sync
// once; buyers cannot scan; door staff cannot buy; another organization's
// door gets 404.
func TestDoor(t *testing.T) {
	t.Parallel()
	f := newTicketFixture(t)
	var res struct {
		Result   string `json:"result"`
		Entrance string `json:"entrance"`
		Seat     struct {
			Label string `json:"label"`
		} `json:"seat"`
	}
	f.scan(f.door, f.codes[0], "North").want(t, http.StatusCreated).json(t, &res)
	if res.Result != "admitted" || res.Seat.Label == "" {
		t.Fatalf("first scan %+v, want admitted with the seat", res)
	}
	f.scan(f.door, f.codes[0], "South").want(t, http.StatusConflict).json(t, &res)
	if res.Result != "already_admitted" || res.Entrance != "North" {
		t.Fatalf("second scan %+v, want already_admitted at North", res)
	}

	// Twenty scanners at once, one ticket: one admission.
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 20 {
		wg.Go(func() {
			r := f.scan(f.door, f.codes[1], "East")
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusCreated] != 1 || statuses[http.StatusConflict] != 19 {
		t.Fatalf("statuses %v, want one 201 and nineteen 409", statuses)
	}

	forged := []byte(f.codes[2])
	forged[len(forged)-2] ^= 1
	if forged[len(forged)-2] == f.codes[2][len(forged)-2] {
		t.Fatal("the forged code equals the real one")
	}
	f.scan(f.door, string(forged), "North").wantErr(t, http.StatusUnprocessableEntity, "invalid")
	f.scan(f.door, "not a ticket", "North").wantErr(t, http.StatusUnprocessableEntity, "invalid")
	f.scan(f.buyer, f.codes[2], "North").wantErr(t, http.StatusForbidden, "forbidden")
	f.door.do("POST", "/api/v1/events/"+f.ev.ID.String()+"/holds", map[string]any{"seat_ids": []string{uuid.NewString()}}).
		wantErr(t, http.StatusForbidden, "forbidden")

	// Another organization's door does not know this event.
	other := testenv.NewTenant(t, f.s.app, 0)
	od, err := f.s.app.Accounts.Create(context.Background(), other.Org.ID, "door@"+other.Org.Slug+".example", testenv.Password, "door")
	if err != nil {
		t.Fatal(err)
	}
	f.scan(f.s.as(other.Org, od), f.codes[2], "North").wantErr(t, http.StatusNotFound, "not_found")

	// The scanner's download, then an offline scan synced twice.
	var key struct {
		PublicKey string      `json:"public_key"`
		Admitted  []uuid.UUID `json:"admitted"`
	}
	f.door.do("GET", "/api/v1/events/"+f.ev.ID.String()+"/checkins/key", nil).want(t, http.StatusOK).json(t, &key)
	if key.PublicKey == "" || len(key.Admitted) != 2 {
		t.Fatalf("key %+v, want a public key and 2 admitted", key)
	}
	scans := map[string]any{"scans": []map[string]string{{"code": f.codes[2], "entrance": "Gate 4", "scanned_at": "2026-01-01T10:00:00Z"}}}
	var synced struct {
		Results []struct {
			Result string `json:"result"`
		} `json:"results"`
	}
	for range 2 {
		f.door.do("POST", "/api/v1/events/"+f.ev.ID.String()+"/checkins/sync", scans).want(t, http.StatusOK).json(t, &synced)
		if len(synced.Results) != 1 {
			t.Fatalf("sync results %+v", synced.Results)
		}
	}
	var counts struct {
		Counts struct {
			Admitted int `json:"admitted"`
			Expected int `json:"expected"`
		} `json:"counts"`
	}
	f.door.do("GET", "/api/v1/events/"+f.ev.ID.String()+"/checkins", nil).want(t, http.StatusOK).json(t, &counts)
	if counts.Counts.Admitted != 3 || counts.Counts.Expected != 3 {
		t.Fatalf("counts %+v, want 3 of 3 admitted", counts.Counts)
	}
	csv := f.org.do("GET", "/api/v1/events/"+f.ev.ID.String()+"/exports/checkins.csv", nil).want(t, http.StatusOK)
	if lines := strings.Count(strings.TrimSpace(string(csv.body)), "\n"); lines != 3 {
		t.Errorf("checkins.csv has %d rows, want 3:\n%s", lines, csv.body)
	}
	f.door.do("GET", "/api/v1/events/"+f.ev.ID.String()+"/exports/checkins.csv", nil).wantErr(t, http.StatusForbidden, "forbidden")

	// The door's pages.
	f.door.do("GET", "/door", nil).want(t, http.StatusOK)
	page := f.door.do("GET", "/door/e/"+f.ev.ID.String()+"?entrance=North", nil).want(t, http.StatusOK)
	if !strings.Contains(string(page.body), `data-testid="scanner"`) {
		t.Error("the scanner page has no scanner")
	}
	f.door.do("GET", "/door/e/"+f.ev.ID.String(), nil).want(t, http.StatusUnprocessableEntity)
	f.buyer.do("GET", "/door", nil).want(t, http.StatusForbidden)
}

// TestDoorCancelledTicket: a cancelled ticket's code is refused at the
// door (409 cancelled) and listed as revoked for offline scanners.
func TestDoorCancelledTicket(t *testing.T) {
	t.Parallel()
	f := newTicketFixture(t)
	if _, err := f.s.app.BoxOffice.Cancel(context.Background(), actor(f.tn.BoxOffice), f.booking.ID,
		[]uuid.UUID{f.booking.Tickets[0].ID}, "refund"); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result string    `json:"result"`
		Ticket uuid.UUID `json:"ticket"`
	}
	// The booking's first ticket by the API's order is the one cancelled
	// only if the orders agree: scan every code and find it.
	cancelled := 0
	for _, c := range f.codes {
		r := f.scan(f.door, c, "North")
		r.json(t, &res)
		if res.Result == "cancelled" {
			cancelled++
			if r.status != http.StatusConflict || res.Ticket != f.booking.Tickets[0].ID {
				t.Errorf("cancelled ticket answered %d %+v", r.status, res)
			}
		}
	}
	if cancelled != 1 {
		t.Fatalf("%d scans answered cancelled, want 1", cancelled)
	}
	var key struct {
		Revoked []uuid.UUID `json:"revoked"`
	}
	f.door.do("GET", "/api/v1/events/"+f.ev.ID.String()+"/checkins/key", nil).want(t, http.StatusOK).json(t, &key)
	if len(key.Revoked) != 1 || key.Revoked[0] != f.booking.Tickets[0].ID {
		t.Errorf("revoked %v, want the cancelled ticket", key.Revoked)
	}
}

// ticketClaims are the claims of ticket i of booking b.
func ticketClaims(b store.Booking, i int) ticket.Claims {
	return ticket.Claims{Org: b.OrgID, Event: b.EventID, Ticket: b.Tickets[i].ID, Seat: b.Tickets[i].SeatID}
}
