// Package csvsafe writes CSV files that spreadsheets open as text, not as
// formulas: every export seatd offers goes through it (seats, bookings,
// the audit log, check-ins, payments). Names, emails, entrances and
// provider messages are typed by people, and a valid email such as
// =1+2@x.example or a holder named =HYPERLINK("http://evil.example") must
// stay text when an organizer opens the file (CSV injection, after
// OWASP's advice).
package csvsafe

import (
	"encoding/csv"
	"io"
)

// FlushEvery is how many rows Write writes between flushes: a client
// sees a long export grow, and the writer holds a few kilobytes, whatever
// the export's size.
const FlushEvery = 500

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

// flusher is what an http.ResponseWriter (through http.Flusher) offers to
// send what it has buffered.
type flusher interface{ Flush() }

// Write writes a CSV file to w: header, then the rows that rows hands its
// argument one at a time (as a store streams an export), every cell
// escaped (Cell; the rows given are not changed). Every FlushEvery rows it
// flushes its buffer, and w too when w has a Flush method (an
// http.ResponseWriter does). It stops at the first error, either rows' or
// w's; after one, what was written is a truncated file.
func Write(w io.Writer, header []string, rows func(row func([]string) error) error) error {
	cw := csv.NewWriter(w)
	f, _ := w.(flusher)
	flush := func() error {
		cw.Flush()
		if f != nil {
			f.Flush()
		}
		return cw.Error()
	}
	cells := make([]string, 0, len(header))
	write := func(row []string) error {
		cells = cells[:0]
		for _, v := range row {
			cells = append(cells, Cell(v))
		}
		return cw.Write(cells)
	}
	if err := write(header); err != nil {
		return err
	}
	n := 0
	err := rows(func(row []string) error {
		if err := write(row); err != nil {
			return err
		}
		if n++; n%FlushEvery == 0 {
			return flush()
		}
		return nil
	})
	if ferr := flush(); err == nil {
		err = ferr
	}
	return err
}
