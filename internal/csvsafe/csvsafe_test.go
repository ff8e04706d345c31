package csvsafe_test

import (
	"bytes"
	"encoding/csv"
	"errors"
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

// flushCounter counts the flushes Write passes on to its writer.
type flushCounter struct {
	bytes.Buffer
	flushes int
}

func (f *flushCounter) Flush() { f.flushes++ }

// TestWrite: the header and rows read back as written, but for the
// escaped cells; the rows given are not changed; a long export is flushed
// on the way.
func TestWrite(t *testing.T) {
	t.Parallel()
	var b flushCounter
	rec := []string{"=HYPERLINK(\"http://evil.example\")", "Ada, \"the\" first", "@door"}
	n := 2*csvsafe.FlushEvery + 1
	err := csvsafe.Write(&b, []string{"name", "-note", "who"}, func(row func([]string) error) error {
		for range n {
			if err := row(rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	want := []string{"'=HYPERLINK(\"http://evil.example\")", "Ada, \"the\" first", "'@door"}
	if err != nil || len(rows) != n+1 || !slices.Equal(rows[0], []string{"name", "'-note", "who"}) ||
		!slices.Equal(rows[1], want) || !slices.Equal(rows[n], want) {
		t.Fatalf("read back %d rows (%v), first %q, want a header and %d times %q", len(rows), err, rows[:min(len(rows), 2)], n, want)
	}
	if rec[0][0] != '=' {
		t.Fatalf("the row given was changed: %q", rec)
	}
	if b.flushes != 3 {
		t.Errorf("%d flushes of the writer, want 3 (two on the way, one at the end)", b.flushes)
	}
}

// TestWriteStops: an error from the rows is Write's.
func TestWriteStops(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var b bytes.Buffer
	err := csvsafe.Write(&b, []string{"a"}, func(row func([]string) error) error {
		if err := row([]string{"1"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write: %v, want %v", err, boom)
	}
	if b.String() != "a\n1\n" {
		t.Errorf("wrote %q, want what came before the error", b.String())
	}
}
