package render

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/text/currency"
)

// Price shows minor units in the currency's own decimals ("45.00 EUR",
// "4500 JPY"); "" for no currency.
func Price(minor int64, cur string) string {
	if cur == "" {
		return ""
	}
	scale := Scale(cur)
	if scale == 0 {
		return strconv.FormatInt(minor, 10) + " " + cur
	}
	div := int64(1)
	for range scale {
		div *= 10
	}
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return fmt.Sprintf("%s%d.%0*d %s", sign, minor/div, scale, minor%div, cur)
}

// Scale is how many digits of cur's minor units follow the point (2 for
// an unknown code).
func Scale(cur string) int {
	if u, err := currency.ParseISO(cur); err == nil {
		scale, _ := currency.Standard.Rounding(u)
		return scale
	}
	return 2
}

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
		parts[i] = Price(s.by[c], c)
	}
	return strings.Join(parts, " + ")
}
