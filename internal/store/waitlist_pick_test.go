package store

import (
	"slices"
	"strconv"
	"testing"

	"github.com/google/uuid"
)

// TestPickOfferRanksLikeBestAvailable: an offer takes the frontmost row
// with seats side by side, the block nearest that row's centre; passes
// over blocks that would leave a seat alone under the strict rule; splits
// over the longest runs when no row has the seats together; and takes a
// standing section's places.
func TestPickOfferRanksLikeBestAvailable(t *testing.T) {
	// row builds a row of seats numbered 1..len(free), free where 'o'.
	row := func(free string) []*offerSeat {
		r := make([]*offerSeat, len(free))
		for i, c := range free {
			r[i] = &offerSeat{RowSeat: RowSeat{ID: uuid.New(), Number: i + 1, Free: c == 'o'}}
		}
		return r
	}
	standing := func(free string) []*offerSeat {
		r := row(free)
		for _, st := range r {
			st.ga = true
		}
		return r
	}
	numbers := func(rows [][]*offerSeat, pick []*offerSeat) []string {
		var out []string
		for _, st := range pick {
			for ri, r := range rows {
				if slices.Contains(r, st) {
					out = append(out, string(rune('A'+ri))+strconv.Itoa(st.Number))
				}
			}
		}
		return out
	}
	all := func(*offerSeat) bool { return true }
	for _, c := range []struct {
		name   string
		rows   [][]*offerSeat
		n      int
		strict bool
		want   []string // nil: no offer
	}{
		{"the block nearest the centre", [][]*offerSeat{row("oooooooooo")}, 2, false, []string{"A5", "A6"}},
		{"the front row before a better-centred block behind", [][]*offerSeat{row("ooxxxxxxxx"), row("oooooooooo")}, 2, false, []string{"A1", "A2"}},
		{"strict: no seat left alone", [][]*offerSeat{row("ooooo")}, 2, true, []string{"A1", "A2"}},
		{"strict: every block would leave one alone", [][]*offerSeat{row("ooo")}, 2, true, nil},
		{"split: longest runs first", [][]*offerSeat{row("ooxo"), row("xxxxxxoooxx")}, 4, false, []string{"B7", "B8", "B9", "A1"}},
		{"standing places", [][]*offerSeat{row("xxxx"), standing("xoxoo")}, 3, true, []string{"B2", "B4", "B5"}},
		{"not enough", [][]*offerSeat{row("oxo"), standing("x")}, 3, false, nil},
	} {
		got := numbers(c.rows, pickOffer(c.rows, c.n, all, c.strict))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: offered %v, want %v", c.name, got, c.want)
		}
	}
}
