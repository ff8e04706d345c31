package chart

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"seatd/internal/apperr"
)

// FuzzChart: any body, as JSON or as CSV, is either refused with a
// caller's error (400 or 422, never a panic or an internal error) or is a
// valid chart whose JSON form reads back to the same chart; a JSON body
// the shape walk lets through decodes.
func FuzzChart(f *testing.F) {
	f.Add([]byte(`{"name":"x","categories":[{"key":"a","name":"A","color":"#000000"}],"sections":[{"label":"A","kind":"seated","rows":[{"label":"1","seats":[{"number":1,"x":0,"y":0,"category":"a","accessible":true},{"number":2,"x":1,"y":0,"category":"a","companion":true}]}]},{"label":"G","kind":"ga","capacity":5,"category":"a"}]}`))
	f.Add([]byte(`{"id":"6f1c2b8e-8f5e-4c55-a0d2-3a6d8f1b2c3d","version":2,"name":"x","sections":[{"label":"A","kind":"seated","rows":[{"label":"1","seats":[{"number":"1"}]}]}]}`))
	f.Add([]byte(CSVHeader + "\nA,1,1,0,0,a,accessible\nA,1,2,1,0,a,companion\n"))
	f.Add([]byte(CSVHeader + "\nA,1,x,0,0,,vip\n\"B,1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		callerError := func(err error) {
			if c := apperr.CodeOf(err); c != apperr.Invalid && c != apperr.BadRequest {
				t.Fatalf("error of code %s: %v", c, err)
			}
		}
		var charts []Chart
		if d, err := DecodeJSON(b); err != nil {
			callerError(err)
			// The shape walk and the decode agree: what the walk lets
			// through decodes.
			if e, _ := apperr.As(err); strings.HasPrefix(e.Message, "the chart could not be read") {
				t.Fatalf("%q passed the shape walk but did not decode: %v", b, err)
			}
		} else if err := Validate(d.Chart); err != nil {
			callerError(err)
		} else {
			charts = append(charts, d.Chart)
		}
		if c, err := ParseCSV(bytes.NewReader(b), "fuzz", nil); err != nil {
			callerError(err)
		} else {
			charts = append(charts, c)
		}
		for _, c := range charts {
			js, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			// What is stored (the JSON form) reads back and stores the same.
			back, err := DecodeJSON(js)
			if err != nil {
				t.Fatalf("round trip of %s: %v", js, err)
			}
			if err := Validate(back.Chart); err != nil {
				t.Fatalf("stored chart %s no longer valid: %v", js, err)
			}
			again, err := json.Marshal(back.Chart)
			if err != nil || !bytes.Equal(again, js) {
				t.Fatalf("round trip changed %s into %s", js, again)
			}
		}
	})
}
