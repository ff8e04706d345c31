package csvsafe_test

import (
	"bytes"
	"encoding/csv"
	"slices"
	"testing"

	"seatd/internal/csvsafe"
)

// TestCell: a cell starting with =, +, -, @, a tab or a carriage return
// gets a single quote before it; others are left alone.
func TestCell(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"=1+1": "'=1+1", "+1": "'+1", "-1": "'-1", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "": "", "Ada": "Ada", "a=b": "a=b", "=1+2@x.example": "'=1+2@x.example",
		" =1": " =1", "'=1": "'=1"} {
		if got := csvsafe.Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestWriter: records read back as written, but for the escaped cells;
// the record given is not changed.
func TestWriter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w := csvsafe.NewWriter(&b)
	rec := []string{"=HYPERLINK(\"http://evil.example\")", "Ada, \"the\" first", "@door"}
	for range 2 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	want := []string{"'=HYPERLINK(\"http://evil.example\")", "Ada, \"the\" first", "'@door"}
	if err != nil || len(rows) != 2 || !slices.Equal(rows[0], want) || !slices.Equal(rows[1], want) {
		t.Fatalf("read back %q (%v), want twice %q", rows, err, want)
	}
	if rec[0][0] != '=' {
		t.Fatalf("the record given was changed: %q", rec)
	}
}
