package web

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
	"seatd/internal/testenv"
)

// TestAttendees: the organizer's and the box office's attendee list shows
// every ticket with whom it is for (the buyer's account, or the box-office
// customer by name) and where it was admitted, with the door's figures; it
// searches by name, booking reference and email (typed wildcards match
// themselves) and pages in seat order; buyers and door staff cannot see it,
// another organization gets 404, a bad cursor 422.
func TestAttendees(t *testing.T) {
	t.Parallel()
	f := newTicketFixture(t)
	a := f.s.app
	seats := testenv.SeatIDs(t, a, f.tn.Org.ID, f.ev.ID)
	counter := sale(t, a, f.tn.BoxOffice, f.ev.ID, seats[5:7]...)
	f.scan(f.door, f.codes[0], "North").want(t, http.StatusCreated)
	path := "/admin/events/" + f.ev.ID.String() + "/attendees"

	page := f.org.do("GET", path, nil).want(t, http.StatusOK).doc(t)
	rows := page.Find("#attendees tbody tr")
	if rows.Length() != 5 {
		t.Fatalf("%d attendees, want the 5 tickets", rows.Length())
	}
	if got := strings.Join(strings.Fields(page.Find(`[data-testid=door-figures]`).Text()), " "); !strings.HasPrefix(got, "1 admitted of 5 valid tickets") ||
		!strings.Contains(got, "North: 1") {
		t.Errorf("door figures %q", got)
	}
	admitted := page.Find(`#attendees tr[data-ticket="` + f.booking.Tickets[0].ID.String() + `"] [data-col=admitted]`).Text()
	if !strings.Contains(admitted, "North") {
		t.Errorf("the admitted ticket's row says %q, want its entrance", admitted)
	}
	holder := func(ticket uuid.UUID) string {
		return strings.Join(strings.Fields(page.Find(`#attendees tr[data-ticket="`+ticket.String()+`"] [data-col=holder]`).Text()), " ")
	}
	if h := holder(counter.Tickets[0].ID); h != "Ada Lovelace · ada@example.com" {
		t.Errorf("a box-office ticket is shown for %q, want its customer", h)
	}
	if h := holder(f.booking.Tickets[1].ID); h != f.tn.Buyers[0].Email {
		t.Errorf("a web ticket is shown for %q, want the buyer %s", h, f.tn.Buyers[0].Email)
	}
	search := func(q string) int {
		t.Helper()
		return f.org.do("GET", path+"?q="+q, nil).want(t, http.StatusOK).doc(t).Find("#attendees tbody tr").Length()
	}
	for q, want := range map[string]int{
		"lovelace": 2, store.FormatReference(counter.Reference): 2, f.booking.Reference: 3,
		strings.SplitN(f.tn.Buyers[0].Email, "@", 2)[0]: 3, "%25": 0, "_": 0,
	} {
		if n := search(q); n != want {
			t.Errorf("search %q: %d rows, want %d", q, n, want)
		}
	}

	f.s.as(f.tn.Org, f.tn.BoxOffice).do("GET", path, nil).want(t, http.StatusOK)
	f.buyer.do("GET", path, nil).want(t, http.StatusForbidden)
	f.door.do("GET", path, nil).want(t, http.StatusForbidden)
	other := testenv.NewTenant(t, a, 0)
	f.s.as(other.Org, other.Organizer).do("GET", path, nil).want(t, http.StatusNotFound)
	f.org.do("GET", path+"?after=x", nil).want(t, http.StatusUnprocessableEntity)

	// Pages in seat order, each after the last one's seat.
	var got []uuid.UUID
	after := -1
	for range 4 {
		list, err := store.NewCheckins(a.Pool).Attendees(context.Background(), f.tn.Org.ID, f.ev.ID,
			store.AttendeeFilter{After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range list {
			got = append(got, at.Ticket)
			after = at.Idx
		}
	}
	if len(got) != 5 || got[3] != counter.Tickets[0].ID && got[3] != counter.Tickets[1].ID {
		t.Fatalf("pages of 2 gave %v, want the 5 tickets in seat order (the box office's last)", got)
	}
}
