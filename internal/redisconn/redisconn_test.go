package redisconn

import (
	"crypto/tls"
	"strings"
	"testing"

	"seatd/internal/config"
)

// TestRedisOptions: REDIS_URL and the Redis credentials become the client
// options: rediss:// turns TLS on (server name, TLS 1.2 at least), cluster
// addresses get SEATD_REDIS_USERNAME/PASSWORD and TLS when rediss://, and
// errors never show a password.
func TestRedisOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url, user, pass string
		addrs                 []string
		db                    int
		tls                   bool
		serverName            string
		wantUser, wantPass    string
		cluster               bool
	}{
		{name: "plain", url: "redis://127.0.0.1:6379/2", addrs: []string{"127.0.0.1:6379"}, db: 2},
		{name: "TLS", url: "rediss://cache.internal:6380/1", addrs: []string{"cache.internal:6380"}, db: 1, tls: true, serverName: "cache.internal"},
		{name: "TLS with credentials in the URL", url: "rediss://app:s3cret@cache.internal:6380", user: "env", pass: "envpw",
			addrs: []string{"cache.internal:6380"}, tls: true, serverName: "cache.internal", wantUser: "app", wantPass: "s3cret"},
		{name: "credentials from the environment", url: "redis://h:6379/0", user: "app", pass: "pw",
			addrs: []string{"h:6379"}, wantUser: "app", wantPass: "pw"},
		{name: "cluster", url: "10.0.0.1:7001, 10.0.0.2:7002", user: "app", pass: "pw",
			addrs: []string{"10.0.0.1:7001", "10.0.0.2:7002"}, wantUser: "app", wantPass: "pw", cluster: true},
		{name: "cluster over TLS", url: "rediss://n1:7001,rediss://n2:7002", pass: "pw",
			addrs: []string{"n1:7001", "n2:7002"}, tls: true, wantPass: "pw", cluster: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg.RedisURL, cfg.RedisUsername, cfg.RedisPassword = tc.url, tc.user, tc.pass
			o, err := redisOptions(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(o.Addrs, ",") != strings.Join(tc.addrs, ",") || o.DB != tc.db || o.IsClusterMode != tc.cluster {
				t.Errorf("addrs %v db %d cluster %v", o.Addrs, o.DB, o.IsClusterMode)
			}
			if o.Username != tc.wantUser || o.Password != tc.wantPass {
				t.Errorf("credentials %q %q, want %q %q", o.Username, o.Password, tc.wantUser, tc.wantPass)
			}
			if (o.TLSConfig != nil) != tc.tls {
				t.Fatalf("TLS %v, want %v", o.TLSConfig != nil, tc.tls)
			}
			if tc.tls && (o.TLSConfig.MinVersion < tls.VersionTLS12 || o.TLSConfig.ServerName != tc.serverName || o.TLSConfig.InsecureSkipVerify) {
				t.Errorf("TLS config: min %x server %q skip verify %v", o.TLSConfig.MinVersion, o.TLSConfig.ServerName, o.TLSConfig.InsecureSkipVerify)
			}
			if o.ReadTimeout != cfg.RedisTimeout || o.MaxRetries != cfg.RedisMaxRetries {
				t.Errorf("timeouts not ours: read %s retries %d", o.ReadTimeout, o.MaxRetries)
			}
		})
	}
	for _, bad := range []string{"http://h:1", "rediss://user:hunter2@", "redis://h:6379/x", "unix:///tmp/r.sock",
		"rediss://a:1,redis://b:2", "a:1,b"} {
		cfg := config.Defaults()
		cfg.RedisURL = bad
		_, err := redisOptions(cfg)
		if err == nil {
			t.Errorf("%q: accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error shows the password: %v", bad, err)
		}
	}
}
