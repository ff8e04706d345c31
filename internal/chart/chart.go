// Package chart is the venue chart: a reusable, versioned layout of
// sections (seated rows of seats, or general admission with a capacity),
// seat categories and seat flags. Events are made from one version of a
// chart and keep it, whatever later edits do to the chart.
//
// The JSON form of Chart is the API's (docs/api.md): what GET returns,
// POST accepts back unchanged.
//
// Reading a chart costs memory and time bounded by the body and the
// limits (MaxSeats and the others in validate.go), whatever the body
// holds: DecodeJSON walks the JSON against the types before decoding
// (shape.go), ParseCSV reads a line at a time, and both stop listing
// problems at a bound. A body is up to 32 MiB, so the uploads a process
// reads at once are limited too: the web layer passes each through a
// gate.Gate of SEATD_CHART_UPLOADS places (see package gate).
package chart

// Section kinds.
const (
	Seated = "seated"
	GA     = "ga"
)

// Chart is one version of a venue layout.
type Chart struct {
	Name       string     `json:"name"`
	Categories []Category `json:"categories"`
	Sections   []Section  `json:"sections"`
}

// Category is a price category seats belong to; events price categories.
type Category struct {
	Key   string `json:"key"`
	Name  string `json:"name"`
	Color string `json:"color"`
}

// Section is a seated block of rows, or a general-admission area with a
// capacity and no seats.
type Section struct {
	Label    string `json:"label"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Capacity int    `json:"capacity,omitempty"`
	// Category is the category of a GA section's places; seats of a
	// seated section name their own.
	Category string `json:"category,omitempty"`
	Rows     []Row  `json:"rows,omitempty"`
}

// Row is a labelled row of seats.
type Row struct {
	Label string `json:"label"`
	Seats []Seat `json:"seats"`
}

// Seat is one seat: its number in the row, where it is drawn, its
// category key and its flags.
type Seat struct {
	Number     int    `json:"number"`
	X          int    `json:"x"`
	Y          int    `json:"y"`
	Category   string `json:"category,omitempty"`
	Accessible bool   `json:"accessible,omitempty"`
	Companion  bool   `json:"companion,omitempty"`
}

// SeatCount is the number of seats of seated sections.
func (c Chart) SeatCount() int {
	n := 0
	for _, s := range c.Sections {
		for _, r := range s.Rows {
			n += len(r.Seats)
		}
	}
	return n
}

// Places is the number of seats and standing places together: the rows
// an event made from the chart gets (a standing place is a row too, see
// store.GARow). A capacity out of range counts as MaxCapacity+1, so the
// sum of a hostile chart cannot overflow and still says "too many".
func (c Chart) Places() int {
	n := c.SeatCount()
	for _, s := range c.Sections {
		if s.Kind == GA {
			n += min(max(s.Capacity, 0), MaxCapacity+1)
		}
	}
	return n
}
