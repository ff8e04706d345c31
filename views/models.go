// Package views holds seatd's templ components and the small view-model
// structs they take. Components know nothing of the core or of HTTP.
package views

import (
	"strconv"
	"time"
)

// Page is what every full page needs.
type Page struct {
	Title string
	User  *User // nil when signed out
	// Asset returns the hashed URL of a static file.
	Asset func(name string) string
	Flash string
}

// User is the signed-in account shown in the nav.
type User struct {
	Email   string
	Role    string
	OrgName string
	OrgSlug string
}

// Staff reports whether the user works for the organization.
func (u *User) Staff() bool { return u != nil && (u.Role == "organizer" || u.Role == "box_office") }

// Event is a row of the event list.
type Event struct {
	ID       string
	Name     string
	Venue    string
	StartsAt time.Time
	Seats    int
}

// Seat is one seat on the map.
type Seat struct {
	ID      string
	EventID string
	Section string // label, e.g. "B"
	Row     string
	Number  int
	Col     int // grid column (1-based)
	GridRow int // grid row (1-based)
	Status  string
	Version int64
	Mine    bool
}

// Name is the seat's accessible name: "Section B, row 4, seat 12, available".
func (s Seat) Name() string {
	status := s.Status
	if s.Mine && s.Status == "held" {
		status = "held by you"
	}
	return "Section " + s.Section + ", row " + s.Row + ", seat " + strconv.Itoa(s.Number) + ", " + status
}

// Label is the short seat name: "B-4-12".
func (s Seat) Label() string { return s.Section + "-" + s.Row + "-" + strconv.Itoa(s.Number) }

// Label is a text placed on the venue grid (section names, row letters).
type Label struct {
	Text    string
	Col     int
	GridRow int
}

// SeatMap is the whole venue of an event.
type SeatMap struct {
	EventID   string
	EventName string
	Seats     []Seat
	Sections  []Label
	Rows      []Label
}

// CartHold is one of the buyer's holds in the cart.
type CartHold struct {
	HoldID    string
	SeatID    string
	Label     string
	HeldUntil time.Time
	Extended  bool
}

// Cart is the buyer's panel: holds, countdowns, checkout and pay.
type Cart struct {
	EventID string
	Holds   []CartHold
	// Message explains what just happened ("Seat B-4-12 was just taken by
	// someone else"); Kind is info, error or success.
	Message string
	Kind    string
	// PayKey is the idempotency key of this checkout, set once the holds
	// were extended for payment.
	PayKey string
}

// Booking is a confirmed purchase.
type Booking struct {
	ID        string
	EventName string
	Tickets   []Ticket
	CreatedAt time.Time
}

// Ticket is one bought seat.
type Ticket struct {
	ID    string
	Label string
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func itoa(n int) string { return strconv.Itoa(n) }

func col(n int) string { return "col-start-" + strconv.Itoa(n) }

func row(n int) string { return "row-start-" + strconv.Itoa(n) }

// APIKeys is the API keys page: the keys, and a key just made (its secret
// shown this once).
type APIKeys struct {
	Keys    []APIKey
	NewKey  string
	NewName string
}

// APIKey is a row of the API keys page.
type APIKey struct {
	ID         string
	Name       string
	Role       string
	Hint       string
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Webhooks is the webhooks page: the endpoints, the types one may ask
// for, and an endpoint just made (its secret shown this once).
type Webhooks struct {
	Endpoints []Webhook
	Types     []string
	NewSecret string
	NewURL    string
}

// Webhook is a row of the webhooks page.
type Webhook struct {
	ID        string
	URL       string
	Events    []string
	CreatedAt time.Time
}

// Deliveries is a page of an endpoint's deliveries, newest first.
type Deliveries struct {
	EndpointID string
	URL        string
	Rows       []Delivery
	Older      string // link to the next page; "" on the last
}

// Delivery is a row of the deliveries page.
type Delivery struct {
	ID          string
	Type        string
	CreatedAt   time.Time
	State       string
	Attempts    int
	LastStatus  string
	LastError   string
	NextAt      *time.Time
	DeliveredAt *time.Time
}
