// Package csvsafe keeps exported CSV files from running as formulas in a
// spreadsheet.
package csvsafe

import (
	"encoding/csv"
	"io"
)

// Cell escapes a cell that a spreadsheet would take for a formula (it
// starts with =, +, -, @, a tab or a carriage return) by putting a single
// quote before it, as OWASP's CSV injection advice says: names, entrances
// and provider messages are typed by people, and a holder named
// "=HYPERLINK(...)" must stay text when an organizer opens the file.
func Cell(s string) string {
	if s != "" {
		switch s[0] {
		case '=', '+', '-', '@', '\t', '\r':
			return "'" + s
		}
	}
	return s
}

// Write writes a CSV file to w: header, then the rows that rows hands its
// argument one at a time (as a store streams an export), every cell
// escaped (Cell). It stops at the first error, either rows' or w's.
func Write(w io.Writer, header []string, rows func(row func([]string) error) error) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	cells := make([]string, 0, len(header))
	err := rows(func(row []string) error {
		cells = cells[:0]
		for _, v := range row {
			cells = append(cells, Cell(v))
		}
		return cw.Write(cells)
	})
	cw.Flush()
	if err != nil {
		return err
	}
	return cw.Error()
}
