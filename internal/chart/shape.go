package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// checkShape walks b, one JSON value that json.Valid accepted, against
// Document and records in p every field of the wrong type, every unknown
// field and every list longer than a chart may have. object is false when
// b is not an object; cut when the walk stopped at maxReportedPaths
// problems (there may be more). It reads b in place, decoding nothing but
// the few bytes it checks and building a path only for a problem, so a
// body of millions of values costs about what reading it does
// (encoding/json's Decoder.Token, at ~3 µs a value, took a minute over 32
// MiB). It stops at the problems' bound, or at the first list past its
// limit: the chart is refused anyway, and reading on would only be work.
func checkShape(p *problems, b []byte) (object, cut bool) {
	w := walker{s: scanner{b: b}, p: p}
	if w.s.peek() != '{' {
		return false, false
	}
	w.value(reflect.TypeFor[Document]())
	return true, w.cut
}

var (
	uuidType     = reflect.TypeFor[uuid.UUID]()
	sectionType  = reflect.TypeFor[Section]()
	categoryType = reflect.TypeFor[Category]()
	rowType      = reflect.TypeFor[Row]()
	seatType     = reflect.TypeFor[Seat]()
	// fieldsOf are the JSON fields of Document and of every struct in it,
	// worked out once (read only after).
	fieldsOf = structFields(reflect.TypeFor[Document](), map[reflect.Type]map[string]field{})
)

// field is a struct field as JSON names it.
type field struct {
	name string
	t    reflect.Type
}

// seg is one step of a JSON path: a field's name, or a list's index
// (key "").
type seg struct {
	key   string
	index int
}

// walker checks a document's shape; see checkShape.
type walker struct {
	s scanner
	p *problems
	// path is where the walk is, written out (sections[2].rows[0].label)
	// only when a problem is found there; reused, so the walk allocates
	// nothing for the values that are fine.
	path        []seg
	rows, seats int  // counted over the whole chart
	stop        bool // a list passed its limit, or the problems their bound
	cut         bool // stopped at the problems' bound
}

func (w *walker) add(msg string) {
	var b strings.Builder
	for _, s := range w.path {
		switch {
		case s.key == "":
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + s.key)
		default:
			b.WriteString(s.key)
		}
	}
	w.p.Add(b.String(), "%s", msg)
	if w.p.Len() >= maxReportedPaths {
		w.stop, w.cut = true, true
	}
}

// value reads one value, which should be of type t.
func (w *walker) value(t reflect.Type) {
	if w.stop {
		return
	}
	c := w.s.peek()
	if c == 'n' { // null leaves a field at its zero value
		w.s.skipValue()
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == uuidType:
		if c != '"' || uuid.Validate(w.s.text()) != nil {
			w.add("must be a UUID")
		}
		if c != '"' {
			w.s.skipValue()
		}
	case t.Kind() == reflect.Struct:
		if c != '{' {
			w.add("must be an object")
			w.s.skipValue()
			return
		}
		w.object(t)
	case t.Kind() == reflect.Slice:
		if c != '[' {
			w.add("must be a list")
			w.s.skipValue()
			return
		}
		w.list(t.Elem())
	case t.Kind() == reflect.String:
		if c != '"' {
			w.add("must be a string")
		}
		w.s.skipValue()
	case t.Kind() == reflect.Bool:
		if c != 't' && c != 'f' {
			w.add("must be true or false")
		}
		w.s.skipValue()
	case t.Kind() == reflect.Int:
		if c != '-' && (c < '0' || c > '9') {
			w.add("must be a number")
			w.s.skipValue()
		} else if !wholeNumber(w.s.scalar()) {
			w.add("must be a whole number")
		}
	default:
		w.s.skipValue()
	}
}

func (w *walker) object(t reflect.Type) {
	fields := fieldsOf[t]
	w.s.next() // {
	for !w.stop && w.s.peek() != '}' {
		raw := w.s.str()
		w.s.next() // :
		var f field
		var ok bool
		if bytes.IndexByte(raw, '\\') < 0 {
			f, ok = fields[string(raw[1:len(raw)-1])] // no copy of the key
		} else {
			f, ok = fields[unquote(raw)]
		}
		if ok {
			w.path = append(w.path, seg{key: f.name})
			w.value(f.t)
		} else {
			w.path = append(w.path, seg{key: clipKey(unquote(raw))})
			w.add("is not a known field")
			w.s.skipValue()
		}
		w.path = w.path[:len(w.path)-1]
		if w.s.peek() == ',' {
			w.s.next()
		}
	}
	if !w.stop {
		w.s.next() // }
	}
}

// list reads a list of elem, counting it against its limit: sections
// and categories per chart, rows and seats over the whole chart (each
// row has a seat, so MaxSeats bounds rows too).
func (w *walker) list(elem reflect.Type) {
	w.s.next() // [
	for i := 0; !w.stop && w.s.peek() != ']'; i++ {
		if over := w.count(elem, i); over != "" {
			w.add(over)
			w.stop = true // the chart is refused on its size: nothing more to say
			return
		}
		w.path = append(w.path, seg{index: i})
		w.value(elem)
		w.path = w.path[:len(w.path)-1]
		if w.s.peek() == ',' {
			w.s.next()
		}
	}
	if !w.stop {
		w.s.next() // ]
	}
}

// count counts the i-th element of a list of elem, and says what limit it
// passes, if any.
func (w *walker) count(elem reflect.Type, i int) string {
	switch elem {
	case sectionType:
		if i >= MaxSections {
			return fmt.Sprintf("must list at most %d sections", MaxSections)
		}
	case categoryType:
		if i >= MaxCategories {
			return fmt.Sprintf("must list at most %d categories", MaxCategories)
		}
	case rowType:
		if w.rows++; w.rows > MaxSeats {
			return fmt.Sprintf("is past the chart's limit of %d rows", MaxSeats)
		}
	case seatType:
		if w.seats++; w.seats > MaxSeats {
			return fmt.Sprintf("is past the chart's limit of %d seats", MaxSeats)
		}
	}
	return ""
}

// wholeNumber reports whether a JSON number is an integer that fits an
// int (as encoding/json decodes into one: no fraction, no exponent).
func wholeNumber(n []byte) bool {
	digits := bytes.TrimPrefix(n, []byte("-"))
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	if len(digits) < 19 { // below 10^18: fits
		return true
	}
	_, err := strconv.ParseInt(string(n), 10, 64)
	return err == nil
}

// structFields adds to out the JSON fields of struct t and of the structs
// its fields hold (through pointers and lists), and returns out.
func structFields(t reflect.Type, out map[reflect.Type]map[string]field) map[reflect.Type]map[string]field {
	if _, done := out[t]; done || t == uuidType {
		return out
	}
	out[t] = jsonFields(t)
	for _, f := range out[t] {
		ft := f.t
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			structFields(ft, out)
		}
	}
	return out
}

// jsonFields maps the JSON names of struct t's fields (embedded structs'
// included) to them.
func jsonFields(t reflect.Type) map[string]field {
	out := map[string]field{}
	for f := range t.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out[name] = field{name: name, t: f.Type}
	}
	return out
}

// clipKey bounds an unknown key echoed back as a path.
func clipKey(k string) string {
	k = strings.ToValidUTF8(k, "")
	if len(k) > 40 {
		k = k[:40]
	}
	return k
}

// unquote is the value of a JSON string as written (valid JSON).
func unquote(raw []byte) string {
	var v string
	_ = json.Unmarshal(raw, &v) // valid JSON: cannot fail
	return v
}

// scanner reads the tokens of a JSON document json.Valid accepted, in
// place. Because the document is valid it only tells tokens apart; it
// never has to report a syntax error.
type scanner struct {
	b []byte
	i int
}

// peek is the first byte of the next token ('{', '[', '"', 't', '-', ...,
// or ',', ':', '}', ']'); 0 at the end.
func (s *scanner) peek() byte {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.b[s.i]
		}
	}
	return 0
}

// next consumes a one-byte token.
func (s *scanner) next() { s.peek(); s.i++ }

// str consumes a string and returns it as written, quotes included.
func (s *scanner) str() []byte {
	s.peek()
	start := s.i
	for s.i++; s.b[s.i] != '"'; s.i++ {
		if s.b[s.i] == '\\' {
			s.i++ // the escaped byte cannot end the string
		}
	}
	s.i++
	return s.b[start:s.i]
}

// text consumes a string and returns its value.
func (s *scanner) text() string {
	raw := s.str()
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1])
	}
	return unquote(raw)
}

// scalar consumes a number, true, false or null and returns it.
func (s *scanner) scalar() []byte {
	s.peek()
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return s.b[start:s.i]
		}
		s.i++
	}
	return s.b[start:]
}

// skipValue consumes one value of any kind, however deep, without
// recursion.
func (s *scanner) skipValue() {
	depth := 0
	for {
		switch s.peek() {
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			depth--
			s.i++
		case ',', ':':
			s.i++
			continue
		case '"':
			s.str()
		default:
			s.scalar()
		}
		if depth == 0 {
			return
		}
	}
}
