package money

import "testing"

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		minor int64
		cur   string
		want  string
	}{
		{4500, "EUR", "45.00 EUR"},
		{5, "EUR", "0.05 EUR"},
		{-1250, "USD", "-12.50 USD"},
		{4500, "JPY", "4500 JPY"},
		{1234, "BHD", "1.234 BHD"},
		{100, "XYZ", "1.00 XYZ"},
		{100, "", ""},
	} {
		if got := Format(tc.minor, tc.cur); got != tc.want {
			t.Errorf("Format(%d, %q) = %q, want %q", tc.minor, tc.cur, got, tc.want)
		}
	}
}
