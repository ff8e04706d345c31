//go:build !fuzzing

package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// documented reports whether a route of routes.go belongs in the OpenAPI
// document: the JSON API, the payment provider's webhook endpoint, and
// the account posts it relies on (their GETs are HTML pages). path may be
// a pattern or a request's path.
func documented(method, path string) bool {
	if strings.HasPrefix(path, "/api/") {
		return true
	}
	if path == "/webhooks/stripe" {
		return method == http.MethodPost
	}
	if method != http.MethodPost {
		return false
	}
	switch path {
	case "/verify-email", "/verify-email/resend", "/password-reset", "/password-reset/confirm", "/invitations/accept":
		return true
	}
	return path == "/login" || path == "/logout" || path == "/o/{org}/signup" ||
		(strings.HasPrefix(path, "/o/") && strings.HasSuffix(path, "/signup") && strings.Count(path, "/") == 3)
}

// TestOpenAPICoversRoutes: every route routes.go registers under /api/
// (plus sign-in, sign-out and sign-up) is in web/openapi.json with its
// method, and the document names no route that does not exist.
func TestOpenAPICoversRoutes(t *testing.T) {
	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("web/openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	registered := map[string]bool{}
	re := regexp.MustCompile(`(?:mux|machine)\.Handle(?:Func)?\("([A-Z]+) (/[^"]*)"`)
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		method, path := m[1], m[2]
		if !documented(method, path) {
			continue
		}
		registered[strings.ToLower(method)+" "+path] = true
		if _, ok := doc.Paths[path][strings.ToLower(method)]; !ok {
			t.Errorf("route %s %s (web/routes.go) is missing from web/openapi.json: add it under \"paths\" -> %q -> %q with its answers",
				method, path, path, strings.ToLower(method))
		}
	}
	if len(registered) < 20 {
		t.Fatalf("found only %d API routes in routes.go; has its form changed?", len(registered))
	}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			if !registered[method+" "+path] {
				t.Errorf("web/openapi.json names %s %s, which web/routes.go does not register", strings.ToUpper(method), path)
			}
		}
	}
}

// TestOpenAPIDocument: the document is valid OpenAPI 3.1 (against the
// OpenAPI Initiative's schema of a 3.1 document, web/testdata), each of
// its answers' schemas compiles, and it is served as is.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	c := jsonschema.NewCompiler()
	oas, err := c.Compile("testdata/oas-3.1-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPI))
	if err != nil {
		t.Fatalf("web/openapi.json: %v", err)
	}
	if err := oas.Validate(doc); err != nil {
		t.Errorf("web/openapi.json is not an OpenAPI 3.1 document: %v", err)
	}
	openAPIDocument(t)
	s := newTestServer(t, nil)
	r := s.client().do("GET", "/api/v1/openapi.json", nil).want(t, http.StatusOK)
	if !bytes.Equal(bytes.TrimSpace(r.body), bytes.TrimSpace(openAPI)) {
		t.Fatal("served document differs from web/openapi.json")
	}
}

// apiDoc is web/openapi.json as the test clients check answers against
// it: each path template's operations, each operation's answers by
// status ("200", or "default") and media type, with the schema of the
// JSON ones compiled.
type apiDoc struct {
	paths []apiPath
}

type apiPath struct {
	segs []string // the template's segments; "{name}" matches any one
	ops  map[string]map[string]map[string]*jsonschema.Schema
}

var openAPIOnce struct {
	sync.Once
	doc *apiDoc
	err error
}

// openAPIDocument compiles web/openapi.json once per test binary.
func openAPIDocument(t testing.TB) *apiDoc {
	t.Helper()
	openAPIOnce.Do(func() { openAPIOnce.doc, openAPIOnce.err = compileAPIDoc(openAPI) })
	if openAPIOnce.err != nil {
		t.Fatalf("web/openapi.json: %v", openAPIOnce.err)
	}
	return openAPIOnce.doc
}

// compileAPIDoc reads the document's paths and compiles each answer's
// schema where it stands in the document, so its references
// (#/components/schemas/...) resolve within it. The schemas are JSON
// Schema 2020-12, as OpenAPI 3.1 has them, with formats asserted.
func compileAPIDoc(raw []byte) (*apiDoc, error) {
	const loc = "file:///openapi.json"
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	pointer := strings.NewReplacer("~", "~0", "/", "~1")
	out := &apiDoc{}
	for path, ops := range d.Paths {
		p := apiPath{segs: strings.Split(path, "/"), ops: map[string]map[string]map[string]*jsonschema.Schema{}}
		for method, rawOp := range ops {
			var op struct {
				Responses map[string]struct {
					Content map[string]struct {
						Schema json.RawMessage `json:"schema"`
					} `json:"content"`
				} `json:"responses"`
			}
			if err := json.Unmarshal(rawOp, &op); err != nil || op.Responses == nil {
				continue // parameters, summary, description
			}
			answers := map[string]map[string]*jsonschema.Schema{}
			for status, r := range op.Responses {
				answers[status] = map[string]*jsonschema.Schema{}
				for media, m := range r.Content {
					var sch *jsonschema.Schema
					if len(m.Schema) > 0 && strings.HasSuffix(media, "json") {
						at := fmt.Sprintf("%s#/paths/%s/%s/responses/%s/content/%s/schema",
							loc, pointer.Replace(path), method, status, pointer.Replace(media))
						if sch, err = c.Compile(at); err != nil {
							return nil, fmt.Errorf("%s %s answer %s (%s): %w", strings.ToUpper(method), path, status, media, err)
						}
					}
					answers[status][media] = sch
				}
			}
			p.ops[method] = answers
		}
		out.paths = append(out.paths, p)
	}
	return out, nil
}

// operation finds the answers of method on path: the template that
// matches it with the most fixed segments (so /events/{event}/seats wins
// over /events/{event}/{x}). ok is false for a path or method the
// document does not have.
func (d *apiDoc) operation(method, path string) (map[string]map[string]*jsonschema.Schema, bool) {
	segs := strings.Split(path, "/")
	var best map[string]map[string]*jsonschema.Schema
	bestFixed := -1
	for _, p := range d.paths {
		if len(p.segs) != len(segs) {
			continue
		}
		fixed := 0
		match := true
		for i, s := range p.segs {
			switch {
			case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
				match = match && segs[i] != ""
			case s == segs[i]:
				fixed++
			default:
				match = false
			}
		}
		if ops, ok := p.ops[strings.ToLower(method)]; match && ok && fixed > bestFixed {
			best, bestFixed = ops, fixed
		}
	}
	return best, best != nil
}

// check reports how an answer breaks the document, or nil if it does
// not: its status must be documented (or the operation have a default),
// its media type one of that answer's, and a JSON body valid against its
// schema.
func (d *apiDoc) check(method, path string, status int, contentType string, body []byte) error {
	answers, ok := d.operation(method, path)
	if !ok {
		return nil // not a documented route: TestOpenAPICoversRoutes
	}
	content, ok := answers[strconv.Itoa(status)]
	if !ok {
		if content, ok = answers["default"]; !ok {
			return fmt.Errorf("status %d is not documented", status)
		}
	}
	if len(content) == 0 {
		return nil // an answer without content
	}
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Errorf("content type %q: %w", contentType, err)
	}
	sch, ok := content[media]
	if !ok {
		documented := slices.Sorted(maps.Keys(content))
		return fmt.Errorf("content type %s is not documented for %d (documented: %s)", media, status, strings.Join(documented, ", "))
	}
	if sch == nil {
		return nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return sch.Validate(v)
}

// openAPICheck is the test clients' transport: every answer of a
// documented route is validated against web/openapi.json, so each web
// test that calls the API also checks the document against the real
// handlers. Answers of paths the document does not have (probes of
// routes that do not exist) are left to TestOpenAPICoversRoutes.
type openAPICheck struct {
	t    testing.TB
	next http.RoundTripper
}

func (c openAPICheck) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(req)
	if err != nil || !documented(req.Method, req.URL.Path) || res.StatusCode == http.StatusSwitchingProtocols {
		return res, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	plain := body
	if res.Header.Get("Content-Encoding") == "gzip" {
		// The document describes the content, as the client decodes it.
		if plain, err = gunzip(body); err != nil {
			return nil, err
		}
	}
	if err := openAPIDocument(c.t).check(req.Method, req.URL.Path, res.StatusCode, res.Header.Get("Content-Type"), plain); err != nil {
		c.t.Errorf("%s %s answered %d, which web/openapi.json does not allow:\n  %v\nbody: %.500s",
			req.Method, req.URL.Path, res.StatusCode, err, body)
	}
	return res, nil
}

// recordingTB records Errorf calls instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, format)
}

type fixedAnswer struct {
	status int
	body   string
	ctype  string // JSON when empty
}

func (f fixedAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	ctype := f.ctype
	if ctype == "" {
		ctype = "application/json; charset=utf-8"
	}
	return &http.Response{StatusCode: f.status, Header: http.Header{"Content-Type": {ctype}},
		Body: io.NopCloser(strings.NewReader(f.body)), Request: req}, nil
}

// TestOpenAPICheckCatches: the clients' check fails a test on an answer
// the document does not allow, and passes one it does.
func TestOpenAPICheckCatches(t *testing.T) {
	t.Parallel()
	const uid = "6f1c3a52-5d7e-4a53-9f5f-0c1e1c3f1a10"
	event := `{"id":"` + uid + `","name":"Gala","venue":"Hall","starts_at":"2026-05-01T17:30:00Z","time_zone":"Europe/Paris",` +
		`"status":"draft","on_sale_at":null,"sales_end_at":null,"chart_version_id":"` + uid + `","hold_ttl":null,` +
		`"max_holds_per_buyer":null,"hold_extension":null,"orphan_rule":"off","accessible_release_at":null,"buyer_cancel_hours":null,"waiting_room":null,` +
		`"prices":[{"category":"std","name":"Standard","color":"#4f46e5","price_minor":2500,"currency":"EUR"}],"seats":10}`
	booking := `{"id":"` + uid + `","event_id":"` + uid + `","status":"confirmed","reference":"ABCD-1234","channel":"box_office",` +
		`"payment_method":"cash","customer":{"name":"Ada","email":"ada@example.com"},"created_at":"2026-05-01T17:30:00Z",` +
		`"tickets":[{"id":"` + uid + `","seat_id":"` + uid + `","seat":"A-1-1","status":"valid","price_minor":2500,"currency":"EUR"}]}`
	occupancy := `{"available":1,"held":0,"sold":0,"blocked":0,"total":1,"percent_available":100,"percent_held":0,` +
		`"percent_sold":0,"percent_blocked":0,"sections":[],"categories":[{"category":"std","name":"Standard",` +
		`"price_minor":2500,"currency":"EUR","available":1,"held":0,"sold":0,"blocked":0,"total":1}]}`
	cases := []struct {
		name   string
		method string
		path   string
		ans    fixedAnswer
		bad    bool
	}{
		{"good account", "GET", "/api/v1/me", fixedAnswer{200, `{"user":{"id":"6f1c3a52-5d7e-4a53-9f5f-0c1e1c3f1a10","email":"a@b.c","role":"buyer"},"org":{"id":"6f1c3a52-5d7e-4a53-9f5f-0c1e1c3f1a10","slug":"x","name":"X"}}`, ""}, false},
		{"missing field", "GET", "/api/v1/me", fixedAnswer{200, `{"user":{"id":"6f1c3a52-5d7e-4a53-9f5f-0c1e1c3f1a10","role":"buyer"},"org":{}}`, ""}, true},
		{"unknown role", "GET", "/api/v1/me", fixedAnswer{200, `{"user":{"id":"6f1c3a52-5d7e-4a53-9f5f-0c1e1c3f1a10","email":"a@b.c","role":"admin"},"org":{"id":"6f1c3a52-5d7e-4a53-9f5f-0c1e1c3f1a10","slug":"x","name":"X"}}`, ""}, true},
		{"error shape", "GET", "/api/v1/events", fixedAnswer{404, `{"error":"not_found","message":"no"}`, ""}, true},
		{"good error", "GET", "/api/v1/events", fixedAnswer{404, `{"error":"not_found","message":"no","fields":{}}`, ""}, false},
		{"unknown error code", "GET", "/api/v1/events", fixedAnswer{409, `{"error":"nope","message":"no","fields":{}}`, ""}, true},
		{"sold out", "POST", "/api/v1/events/" + uid + "/holds", fixedAnswer{409, `{"error":"sold_out","message":"only 1 place left","fields":{}}`, ""}, false},
		{"orphan seat", "POST", "/api/v1/events/" + uid + "/holds", fixedAnswer{409, `{"error":"orphan_seat","message":"a seat would be left alone","fields":{},"seats":["` + uid + `"]}`, ""}, false},
		{"good event", "GET", "/api/v1/events/" + uid, fixedAnswer{200, event, ""}, false},
		{"event without status", "GET", "/api/v1/events/" + uid, fixedAnswer{200, strings.Replace(event, `"status":"draft",`, "", 1), ""}, true},
		{"event with a field not documented", "GET", "/api/v1/events/" + uid, fixedAnswer{200, strings.Replace(event, `{`, `{"secret":1,`, 1), ""}, true},
		{"good booking", "GET", "/api/v1/bookings/" + uid, fixedAnswer{200, booking, ""}, false},
		{"booking of unknown status", "GET", "/api/v1/bookings/" + uid, fixedAnswer{200, strings.Replace(booking, "confirmed", "pending", 1), ""}, true},
		{"occupancy category without revenue", "GET", "/api/v1/events/" + uid + "/occupancy", fixedAnswer{200, occupancy, ""}, true},
		{"chart without sections", "GET", "/api/v1/charts/" + uid, fixedAnswer{200, `{"id":"` + uid + `","version":1,"name":"Hall","categories":[]}`, ""}, true},
		{"good export", "GET", "/api/v1/events/" + uid + "/exports/audit.csv", fixedAnswer{200, "id,at,action,entity,entity_id,seat_id,actor_email,data\n", "text/csv; charset=utf-8"}, false},
		{"export as JSON", "GET", "/api/v1/events/" + uid + "/exports/audit.csv", fixedAnswer{200, `{}`, ""}, true},
	}
	for _, c := range cases {
		rec := &recordingTB{TB: t}
		req, _ := http.NewRequest(c.method, "http://seatd.test"+c.path, nil)
		if _, err := (openAPICheck{t: rec, next: c.ans}).RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		if got := len(rec.errs) > 0; got != c.bad {
			t.Errorf("%s: reported %v, want %v", c.name, rec.errs, c.bad)
		}
	}
}
