package chart

import (
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
