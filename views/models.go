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
	// Refresh reloads the page after that many seconds (0: never): a page
	// that waits for something done elsewhere (a payment's confirmation)
	// without a script.
	Refresh int
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
	StartsAt time.Time // in the venue's time zone
	Seats    int
	Status   string // draft, on_sale, closed
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
	// Cat is the seat's price category on the map: 1-based index into the
	// event's categories (its colour and border cue); 0 for none.
	Cat int
	// Flag is "accessible" (wheelchair space), "companion" or "".
	Flag string
	// Idx is the seat's position in the event: its place in the page's
	// model of the venue (SeatMap.Overview), which frames keep current.
	Idx int
}

// CategoryClass is the map class of a category slot: four border cues
// (solid, double, dashed, dotted) repeat, each with its own colour.
func CategoryClass(cat int) string {
	if cat <= 0 {
		return ""
	}
	return "cat-" + strconv.Itoa((cat-1)%8+1)
}

// Category is a price category in the map's legend.
type Category struct {
	Cat   int
	Key   string
	Name  string
	Color string // #rrggbb, applied by the page script; the class has a default
	Price string // "45.00 EUR"
}

// Name is the seat's accessible name: "Section B, row 4, seat 12, available".
func (s Seat) Name() string {
	status := s.Status
	if s.Mine && s.Status == "held" {
		status = "held by you"
	}
	kind := ""
	switch s.Flag {
	case "accessible":
		kind = ", wheelchair space"
	case "companion":
		kind = ", companion seat"
	}
	return "Section " + s.Section + ", row " + s.Row + ", seat " + strconv.Itoa(s.Number) + kind + ", " + status
}

// Label is the short seat name: "B-4-12".
func (s Seat) Label() string { return s.Section + "-" + s.Row + "-" + strconv.Itoa(s.Number) }

// Label is a text placed on a section's grid (its row letters).
type Label struct {
	Text    string
	Col     int
	GridRow int
}

// SeatMap is the whole venue of an event.
type SeatMap struct {
	EventID   string
	EventName string
	// Categories are the legend's names and prices.
	Categories []Category
	// NotOnSale says why buyers cannot hold now ("Sales open ..."); "" when
	// they can.
	NotOnSale string
	// Overview is every seated section's outline and free seats; Section
	// is the one whose seats are shown (its label), Seats and Rows its
	// seats and row letters, placed on the section's own grid.
	Overview Overview
	Section  string
	Seats    []Seat
	Rows     []Label
	GA       []GASection // general-admission sections (their places are not drawn)
	// Choose is the "best seats" and accessible-seating control.
	Choose Choose
}

// Overview is the whole venue at a glance, in venue coordinates (one unit
// a seat): the stage above every seated section with its free seats.
type Overview struct {
	MinX, MinY, W, H int
	// StageH is the stage's depth, about a fortieth of the venue's size,
	// so it reads at any scale.
	StageH   int
	Sections []SectionBox
	// States has one letter per seat in idx order (a available, h held,
	// s sold, b blocked, - no drawn seat), Versions the seats' versions
	// run-length encoded ("v" or "v*n", comma-separated) and Runs the
	// section of each idx range ("start:count:section", space-separated,
	// section an index into Sections). It is the page script's model of
	// the venue: frames for seats of sections not shown update it and
	// their section's count, and the versions let a map rendered later
	// merge with frames that arrived meanwhile, newest per seat winning.
	States   string
	Versions string
	Runs     string
	// Kept lists the idx of the seats held back for accessible seating
	// (comma-separated), while they are: the script counts them free only
	// for a buyer who asks for such seats, and for everyone from the
	// release time on.
	Kept string
}

// SectionBox is one section on the overview.
type SectionBox struct {
	Label            string
	X, Y, W, H       int
	Available, Total int
	Selected         bool
	FontSize         int // of the label; FreeSize of the count below it
	FreeSize         int
	TextX, TextY     int // the label's middle and baseline
	FreeY            int // the count's baseline
}

// Level buckets a section's share of free seats into 0..4 for its shade
// (0 only when none is free).
func (b SectionBox) Level() string {
	if b.Total == 0 || b.Available <= 0 {
		return "0"
	}
	return strconv.Itoa((b.Available*4 + b.Total - 1) / b.Total)
}

// Name is the section's accessible name on the overview.
func (b SectionBox) Name() string {
	return "Section " + b.Label + ", " + itoa(b.Available) + " of " + itoa(b.Total) + " seats free"
}

// overviewScale is the overview's largest size in pixels per venue unit (a
// seat): a small venue is drawn at about its seats' size, a large one
// shrinks to the screen (CSS: never wider than it, nor taller than 45 %).
const overviewScale = 12

// ViewBox is the overview's SVG viewBox: the sections with the stage above.
func (o Overview) ViewBox() string {
	return itoa(o.MinX-1) + " " + itoa(o.StageY()-1) + " " + itoa(o.W+2) + " " + itoa(o.H+o.StageH+4)
}

// Width is the overview's largest width in pixels.
func (o Overview) Width() string { return itoa((o.W + 2) * overviewScale) }

// Height is the overview's largest height in pixels.
func (o Overview) Height() string { return itoa((o.H + o.StageH + 4) * overviewScale) }

// StageY is the top of the stage, two units in front of the sections.
func (o Overview) StageY() int { return o.MinY - 2 - o.StageH }

// StageMid is the middle of the stage's depth, for its label.
func (o Overview) StageMid() string {
	return strconv.FormatFloat(float64(o.StageY())+float64(o.StageH)/2, 'f', 1, 64)
}

// StageFont is the size of the stage's label.
func (o Overview) StageFont() string { return strconv.FormatFloat(float64(o.StageH)*0.7, 'f', 1, 64) }

// Choose is what the seat-choosing control beside the map needs.
type Choose struct {
	EventID    string
	Categories []Category
	Sections   []string
	// Strict: the event leaves no seat alone (the map explains the rule).
	Strict bool
	// ReleaseAt is when accessible seats join general sale (RFC 3339), ""
	// when they are not held back; choose.js lifts the hold-back on every
	// open map at that moment, without a message from the server.
	ReleaseAt string
	// HasAccessible: the event has accessible seats (shows the checkbox).
	HasAccessible bool
	// MaxSeats is how many seats or places one request may ask for
	// (SEATD_MAX_SEATS_PER_REQUEST): the count fields' maximum.
	MaxSeats int
}

// CartHold is one of the buyer's holds in the cart.
type CartHold struct {
	HoldID    string
	SeatID    string
	Label     string
	HeldUntil time.Time
	Extended  bool
	Price     string // "45.00 EUR"; "" for an unpriced seat
	// PriceMinor, Currency and Scale are Price in minor units, its ISO
	// code and the digits after its point: the page adds up its total
	// from them when lines arrive live.
	PriceMinor int64
	Currency   string
	Scale      int
	// Offer marks seats held for the buyer from the waitlist.
	Offer bool
	// Paying is the payment the hold is being paid with ("" if none): the
	// seat shows as paying and only the payment can end the hold.
	Paying string
}

// Cart is the buyer's panel: holds, countdowns, checkout and pay.
type Cart struct {
	EventID string
	Holds   []CartHold
	// Message explains what just happened ("Seat B-4-12 was just taken by
	// someone else"); Kind is info, error or success.
	Message string
	Kind    string
	// PayKey is the idempotency key of paying for these holds, set when
	// every one of them is checked out (extended for payment) and none is
	// being paid for yet.
	PayKey string
	// Total is the sum of the holds' prices ("135.00 EUR"), "" when none
	// is priced.
	Total string
	// Extension is the time a checkout adds ("5 more minutes").
	Extension string
	// Paying is the buyer's payment in flight for these holds ("" if
	// none): the cart offers to go on paying instead of checking out.
	Paying string
}

// Booking is a confirmed purchase.
type Booking struct {
	ID        string
	Reference string
	// Status is confirmed, partially_cancelled or cancelled.
	Status       string
	CancelReason string
	// CancelledBy is who last cancelled tickets of it: CancelledByBuyer,
	// CancelledByStaff, or "" when not known.
	CancelledBy string
	EventName   string
	Venue       string
	When        string // the event's start in the venue's zone, zone named
	Tickets     []Ticket
	CreatedAt   time.Time
	// PDF is the URL of the live tickets as a PDF; "" when none is live.
	PDF string
	// CancelUntil is when the buyer's own cancellation (refunded) closes,
	// "" when they cannot cancel it.
	CancelUntil string
}

// Who cancelled a booking, as its page words it.
const (
	CancelledByBuyer = "buyer"
	CancelledByStaff = "staff"
)

// Ticket is one bought seat and what was paid for it.
type Ticket struct {
	ID string
	// Label names the seat for people: "Seat B-A-12", or "G place 94" for
	// a standing place.
	Label     string
	Category  string
	Price     string // what was paid
	Cancelled bool
	// QR is the ticket's code drawn as an SVG (package ticket), Code the
	// code itself; both "" for a cancelled ticket.
	QR   string
	Code string
}

// MyBooking is a booking in the buyer's list of their tickets.
type MyBooking struct {
	ID, Reference, Status string
	EventName, When       string
	Tickets               int // live tickets
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func itoa(n int) string { return strconv.Itoa(n) }

func i64toa(n int64) string { return strconv.FormatInt(n, 10) }

func col(n int) string { return "col-start-" + strconv.Itoa(n) }

func row(n int) string { return "row-start-" + strconv.Itoa(n) }

// ChartChoice is a chart an event can be made from.
type ChartChoice struct {
	ID      string
	Name    string
	Version int
	Seats   int
}

// PriceField is one category's price input of the event form.
type PriceField struct {
	Key   string
	Name  string
	Minor string // price in minor units (cents), as typed
	Cur   string
	Field string // the error key, prices[i]
}

// EventForm is the organizer's create or edit form. Times are shown and
// entered in the event's time zone (datetime-local values).
type EventForm struct {
	EventID    string // "" when creating
	Status     string
	Charts     []ChartChoice
	ChartID    string
	Name       string
	Venue      string
	TimeZone   string
	StartsAt   string
	OnSaleAt   string
	SalesEndAt string
	HoldTTL    string // seconds, "" for the default
	MaxHolds   string // "" for the default
	Extension  string // seconds a checkout adds, "" for the default
	// CancelHours: buyers may cancel their paid bookings, refunded, until
	// this many hours before the start ("": they cannot).
	CancelHours string
	Prices      []PriceField
	// The waiting room (edit form only): on, its opening (venue time)
	// and its rate ("auto" or visitors a minute).
	RoomOn                bool
	RoomOpensAt, RoomRate string
	// Errors maps API field names (name, prices[0].currency, ...) to what
	// is wrong; Message is the summary.
	Errors  map[string]string
	Message string
}

// Err is the message for a field, "" when it is fine.
func (f EventForm) Err(field string) string { return f.Errors[field] }

// ChartRow is a row of the charts list: a chart and its newest version.
type ChartRow struct {
	ID        string
	Name      string
	Version   int
	Seats     int
	Sections  int
	UpdatedAt time.Time
}

func boolText(b bool) string { return strconv.FormatBool(b) }

// cancelledText says what a cancel covered.
func cancelledText(status string) string {
	if status == "cancelled" {
		return "this booking"
	}
	return "some tickets of this booking"
}

// cancelledCap is what was cancelled when nobody is named: "This booking
// was", "Some tickets of this booking were".
func cancelledCap(status string) string {
	if status == "cancelled" {
		return "This booking was"
	}
	return "Some tickets of this booking were"
}

// APIKeys is the API keys page: the keys, and a key just made (its secret
// shown this once).
type APIKeys struct {
	Keys    []APIKey
	Scopes  []string // the scopes a key may be limited to, in order
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
	Scopes     []string
	ExpiresAt  *time.Time
	ByKey      bool // made by another key (revoked with it)
}

// Webhooks is the webhooks page: the endpoints, the types one may ask
// for, and an endpoint just made (its secret shown this once).
type Webhooks struct {
	Endpoints []Webhook
	Types     []string
	NewSecret string
	NewURL    string
	// OldUntil is set when NewSecret comes from a rotation: the secret it
	// replaced signs beside it until then.
	OldUntil *time.Time
}

// Webhook is a row of the webhooks page.
type Webhook struct {
	ID        string
	URL       string
	Events    []string
	CreatedAt time.Time
	// PreviousUntil: a rotation is under way, and the old secret signs
	// beside the new one until then.
	PreviousUntil *time.Time
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

func venueText(v string) string {
	if v == "" {
		return ""
	}
	return " · " + v
}

// ticketsText says how many tickets of a booking still admit someone.
func ticketsText(n int, status string) string {
	if status == "cancelled" || n == 0 {
		return "cancelled"
	}
	return plural(n, "1 ticket", strconv.Itoa(n)+" tickets")
}
