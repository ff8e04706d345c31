package store_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"seatd/internal/store"
)

// TestNewOrphans checks the orphan rule on rows drawn as strings: one
// character a seat number from 1, 'o' free, 'x' taken, 'T' free and taken
// by the hold, ' ' no seat with that number (an aisle). want lists the
// numbers of the seats the hold newly leaves alone.
func TestNewOrphans(t *testing.T) {
	for _, tc := range []struct {
		name, row string
		want      []int
	}{
		{"a block in an empty row", "ooTTTToo", nil},
		{"one seat left at the row's end", "oTTTTooo", []int{1}},
		{"one seat left between two holds", "xoTToooo", []int{2}},
		{"one seat left between the hold and the end", "ooooTTTo", []int{8}},
		{"two seats left together are fine", "ooTTTTxx", nil},
		{"an aisle ends a run", "oT ooo", []int{1}},
		{"a seat beside an aisle is alone when the hold takes its other side", "oo oTT", []int{4}},
		{"a seat already alone is not blamed", "xoxTTo", []int{6}},
		{"nothing taken", "oooo", nil},
		{"a taken row", "xxxx", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row, take, ids := drawRow(tc.row)
			want := make([]uuid.UUID, len(tc.want))
			for i, n := range tc.want {
				want[i] = ids[n]
			}
			slices.SortFunc(want, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
			for _, order := range []string{"by number", "reversed"} {
				r := slices.Clone(row)
				if order == "reversed" {
					slices.Reverse(r)
				}
				got := store.NewOrphans(r, take)
				slices.SortFunc(got, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
				if !slices.Equal(got, want) {
					t.Errorf("%s, %s: got %v, want seats %v", tc.row, order, numbersOf(got, ids), tc.want)
				}
			}
		})
	}
}

func drawRow(s string) ([]store.RowSeat, map[uuid.UUID]bool, map[int]uuid.UUID) {
	var row []store.RowSeat
	take := map[uuid.UUID]bool{}
	ids := map[int]uuid.UUID{}
	for i, c := range s {
		if c == ' ' {
			continue
		}
		id := uuid.New()
		ids[i+1] = id
		row = append(row, store.RowSeat{ID: id, Number: i + 1, Free: c != 'x'})
		if c == 'T' {
			take[id] = true
		}
	}
	return row, take, ids
}

func numbersOf(got []uuid.UUID, ids map[int]uuid.UUID) []string {
	var out []string
	for _, id := range got {
		for n, x := range ids {
			if x == id {
				out = append(out, strconv.Itoa(n))
			}
		}
	}
	return out
}
