package httpx

import (
	"encoding/json"
	"net/http"
)

// jsonHeaders are the fixed headers of every JSON answer (see setFixed);
// never modified.
var jsonHeaders = http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Cache-Control": {"no-store"}}

// WriteJSON answers v as JSON. It encodes before writing the header, so a
// value that cannot be encoded (a bug) still gets a clean 500.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal","message":"` + InternalMessage + `","fields":{}}`)
	}
	setFixed(w.Header(), jsonHeaders)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// List answers what a list handler loaded: 200 {"<name>": [view(item),
// ...]} (an empty list, never null), or the error loading failed with. It
// takes the loader's two results as they come:
//
//	return httpx.List(w, "charts", chartView)(s.charts.List(ctx, a.Org))
func List[T, V any](w http.ResponseWriter, name string, view func(T) V) func([]T, error) error {
	return func(items []T, err error) error {
		if err != nil {
			return err
		}
		out := make([]V, len(items))
		for i, it := range items {
			out[i] = view(it)
		}
		WriteJSON(w, http.StatusOK, map[string][]V{name: out})
		return nil
	}
}

// setFixed sets headers whose names are canonical and whose values never
// change, sharing their value slices rather than allocating one per
// header and request as Header.Set does (every answer carries them).
// Sharing is safe: Set and Del replace a slice, Add appends to a full one
// (which copies it), and nothing writes into a header's values in place.
func setFixed(h, fixed http.Header) {
	for k, v := range fixed {
		h[k] = v[:len(v):len(v)]
	}
}
