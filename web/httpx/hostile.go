package httpx

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"seatd/internal/apperr"
)

// Text policy (docs/security.md#text-policy). Every text a caller sends — JSON and form fields, query
// strings, path segments, the Idempotency-Key header, cookie values — must
// be valid UTF-8 without control characters (C0, DEL, C1). No field of
// seatd is multi-line: names, emails, passwords, slugs, keys, lookups and
// release or block reasons are one line each (reasons show in one table
// cell and in the audit export), so not even tab, CR or LF is taken.
// Postgres refuses NUL in text outright; the rest would be stored and
// shown later to staff. Refusing it at the edge answers the caller's
// mistake with a 4xx and writes nothing.

// Problems a text can have, as field messages.
const (
	notUTF8     = "must be valid UTF-8"
	hasControls = "must not contain control characters"
)

// maxTextFields bounds the fields one refusal lists.
const maxTextFields = 10

// textProblem says what is wrong with s under the text policy, "" if
// nothing.
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return notUTF8
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return hasControls
		}
	}
	return ""
}

// textError is the refusal of the fields listed: 422 invalid.
func textError(fields map[string]string) error {
	if len(fields) == 0 {
		return nil
	}
	return &apperr.Error{Code: apperr.Invalid,
		Message: "some input is not valid text: control characters and invalid UTF-8 are refused", Fields: fields}
}

// fieldName is a caller-chosen name made safe to echo back in an error.
func fieldName(s string) string {
	if textProblem(s) == "" {
		return clip(s)
	}
	q := strconv.QuoteToASCII(s)
	if len(q) > 64 {
		q = q[:64]
	}
	return q
}

// addProblem records the problem of field name, if any and if there is
// room.
func addProblem(fields map[string]string, name, value string) {
	if p := textProblem(value); p != "" && len(fields) < maxTextFields {
		fields[fieldName(name)] = p
	}
}

// valuesText checks the keys and values of a query string or form.
func valuesText(vs url.Values, fields map[string]string) {
	for k, v := range vs {
		addProblem(fields, k, k)
		for _, x := range v {
			addProblem(fields, k, x)
		}
	}
}

// hostileHeaders are the headers whose values reach the application as
// text. (net/http already refuses most control bytes in headers; invalid
// UTF-8 and tab get through.)
var hostileHeaders = []string{"Idempotency-Key", "Cookie"}

// requestText checks what every route may read before its handler
// decodes a body: the path, the query string and the text headers.
func requestText(r *http.Request) error {
	fields := map[string]string{}
	addProblem(fields, "path", r.URL.Path)
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return apperr.E(apperr.BadRequest, "the query string is not valid url-encoded data")
	}
	valuesText(q, fields)
	for _, h := range hostileHeaders {
		for _, v := range r.Header.Values(h) {
			addProblem(fields, h, v)
		}
	}
	return textError(fields)
}

// RefuseHostileText answers a request whose path, query string or text
// headers break the text policy before it reaches the session store or a
// route: JSON for the API and JSON bodies, an error page (renderPage) for
// pages.
func RefuseHostileText(errs *Errors, renderPage func(http.ResponseWriter, *http.Request, error), next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := requestText(r); err != nil {
			if wantsPage(r) {
				renderPage(w, r, err)
			} else {
				errs.Write(w, r, err)
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wantsPage tells a browser's page request from an API call.
func wantsPage(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, "/live/") &&
		MediaType(r) != MediaJSON
}

// structText checks every string a decoded body holds, naming each field
// as the caller sent it (seat_ids[2]).
func structText(dst any) error {
	fields := map[string]string{}
	walkText(reflect.ValueOf(dst), "", fields)
	return textError(fields)
}

func walkText(v reflect.Value, name string, fields map[string]string) {
	if len(fields) >= maxTextFields {
		return
	}
	switch v.Kind() {
	case reflect.String:
		addProblem(fields, name, v.String())
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkText(v.Elem(), name, fields)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkText(v.Index(i), fmt.Sprintf("%s[%d]", name, i), fields)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := fmt.Sprint(it.Key().Interface())
			addProblem(fields, joinName(name, k), k)
			walkText(it.Value(), joinName(name, k), fields)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if n == "-" {
				continue
			}
			if n == "" {
				n = f.Name
			}
			walkText(v.Field(i), joinName(name, n), fields)
		}
	}
}

func joinName(parent, child string) string {
	if parent == "" {
		return child
	}
	return parent + "." + child
}
