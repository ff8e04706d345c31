package views

import "time"

// AttendeeList is a page of an event's attendee list.
type AttendeeList struct {
	EventID, EventName string
	Organizer          bool   // the staff links show the organizer's pages
	Query              string // the search, "" for none
	// The figures at the door: admitted of expected (live tickets), by
	// entrance.
	Admitted, Expected int
	Entrances          []EntranceCount
	Rows               []Attendee
	First              bool   // the first page
	Next               string // the next page's URL, "" on the last
}

// EntranceCount is how many were admitted at one entrance.
type EntranceCount struct {
	Name     string
	Admitted int
}

// Attendee is one ticket of the list.
type Attendee struct {
	Ticket, Seat, Category, Reference string
	Name, Email                       string
	Cancelled                         bool
	AdmittedAt                        time.Time // zero until admitted
	Entrance                          string
}
