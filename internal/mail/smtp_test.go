package mail_test

import (
	"strings"
	"testing"

	"seatd/internal/mail"
)

// TestParseURL: the scheme chooses the TLS mode and default port; user
// and password come URL-encoded; ?auth= names a mechanism; anything else
// is refused without echoing the password.
func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		want mail.Server
	}{
		{"smtp://127.0.0.1:1025", mail.Server{Host: "127.0.0.1", Port: 1025, TLS: mail.STARTTLSIfOffered}},
		{"smtp://relay.internal", mail.Server{Host: "relay.internal", Port: 25, TLS: mail.STARTTLSIfOffered}},
		{"smtp+starttls://apikey:s%40cret@smtp.provider.example", mail.Server{Host: "smtp.provider.example", Port: 587,
			TLS: mail.STARTTLS, Username: "apikey", Password: "s@cret"}},
		{"smtps://u:p@smtp.provider.example:2465?auth=login", mail.Server{Host: "smtp.provider.example", Port: 2465,
			TLS: mail.Implicit, Username: "u", Password: "p", Auth: "LOGIN"}},
		{"smtps://[::1]", mail.Server{Host: "::1", Port: 465, TLS: mail.Implicit}},
	} {
		got, err := mail.ParseURL(tc.url)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.url, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"", "mail.example:25", "http://mail.example", "smtp://", "smtp://h:0", "smtp://h:99999", "smtp://h/path",
		"smtp://u:secret-pw@h?tls=on", "smtp://u:secret-pw@h?auth=magic", "smtp://h?auth=plain",
	} {
		_, err := mail.ParseURL(bad)
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "secret-pw") {
			t.Errorf("%q: the error shows the password: %v", bad, err)
		}
	}
	if s, _ := mail.ParseURL("smtp+starttls://u:secret-pw@h"); strings.Contains(s.String(), "secret-pw") || s.String() != "smtp+starttls://u@h:587" {
		t.Errorf("String() = %q", s.String())
	}
}
