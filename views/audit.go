package views

import (
	"net/url"
	"strings"
	"time"
)

// View models of the audit log.

// AuditFilter is the audit log's filter (query parameters).
type AuditFilter struct {
	Seat   string
	Email  string
	Action string
}

// AuditRow is one audit log entry.
type AuditRow struct {
	ID     int64
	At     time.Time
	Action string
	Actor  string // "" for the system
	Holder string
	Seat   string
	Reason string
}

// AuditLog is a page of an event's audit log.
type AuditLog struct {
	EventID   string
	EventName string
	Filter    AuditFilter
	Actions   []string
	Rows      []AuditRow
	// Older is the URL of the next (older) page, "" on the last page.
	Older string
	// First is true on the newest page.
	First bool
	// Message explains an empty result ("no seat B-Z-99").
	Message string
}

// Newest is the URL of the first page with the same filter.
func (l AuditLog) Newest() string {
	return "/admin/events/" + l.EventID + "/audit" + l.Filter.Query("")
}

// Query is the filter as a query string with before added when not empty.
func (f AuditFilter) Query(before string) string {
	var p []string
	for _, kv := range [][2]string{{"seat", f.Seat}, {"email", f.Email}, {"action", f.Action}, {"before", before}} {
		if kv[1] != "" {
			p = append(p, kv[0]+"="+url.QueryEscape(kv[1]))
		}
	}
	if len(p) == 0 {
		return ""
	}
	return "?" + strings.Join(p, "&")
}
