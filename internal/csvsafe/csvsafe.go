// Package csvsafe keeps exported CSV files from running as formulas in a
// spreadsheet.
package csvsafe

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
