// Package csvsafe writes CSV files that spreadsheets open as text, not as
// formulas: every export seatd offers goes through it (seats, bookings,
// the audit log, check-ins). Names, emails and entrances are typed by
// people, and a valid email such as =1+2@x.example or a holder named
// =HYPERLINK("http://evil.example") must stay text when an organizer
// opens the file (CSV injection, after OWASP's advice).
//
// For a web export, replace csv.NewWriter(w) with csvsafe.NewWriter(w);
// the rest (Write, Flush, Error) is the same.
package csvsafe

import (
	"encoding/csv"
	"io"
)

// Cell escapes a cell that a spreadsheet would take for a formula (it
// starts with =, +, -, @, a tab or a carriage return) by putting a single
// quote before it; any other cell is returned as it is.
func Cell(s string) string {
	if s != "" {
		switch s[0] {
		case '=', '+', '-', '@', '\t', '\r':
			return "'" + s
		}
	}
	return s
}

// Writer is a csv.Writer whose every cell is escaped with Cell.
type Writer struct {
	w     *csv.Writer
	cells []string // reused between records
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w)} }

// Write writes one record, each cell escaped (record is not changed).
func (w *Writer) Write(record []string) error {
	w.cells = w.cells[:0]
	for _, c := range record {
		w.cells = append(w.cells, Cell(c))
	}
	return w.w.Write(w.cells)
}

// Flush writes what is buffered to the underlying writer.
func (w *Writer) Flush() { w.w.Flush() }

// Error is the error of an earlier Write or Flush, if any.
func (w *Writer) Error() error { return w.w.Error() }
