package web

import (
	_ "embed"
	"net/http"
)

// openAPI describes the JSON API (OpenAPI 3.1). It is written by hand and
// checked by the tests against the handlers: every /api/ route of
// routes.go must be in it (TestOpenAPICoversRoutes), and every JSON
// answer the web tests get must match it (the test clients validate each
// one). A new route is added under "paths" with its answers.
//
//go:embed openapi.json
var openAPI []byte

// openAPIDoc serves the document.
func (s *Server) openAPIDoc(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, _ = w.Write(openAPI)
	return nil
}
