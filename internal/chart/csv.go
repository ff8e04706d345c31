package chart

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// CSVHeader is the first line a CSV chart must start with. It is required:
// a file without it, or with its columns in another order, is refused
// rather than read wrongly.
const CSVHeader = "section,row,number,x,y,category,flags"

var csvColumns = strings.Split(CSVHeader, ",")

// Palette colours the categories a CSV names, in order of first use, when
// the chart had no colour for them before.
var Palette = []string{"#4f46e5", "#059669", "#d97706", "#dc2626", "#0891b2", "#7c3aed", "#65a30d", "#db2777", "#475569", "#0d9488"}

// ParseCSV reads a seated chart from CSV, one seat a line:
// section,row,number,x,y,category,flags. Flags are empty, or accessible
// and companion joined by "|". Sections and rows are listed in order of
// first appearance, seats in line order. Categories are the distinct keys
// used, named and coloured as in known (the chart's previous version) or
// named by their key and coloured from Palette. CSV has no way to say
// general admission: such sections are made in the editor or in JSON.
//
// The chart is validated; every problem is reported as "line N" (the
// chart's name as "name").
func ParseCSV(r io.Reader, name string, known []Category) (Chart, error) {
	c := Chart{Name: name}
	var p problems
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // counted here, to report the line and go on
	cr.ReuseRecord = true

	type rowKey struct {
		sec int
		row string
	}
	var (
		lines   [][][]int // [section][row][seat] -> line, to report chart problems by line
		secIdx  = map[string]int{}
		rowIdx  = map[rowKey]int{}
		catLine = map[string]int{}
		seats   = 0
		first   = true
	)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var perr *csv.ParseError
		if errors.As(err, &perr) {
			p.Add(fmt.Sprintf("line %d", perr.StartLine), "is not valid CSV: %s", perr.Err)
			break // the reader cannot tell where the next record starts
		}
		if err != nil {
			return c, err
		}
		line, _ := cr.FieldPos(0)
		at := fmt.Sprintf("line %d", line)
		if first {
			first = false
			if !isHeader(rec) {
				p.Add(at, "must be the header %s", CSVHeader)
			}
			continue
		}
		if len(rec) != len(csvColumns) {
			p.Add(at, "has %d fields; want %d (%s)", len(rec), len(csvColumns), CSVHeader)
			continue
		}
		if seats >= MaxSeats {
			p.Add(at, "is past the chart's limit of %d seats", MaxSeats)
			break
		}
		st, ok := csvSeat(&p, at, rec)
		if !ok {
			continue
		}
		seats++
		sec, row := rec[0], rec[1]
		si, ok := secIdx[sec]
		if !ok {
			si = len(c.Sections)
			secIdx[sec] = si
			c.Sections = append(c.Sections, Section{Label: sec, Name: sec, Kind: Seated})
			lines = append(lines, nil)
		}
		ri, ok := rowIdx[rowKey{si, row}]
		if !ok {
			ri = len(c.Sections[si].Rows)
			rowIdx[rowKey{si, row}] = ri
			c.Sections[si].Rows = append(c.Sections[si].Rows, Row{Label: row})
			lines[si] = append(lines[si], nil)
		}
		c.Sections[si].Rows[ri].Seats = append(c.Sections[si].Rows[ri].Seats, st)
		lines[si][ri] = append(lines[si][ri], line)
		if _, ok := catLine[st.Category]; !ok && st.Category != "" {
			catLine[st.Category] = line
			c.Categories = append(c.Categories, csvCategory(st.Category, known, len(c.Categories)))
		}
	}
	if first {
		p.Add("line 1", "must be the header %s", CSVHeader)
	} else if seats == 0 && p.Len() == 0 {
		p.Add("line 2", "must be the first seat: the file has no seats")
	}
	if seats == 0 {
		return c, p.Err()
	}

	// problems of the chart as a whole (of the lines read well), moved from
	// JSON paths to the line of the seat, row or section they concern.
	var cp problems
	validate(c, &cp)
	for path, msg := range cp.fields {
		p.Add(csvPlace(path, c, lines, catLine), "%s", msg)
	}
	p.more += cp.more
	return c, p.Err()
}

var pathPattern = regexp.MustCompile(`^(?:sections\[(\d+)\](?:\.rows\[(\d+)\](?:\.seats\[(\d+)\])?)?|categories\[(\d+)\])`)

// csvPlace is the "line N" of a JSON path of a chart read from CSV: the
// seat's line, or the first line of the row, section or category.
func csvPlace(path string, c Chart, lines [][][]int, catLine map[string]int) string {
	m := pathPattern.FindStringSubmatch(path)
	if m == nil {
		return path // "name", "sections": the file as a whole
	}
	n := func(s string) int { i, _ := strconv.Atoi(s); return i }
	switch {
	case m[4] != "":
		return fmt.Sprintf("line %d", catLine[c.Categories[n(m[4])].Key])
	case m[3] != "":
		return fmt.Sprintf("line %d", lines[n(m[1])][n(m[2])][n(m[3])])
	case m[2] != "":
		return fmt.Sprintf("line %d", lines[n(m[1])][n(m[2])][0])
	default:
		return fmt.Sprintf("line %d", lines[n(m[1])][0][0])
	}
}

func isHeader(rec []string) bool {
	if len(rec) != len(csvColumns) {
		return false
	}
	for i, f := range rec {
		f = strings.TrimPrefix(f, "\ufeff") // a spreadsheet's byte-order mark
		if !strings.EqualFold(strings.TrimSpace(f), csvColumns[i]) {
			return false
		}
	}
	return true
}

// csvSeat reads the seat of one line, reporting every problem of the line.
func csvSeat(p *problems, at string, rec []string) (Seat, bool) {
	ok := true
	bad := func(format string, args ...any) {
		p.Add(at, format, args...)
		ok = false
	}
	num := func(col int) int {
		v, err := strconv.Atoi(strings.TrimSpace(rec[col]))
		if err != nil {
			bad("%s must be a whole number", csvColumns[col])
		}
		return v
	}
	if rec[0] == "" {
		bad("section is required")
	}
	if rec[1] == "" {
		bad("row is required")
	}
	st := Seat{Number: num(2), X: num(3), Y: num(4), Category: strings.TrimSpace(rec[5])}
	if flags := strings.TrimSpace(rec[6]); flags != "" {
		for _, f := range strings.Split(flags, "|") {
			switch strings.TrimSpace(f) {
			case "accessible":
				st.Accessible = true
			case "companion":
				st.Companion = true
			default:
				bad("flags must be accessible or companion, joined by |")
			}
		}
	}
	return st, ok
}

func csvCategory(key string, known []Category, i int) Category {
	for _, k := range known {
		if k.Key == key {
			return k
		}
	}
	return Category{Key: key, Name: key, Color: Palette[i%len(Palette)]}
}
