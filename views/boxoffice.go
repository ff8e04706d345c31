package views

import (
	"net/url"
	"strings"
	"time"
)

// View models of the box office: active holds, the blocking map, lookups,
// house seats and printed confirmations.

// HoldRow is an active hold in the box office's table.
type HoldRow struct {
	HoldID   string
	SeatID   string
	Seat     string // "B-A-12"
	Section  string
	Email    string
	Since    time.Time
	Until    time.Time
	Extended bool
	// Customer names who a box-office hold is for ("Ada Lovelace
	// <ada@example.com>"); empty for a buyer's own hold.
	Customer string
}

// HoldFilter is the box office's filter (query parameters), with the
// page of holds shown.
type HoldFilter struct {
	Section string
	Holder  string
	// After is the page's cursor: the holds after it are shown; "" is
	// the first page.
	After string
}

// Query is the filter as a query string ("" when empty), with a leading
// "?".
func (f HoldFilter) Query() string {
	var p []string
	if f.Section != "" {
		p = append(p, "section="+url.QueryEscape(f.Section))
	}
	if f.Holder != "" {
		p = append(p, "holder="+url.QueryEscape(f.Holder))
	}
	if f.After != "" {
		p = append(p, "after="+url.QueryEscape(f.After))
	}
	if len(p) == 0 {
		return ""
	}
	return "?" + strings.Join(p, "&")
}

// HoldTable is the box office's live list of active holds.
type HoldTable struct {
	// SellKey is this table's idempotency key for a sale: submitting the
	// same sale twice (a double click, a resent form) sells once.
	SellKey  string
	EventID  string
	Filter   HoldFilter
	Sections []string
	Rows     []HoldRow
	// Total counts the matching holds; Rows is one page of them.
	Total int
	// Next is the cursor of the next page; "" on the last one.
	Next string
}

// PageURL is the box office showing the page after cursor ("" for the
// first page) with the same filter.
func (t HoldTable) PageURL(cursor string) string {
	f := t.Filter
	f.After = cursor
	return "/box-office/events/" + t.EventID + f.Query()
}

// BoxMap is the box office's seat map of one section, for blocking.
type BoxMap struct {
	EventID  string
	Section  string
	Sections []string
	Seats    []Seat
	Rows     []Label
	// Message says what the last click did; Kind is info or error.
	Message string
	Kind    string
}

// Lookup is a customer found by email, with their holds and bookings for
// the event.
type Lookup struct {
	Email string
	// Query is what was typed: an email or a booking reference.
	Query string
	// Matches are the bookings the query names (reference or email).
	Matches  []BookingRow
	Found    bool
	Holds    []HoldRow
	Bookings []LookupBooking
}

// BookingRow is a booking found by reference or email.
type BookingRow struct {
	ID        string
	Reference string
	Status    string
	Who       string // the customer, or the buying account
	Seats     []string
	CreatedAt time.Time
}

// LookupBooking is one booking of a customer.
type LookupBooking struct {
	ID        string
	CreatedAt time.Time
	Seats     []string
}

// BoxOffice is the box office page of an event.
type BoxOffice struct {
	EventID   string
	EventName string
	Mode      Mode
	Summary   Counts
	Holds     HoldTable
	Map       BoxMap
	Lookup    *Lookup
	// Organizer shows the links only organizers may follow.
	Organizer bool
	House     []HouseRow
	// Categories are the event's, for choosing the best seats of one.
	Categories []Category
	// HoldKey keys this rendering's customer hold form: sent twice, its
	// best seats are chosen once.
	HoldKey string
}

// HouseRow is a house-seats allocation.
type HouseRow struct {
	ID       string
	Name     string
	Seats    []string
	Released bool
}

// Confirmation is a booking as the box office prints it.
type Confirmation struct {
	ID           string
	EventID      string
	Reference    string
	Status       string
	EventName    string
	Venue        string
	StartsAt     time.Time
	Customer     string
	Email        string
	Note         string
	Payment      string
	Seller       string
	Channel      string
	CreatedAt    time.Time
	CancelReason string
	// Tickets are in map order.
	Tickets []ConfirmationTicket
	// Total is what the valid tickets were sold for ("90.00 EUR"; one
	// sum per currency), "" when none had a price.
	Total string
}

// ConfirmationTicket is one seat of a booking.
type ConfirmationTicket struct {
	ID        string
	Seat      string
	Cancelled bool
	Price     string // as sold ("45.00 EUR"); "" for an unpriced seat
}

// Live reports whether any ticket of the booking is still valid.
func (c Confirmation) Live() bool {
	for _, t := range c.Tickets {
		if !t.Cancelled {
			return true
		}
	}
	return false
}

// filterText describes an active filter for "No active holds…".
func filterText(f HoldFilter) string {
	var p []string
	if f.Section != "" {
		p = append(p, "in section "+f.Section)
	}
	if f.Holder != "" {
		p = append(p, "of holders matching “"+f.Holder+"”")
	}
	if len(p) == 0 {
		return ""
	}
	return " " + strings.Join(p, " ")
}

// mapQuery is the query choosing the box office map's section.
func mapQuery(section string) string {
	if section == "" {
		return ""
	}
	return "?map=" + url.QueryEscape(section)
}

func lookupQuery(l *Lookup) string {
	if l == nil {
		return ""
	}
	return l.Query
}

// statusText says a booking's status for people.
func statusText(status string) string {
	switch status {
	case "cancelled":
		return "Cancelled"
	case "partially_cancelled":
		return "Partly cancelled"
	}
	return "Confirmed"
}

// paymentText says how a booking was paid.
func paymentText(method string) string {
	switch method {
	case "cash":
		return "Cash"
	case "card":
		return "Card"
	case "comp":
		return "Complimentary"
	}
	return "Online"
}

func joinSeats(seats []string) string { return strings.Join(seats, ", ") }
