package chart

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"seatd/internal/apperr"
)

// Limits of a chart. Label lengths are those of the sections and seats
// tables events are made into; coordinates are the grid cells the seat
// maps draw (one cell a seat), so 10 000 leaves room for any hall while
// keeping a typo (x: 1e9) from making a map nobody can draw.
const (
	MaxName          = 200
	MaxSectionLabel  = 20
	MaxRowLabel      = 10
	MaxSectionName   = 100
	MaxCategories    = 50
	MaxCategoryKey   = 32
	MaxCategoryName  = 60
	MaxSections      = 1000
	MaxSeats         = 200_000 // seats and standing places together, the whole chart (Places)
	MaxCapacity      = 200_000 // places of one GA section
	MaxSeatNumber    = 99_999
	MaxCoord         = 10_000 // x and y lie in 0..MaxCoord
	maxReportedPaths = 1000   // a refusal lists at most this many paths
)

var (
	keyPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	colorPattern = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
)

// problems collects what is wrong with an input, keyed by where it is
// (a JSON path, or "line N" for CSV). Two problems at one place are
// joined into one message.
type problems struct {
	fields map[string]string
	more   int // problems past maxReportedPaths, counted but not listed
}

// Add records a problem at path.
func (p *problems) Add(path, format string, args ...any) {
	if p.fields == nil {
		p.fields = map[string]string{}
	}
	msg := fmt.Sprintf(format, args...)
	if old, ok := p.fields[path]; ok {
		if !strings.Contains(old, msg) {
			p.fields[path] = old + "; " + msg
		}
		return
	}
	if len(p.fields) >= maxReportedPaths {
		p.more++
		return
	}
	p.fields[path] = msg
}

// Len is the number of places with a problem.
func (p *problems) Len() int { return len(p.fields) + p.more }

// Err is the 422 refusal listing every problem, nil when there is none.
func (p *problems) Err() error {
	if p.Len() == 0 {
		return nil
	}
	msg := fmt.Sprintf("the chart has %d problem(s); nothing was saved", p.Len())
	if p.more > 0 {
		msg += fmt.Sprintf(" (the first %d are listed)", len(p.fields))
	}
	return &apperr.Error{Code: apperr.Invalid, Message: msg, Fields: p.fields}
}

// Validate checks a chart completely and reports every problem at once,
// keyed by JSON path (sections[2].rows[0].seats[5].number); nil when the
// chart can be stored.
func Validate(c Chart) error {
	var p problems
	validate(c, &p)
	return p.Err()
}

func validate(c Chart, p *problems) {
	text(p, "name", c.Name, 1, MaxName, true)

	cats := make(map[string]bool, len(c.Categories))
	if len(c.Categories) > MaxCategories {
		p.Add("categories", "must list at most %d categories", MaxCategories)
	}
	for i, cat := range c.Categories {
		at := fmt.Sprintf("categories[%d]", i)
		switch {
		case cat.Key == "":
			p.Add(at+".key", "is required")
		case len(cat.Key) > MaxCategoryKey || !keyPattern.MatchString(cat.Key):
			p.Add(at+".key", "must be 1-%d characters of a-z, 0-9, - and _, starting with a letter or digit", MaxCategoryKey)
		case cats[cat.Key]:
			p.Add(at+".key", "repeats category %q", cat.Key)
		}
		cats[cat.Key] = true
		text(p, at+".name", cat.Name, 1, MaxCategoryName, true)
		if !colorPattern.MatchString(cat.Color) {
			p.Add(at+".color", "must be a colour as #rrggbb")
		}
	}
	// A seat names its category when the chart has any: an event prices
	// categories, and a seat without one could not be sold.
	needCategory := len(c.Categories) > 0
	category := func(path, key string) {
		switch {
		case key == "" && needCategory:
			p.Add(path, "is required: the chart has categories")
		case key != "" && !cats[key]:
			p.Add(path, "is not a category of this chart (%s)", clip(key))
		}
	}

	if len(c.Sections) == 0 {
		p.Add("sections", "must list at least one section")
	}
	if len(c.Sections) > MaxSections {
		p.Add("sections", "must list at most %d sections", MaxSections)
	}
	// Seats and standing places together: each is a row of the event
	// made from the chart, so 1 000 standing sections of MaxCapacity each
	// would be 200 million rows, though each section alone is in range.
	if n := c.Places(); n > MaxSeats {
		p.Add("sections", "hold %d seats and standing places; a chart has at most %d", n, MaxSeats)
		return // checking each of so many seats would only bury this
	}

	labels := make(map[string]int, len(c.Sections))
	// Where each seat is drawn, to find two drawn on one spot.
	type point struct{ x, y int }
	at := make(map[point]string, c.SeatCount())
	for si, sec := range c.Sections {
		sp := fmt.Sprintf("sections[%d]", si)
		if text(p, sp+".label", sec.Label, 1, MaxSectionLabel, true) {
			if j, ok := labels[sec.Label]; ok {
				p.Add(sp+".label", "repeats the label of sections[%d]", j)
			} else {
				labels[sec.Label] = si
			}
		}
		text(p, sp+".name", sec.Name, 0, MaxSectionName, false)
		switch sec.Kind {
		case GA:
			if sec.Capacity <= 0 || sec.Capacity > MaxCapacity {
				p.Add(sp+".capacity", "must be 1-%d for a general-admission section", MaxCapacity)
			}
			if len(sec.Rows) > 0 {
				p.Add(sp+".rows", "must be empty: a general-admission section has no seats")
			}
			category(sp+".category", sec.Category)
			continue
		case Seated:
			if sec.Capacity != 0 {
				p.Add(sp+".capacity", "must be absent: a seated section holds its seats")
			}
			if sec.Category != "" {
				p.Add(sp+".category", "must be absent: seats of a seated section name their categories")
			}
			if len(sec.Rows) == 0 {
				p.Add(sp+".rows", "must list at least one row: the section is empty")
			}
		default:
			p.Add(sp+".kind", "must be %q or %q", Seated, GA)
			continue
		}
		rows := make(map[string]int, len(sec.Rows))
		for ri, row := range sec.Rows {
			rp := fmt.Sprintf("%s.rows[%d]", sp, ri)
			if text(p, rp+".label", row.Label, 1, MaxRowLabel, true) {
				if j, ok := rows[row.Label]; ok {
					p.Add(rp+".label", "repeats the label of %s.rows[%d]", sp, j)
				} else {
					rows[row.Label] = ri
				}
			}
			if len(row.Seats) == 0 {
				p.Add(rp+".seats", "must list at least one seat: the row is empty")
			}
			numbers := make(map[int]int, len(row.Seats))
			for ki, st := range row.Seats {
				kp := fmt.Sprintf("%s.seats[%d]", rp, ki)
				switch j, dup := numbers[st.Number]; {
				case st.Number <= 0 || st.Number > MaxSeatNumber:
					p.Add(kp+".number", "must be 1-%d", MaxSeatNumber)
				case dup:
					p.Add(kp+".number", "repeats seat %d of this row (%s.seats[%d])", st.Number, rp, j)
				default:
					numbers[st.Number] = ki
				}
				okX, okY := coord(p, kp+".x", st.X), coord(p, kp+".y", st.Y)
				if okX && okY {
					pt := point{st.X, st.Y}
					if other, taken := at[pt]; taken {
						p.Add(kp, "overlaps %s: both are drawn at x %d, y %d", other, st.X, st.Y)
					} else {
						at[pt] = kp
					}
				}
				category(kp+".category", st.Category)
				if st.Accessible && st.Companion {
					p.Add(kp+".companion", "must not be set on an accessible seat: a seat is one or the other")
				} else if st.Companion && !besideAccessible(row.Seats, ki) {
					p.Add(kp+".companion", "must be beside an accessible seat of its row")
				}
			}
		}
	}
}

// besideAccessible reports whether the seat at i has an accessible
// neighbour in its row (the seats are listed in row order).
func besideAccessible(seats []Seat, i int) bool {
	return (i > 0 && seats[i-1].Accessible) || (i+1 < len(seats) && seats[i+1].Accessible)
}

func coord(p *problems, path string, v int) bool {
	if v < 0 || v > MaxCoord {
		p.Add(path, "must be 0-%d", MaxCoord)
		return false
	}
	return true
}

// text checks a one-line text field; it reports whether s is usable as a
// key (present, short enough, clean).
func text(p *problems, path, s string, lo, hi int, required bool) bool {
	n := utf8.RuneCountInString(s)
	switch {
	case !utf8.ValidString(s):
		p.Add(path, "must be valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		p.Add(path, "must not contain control characters")
	case required && strings.TrimSpace(s) == "":
		p.Add(path, "is required")
	case n < lo || n > hi:
		p.Add(path, "must be %d-%d characters", lo, hi)
	case strings.TrimSpace(s) != s:
		p.Add(path, "must not start or end with spaces")
	default:
		return true
	}
	return false
}

// clip bounds a caller's text echoed back in a message, quoted.
func clip(s string) string {
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return strconv.Quote(strings.ToValidUTF8(s, ""))
}
