package api

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"seatd/internal/gate"
	"seatd/internal/hold"
	"seatd/web/httpx"
)

// TestChartUploadGate: while the uploads gate is full a chart upload is
// answered 503 with Retry-After, before its body is read; once a place is
// free the same upload goes on to be read (here: refused as not JSON).
func TestChartUploadGate(t *testing.T) {
	t.Parallel()
	// One place and no queue: a second upload is refused at once.
	h := &Charts{uploads: gate.New(1, time.Millisecond, 0)}
	errs := httpx.NewErrors(slog.New(slog.NewTextHandler(io.Discard, nil)))
	a := hold.Actor{Org: uuid.New(), User: uuid.New(), Role: hold.RoleOrganizer}
	upload := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/api/v1/charts", strings.NewReader("{not json"))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		if err := h.Create(w, r, a); err != nil {
			errs.Write(w, r, err)
		}
		return w
	}

	leave, err := h.uploads.Enter(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	w := upload()
	var body httpx.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("answer %q: %v", w.Body, err)
	}
	if w.Code != http.StatusServiceUnavailable || body.Error != "unavailable" || w.Header().Get("Retry-After") == "" {
		t.Fatalf("upload with the gate full: %d %s, Retry-After %q; want 503 unavailable with Retry-After",
			w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	leave()
	if w := upload(); w.Code != http.StatusBadRequest {
		t.Fatalf("upload with a free place: %d %s, want 400 (the body read and refused)", w.Code, w.Body)
	}
}
