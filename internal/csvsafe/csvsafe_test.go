package csvsafe_test

import (
	"testing"

	"seatd/internal/csvsafe"
)

func TestCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "": "", "Ada": "Ada", "a=b": "a=b"} {
		if got := csvsafe.Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}
