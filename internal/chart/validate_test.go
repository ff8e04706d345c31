package chart

import (
	"strconv"
	"testing"

	"seatd/internal/apperr"
)

// TestValidateSeatLimit: a chart of more than MaxSeats seats is refused
// at "sections" alone (not with a problem for each seat), one of exactly
// MaxSeats is taken. (Through the API in the bench, which imports 100 000.)
func TestValidateSeatLimit(t *testing.T) {
	t.Parallel()
	build := func(n int) Chart {
		row := Row{Label: "1"}
		for i := range n {
			row.Seats = append(row.Seats, Seat{Number: i%MaxSeatNumber + 1, X: i % 1000, Y: i / 1000})
		}
		// Rows of at most MaxSeatNumber seats keep the numbers unique.
		sec := Section{Label: "A", Kind: Seated}
		for i := 0; i < len(row.Seats); i += MaxSeatNumber {
			r := Row{Label: string(rune('a' + i/MaxSeatNumber)), Seats: row.Seats[i:min(i+MaxSeatNumber, len(row.Seats))]}
			sec.Rows = append(sec.Rows, r)
		}
		return Chart{Name: "big", Sections: []Section{sec}}
	}
	if err := Validate(build(MaxSeats)); err != nil {
		t.Fatalf("%d seats: %v", MaxSeats, err)
	}
	err := Validate(build(MaxSeats + 1))
	e, ok := apperr.As(err)
	if !ok || e.Code != apperr.Invalid || len(e.Fields) != 1 || e.Fields["sections"] == "" {
		t.Fatalf("%d seats: %v %v", MaxSeats+1, err, e)
	}
}

// TestProblemsBounded: a chart with a problem on every seat lists at
// most maxReportedPaths of them and says how many there were.
func TestProblemsBounded(t *testing.T) {
	t.Parallel()
	row := Row{Label: "1"}
	for i := range 5000 {
		row.Seats = append(row.Seats, Seat{Number: -i, X: i % 100, Y: i / 100})
	}
	err := Validate(Chart{Name: "x", Sections: []Section{{Label: "A", Kind: Seated, Rows: []Row{row}}}})
	e, ok := apperr.As(err)
	if !ok || len(e.Fields) != maxReportedPaths || e.Message != "the chart has 5000 problem(s); nothing was saved (the first 1000 are listed)" {
		t.Fatalf("%d fields: %v", len(e.Fields), err)
	}
}

// TestValidatePlacesLimit: seats and standing places count together
// against MaxSeats. A 60 KB chart of 1 000 standing sections of
// MaxCapacity places each (every section in range on its own) is refused
// at "sections" alone, naming the total; so is one standing place past a
// full seated chart; a standing-only chart of exactly MaxSeats places is
// taken.
func TestValidatePlacesLimit(t *testing.T) {
	t.Parallel()
	standing := func(sections, capacity int) Chart {
		c := Chart{Name: "standing"}
		for i := range sections {
			c.Sections = append(c.Sections, Section{Label: "G" + strconv.Itoa(i), Kind: GA, Capacity: capacity})
		}
		return c
	}
	refused := func(name string, c Chart, total int) {
		t.Helper()
		err := Validate(c)
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.Invalid || len(e.Fields) != 1 ||
			e.Fields["sections"] != "hold "+strconv.Itoa(total)+" seats and standing places; a chart has at most 200000" {
			t.Fatalf("%s: %v %+v; want one problem at sections naming %d places", name, err, e, total)
		}
	}
	refused("1 000 standing sections of 200 000", standing(MaxSections, MaxCapacity), MaxSections*MaxCapacity)
	// Hostile capacities do not overflow the sum into a small number.
	c := standing(3, 1<<62)
	refused("capacities near the int limit", c, 3*(MaxCapacity+1))

	if err := Validate(standing(4, MaxSeats/4)); err != nil {
		t.Fatalf("%d standing places in 4 sections: %v", MaxSeats, err)
	}
	seated := Chart{Name: "mixed", Sections: []Section{{Label: "A", Kind: Seated}}}
	for r := range MaxSeats / 1000 {
		row := Row{Label: strconv.Itoa(r)}
		for n := range 1000 {
			row.Seats = append(row.Seats, Seat{Number: n + 1, X: n, Y: r})
		}
		seated.Sections[0].Rows = append(seated.Sections[0].Rows, row)
	}
	if err := Validate(seated); err != nil {
		t.Fatalf("%d seats: %v", MaxSeats, err)
	}
	seated.Sections = append(seated.Sections, Section{Label: "G", Kind: GA, Capacity: 1})
	refused("a full seated chart and one standing place", seated, MaxSeats+1)
}
