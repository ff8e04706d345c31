package render

import (
	"strings"

	"seatd/internal/money"
)

// Sum adds prices per currency (an event normally has one).
type Sum struct {
	order []string
	by    map[string]int64
}

// Add adds minor units of cur.
func (s *Sum) Add(minor int64, cur string) {
	if s.by == nil {
		s.by = map[string]int64{}
	}
	if _, ok := s.by[cur]; !ok {
		s.order = append(s.order, cur)
	}
	s.by[cur] += minor
}

// String shows the sum per currency, in the order they came: "90.00 EUR +
// 40.00 USD".
func (s Sum) String() string {
	parts := make([]string, len(s.order))
	for i, c := range s.order {
		parts[i] = money.Format(s.by[c], c)
	}
	return strings.Join(parts, " + ")
}
