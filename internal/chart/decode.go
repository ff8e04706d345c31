package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// that is not JSON is 400; JSON of the wrong shape, or with more sections,
// categories, rows or seats than a chart may have, is 422 with the
// misplaced, mistyped or too long fields by path (the first
// maxReportedPaths of them). The layout is not validated here (see
// Validate).
//
// The body is walked against the document's types before anything is
// decoded (see shape), so memory and time stay bounded by the body's size
// and the chart limits whatever it holds. Decoding a list of millions of
// wrong values straight into the types built millions of zero structs
// first (about 10 GB allocated for a 32 MiB body), and naming the problems
// by decoding it again into any cost as much again.
func DecodeJSON(b []byte) (Document, error) {
	var d Document
	if len(bytes.TrimSpace(b)) == 0 {
		return d, apperr.E(apperr.BadRequest, "the request body is empty; send a chart as a JSON object")
	}
	if !utf8.Valid(b) {
		return d, apperr.E(apperr.BadRequest, "the request body is not valid UTF-8")
	}
	if !json.Valid(b) {
		return d, notJSON(b)
	}
	var p problems
	object, cut := checkShape(&p, b)
	if !object {
		return d, apperr.E(apperr.Invalid, "the chart must be a JSON object")
	}
	if p.Len() > 0 {
		msg := "the chart has fields of the wrong type, unknown fields or lists too long; nothing was saved"
		if cut {
			msg += fmt.Sprintf(" (the first %d problems are listed)", len(p.fields))
		}
		return d, &apperr.Error{Code: apperr.Invalid, Message: msg, Fields: p.fields}
	}
	// The shape fits (no unknown field either), so this decode is of a
	// chart within its limits; Unmarshal reads b in place.
	if err := json.Unmarshal(b, &d); err != nil {
		// The walk checks what decoding does; a difference between the two
		// is a bug, answered as a refusal rather than a 500.
		return Document{}, apperr.E(apperr.Invalid, "the chart could not be read: %s", clip(err.Error()))
	}
	return d, nil
}

// notJSON is the 400 for a body json.Valid refused, saying where it
// breaks. Decoding into an empty struct finds the place without keeping
// anything of the body.
func notJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	var skip struct{}
	err := dec.Decode(&skip)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		return apperr.E(apperr.BadRequest, "the request body is not valid JSON (at byte %d)", syntax.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apperr.E(apperr.BadRequest, "the request body is not valid JSON (it ends too early)")
	}
	// The first value is whole (of whatever type): something follows it.
	return apperr.E(apperr.BadRequest, "the request body must hold exactly one JSON value")
}
