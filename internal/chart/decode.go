package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"seatd/internal/apperr"
)

// Document is a chart as the API sends and takes it: the layout, and the
// chart id and version GET adds, so that what GET returns is accepted back
// unchanged (POST ignores them; PUT checks the id is the chart's).
type Document struct {
	ID      *uuid.UUID `json:"id,omitempty"`
	Version int        `json:"version,omitempty"`
	Chart
}

// DecodeJSON reads one chart document, refusing unknown fields. A body
// that is not JSON is 400; JSON of the wrong shape is 422 with every
// misplaced or mistyped field by path. The layout is not validated here
// (see Validate).
func DecodeJSON(b []byte) (Document, error) {
	var d Document
	if len(bytes.TrimSpace(b)) == 0 {
		return d, apperr.E(apperr.BadRequest, "the request body is empty; send a chart as a JSON object")
	}
	if !utf8.Valid(b) {
		return d, apperr.E(apperr.BadRequest, "the request body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&d)
	if err == nil {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return d, apperr.E(apperr.BadRequest, "the request body must hold exactly one JSON value")
		}
		return d, nil
	}
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return d, apperr.E(apperr.BadRequest, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return d, apperr.E(apperr.BadRequest, "the request body is not valid JSON (it ends too early)")
	}
	// The shape is wrong somewhere. encoding/json names only the first
	// such field and without list indices, so the document is walked again
	// against the types to name every one (a slow path only refusals take).
	var raw any
	dec = json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if derr := dec.Decode(&raw); derr != nil {
		return d, apperr.E(apperr.BadRequest, "the request body is not valid JSON")
	}
	if _, ok := raw.(map[string]any); !ok {
		return d, apperr.E(apperr.Invalid, "the chart must be a JSON object")
	}
	var p problems
	shape(&p, raw, reflect.TypeFor[Document](), "")
	if p.Len() == 0 {
		// Only an id that is not a UUID gets here (its error is no type
		// error the walk knows).
		p.Add("id", "must be a chart id (a UUID)")
	}
	return d, &apperr.Error{Code: apperr.Invalid, Message: "the chart has fields of the wrong type or unknown fields; nothing was saved",
		Fields: p.fields}
}

var uuidType = reflect.TypeFor[uuid.UUID]()

// shape reports where v, decoded JSON, does not fit type t.
func shape(p *problems, v any, t reflect.Type, path string) {
	if v == nil {
		return // null leaves a field at its zero value
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == uuidType:
		if s, ok := v.(string); !ok || uuid.Validate(s) != nil {
			p.Add(path, "must be a UUID")
		}
	case t.Kind() == reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			p.Add(path, "must be an object")
			return
		}
		fields := jsonFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok {
				p.Add(join(path, clipKey(k)), "is not a known field")
				continue
			}
			shape(p, m[k], ft, join(path, k))
		}
	case t.Kind() == reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			p.Add(path, "must be a list")
			return
		}
		for i, e := range l {
			shape(p, e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.String:
		if _, ok := v.(string); !ok {
			p.Add(path, "must be a string")
		}
	case t.Kind() == reflect.Bool:
		if _, ok := v.(bool); !ok {
			p.Add(path, "must be true or false")
		}
	case t.Kind() == reflect.Int:
		n, ok := v.(json.Number)
		if !ok {
			p.Add(path, "must be a number")
		} else if _, err := n.Int64(); err != nil {
			p.Add(path, "must be a whole number")
		}
	}
}

// jsonFields maps the JSON names of struct t's fields (embedded structs'
// included) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
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
		out[name] = f.Type
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// clipKey bounds an unknown key echoed back as a path.
func clipKey(k string) string {
	k = strings.ToValidUTF8(k, "")
	if len(k) > 40 {
		k = k[:40]
	}
	return k
}
