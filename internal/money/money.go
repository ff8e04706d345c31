// Package money shows amounts kept in integer minor units (cents) the way
// people read them, in each currency's own decimals.
package money

import (
	"fmt"
	"strconv"

	"golang.org/x/text/currency"
)

// Format shows minor units in the currency's own decimals ("45.00 EUR",
// "4500 JPY"); "" for no currency.
func Format(minor int64, cur string) string {
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

// Scale is how many digits of cur's minor units follow the point (2 for an
// unknown code).
func Scale(cur string) int {
	if u, err := currency.ParseISO(cur); err == nil {
		scale, _ := currency.Standard.Rounding(u)
		return scale
	}
	return 2
}
