// Package redisconn opens seatd's Redis client from the configuration.
//
// The rest of seatd names the client as redis.Cmdable (or Client here),
// never as go-redis's own client types: a package that names those
// (*redis.Client, redis.UniversalClient, or an interface with a method on
// *redis.PubSub) compiles about a second longer, once for each test
// binary it is rebuilt for. The one part that needs more than the
// commands, the live bus's subscriptions, asks the client for it itself
// (internal/realtime).
package redisconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"seatd/internal/config"
)

// Client is the Redis client the parts of seatd share: the commands, and
// Close for the one that opened it. Open's clients are go-redis's (one
// server or a cluster), which subscribe too.
type Client interface {
	redis.Cmdable
	Close() error
}

// Open builds a Redis client from REDIS_URL: one redis:// URL (or
// rediss:// for TLS) for a single server, or a comma-separated list of
// host:port for a cluster (each may start with redis:// or, all alike,
// rediss:// for TLS). Credentials come from the URL or, for a cluster
// and for a URL without them, from SEATD_REDIS_USERNAME and
// SEATD_REDIS_PASSWORD. Timeouts are short and retries few: a slow Redis
// must trip the breaker quickly, not stall every hold.
func Open(cfg config.Config) (Client, error) {
	o, err := redisOptions(cfg)
	if err != nil {
		return nil, err
	}
	return redis.NewUniversalClient(o), nil
}

// redisOptions is Open without the connection, for tests to read.
func redisOptions(cfg config.Config) (*redis.UniversalOptions, error) {
	o := &redis.UniversalOptions{
		DialTimeout:  cfg.RedisDialTimeout,
		ReadTimeout:  cfg.RedisTimeout,
		WriteTimeout: cfg.RedisTimeout,
		MaxRetries:   cfg.RedisMaxRetries,
		// One dial attempt: a dead Redis must trip the breaker fast rather
		// than cost every hold several connection timeouts.
		DialerRetries:         1,
		ContextTimeoutEnabled: true,
		PoolSize:              64,
	}
	if strings.Contains(cfg.RedisURL, ",") {
		schemes := map[string]bool{}
		for _, addr := range strings.Split(cfg.RedisURL, ",") {
			addr = strings.TrimSpace(addr)
			scheme := "redis"
			if s, rest, ok := strings.Cut(addr, "://"); ok {
				scheme, addr = s, rest
			}
			if scheme != "redis" && scheme != "rediss" {
				return nil, fmt.Errorf("REDIS_URL: cluster address %q must be host:port, redis://host:port or rediss://host:port", addr)
			}
			schemes[scheme] = true
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return nil, fmt.Errorf("REDIS_URL: %q is not host:port", addr)
			}
			o.Addrs = append(o.Addrs, addr)
		}
		if len(schemes) > 1 {
			return nil, errors.New("REDIS_URL: cluster addresses must all be redis:// or all rediss://")
		}
		if schemes["rediss"] {
			// No ServerName: each node's TLS handshake checks the host
			// it dials (crypto/tls takes it from the address).
			o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		o.Username, o.Password = cfg.RedisUsername, cfg.RedisPassword
		o.IsClusterMode = true
		return o, nil
	}
	u, err := url.Parse(cfg.RedisURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, fmt.Errorf("REDIS_URL: %q is not redis://host:port/db or rediss://host:port/db", redactURL(cfg.RedisURL))
	}
	// go-redis reads the address, database, credentials and, for
	// rediss://, the TLS settings (server name, TLS 1.2 at least); the
	// timeouts stay ours.
	p, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %q: %w", redactURL(cfg.RedisURL), err)
	}
	o.Addrs, o.DB, o.TLSConfig = []string{p.Addr}, p.DB, p.TLSConfig
	o.Username, o.Password = p.Username, p.Password
	if u.User == nil {
		o.Username, o.Password = cfg.RedisUsername, cfg.RedisPassword
	}
	return o, nil
}

// redactURL hides a URL's password for an error message.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
