package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"seatd/internal/freeport"
)

// server is one `seatd serve` process started by this run.
type server struct {
	name    string
	addr    string // 127.0.0.1:port
	base    string // http://127.0.0.1:port
	ops     string // http://127.0.0.1:port of the ops listener (metrics, pprof)
	pid     int
	logPath string
	http    *http.Client
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// procs runs the seatd processes of a run: it builds seatd, starts and
// stops each server by its PID (and the haproxy in front of some of them,
// balancer.go), and samples the CPU they and the bench services use
// (cpu.go).
type procs struct {
	log      *progress
	root     string // absolute repository root
	tmp      string // work dir: seatd binary, server logs
	bin      string // the seatd binary
	dbURL    string
	redisURL string
	// seatdEnv and pgMaxConns are -seatd-env and -pg-max-conns.
	seatdEnv   map[string]string
	pgMaxConns int
	// ports gives every process started its own port.
	ports freeport.Ports

	mu      sync.Mutex
	servers []*server // started and not yet stopped
}

// build builds ./cmd/seatd into the work dir, or takes prebuilt (-seatd)
// when it is set.
func (p *procs) build(ctx context.Context, prebuilt string) error {
	if prebuilt != "" {
		path, err := filepath.Abs(prebuilt)
		p.bin = path
		return err
	}
	p.bin = filepath.Join(p.tmp, "seatd")
	start := time.Now()
	// Built into the work dir, not bin/: others may be running bin/seatd.
	cmd := exec.CommandContext(ctx, "go", "build", "-o", p.bin, "./cmd/seatd")
	cmd.Dir = p.root
	cmd.Stdout, cmd.Stderr = p.log.w, p.log.w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/seatd: %w", err)
	}
	p.log.printf("built seatd in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// env is the configuration every bench server gets: loopback only,
// quiet logs, and limits out of the way of the load (they are per user
// and per IP, and the whole load comes from one IP and a few users).
func (p *procs) env(addr string, extra map[string]string) []string {
	env := serviceEnv()
	vars := map[string]string{
		"DATABASE_URL":                p.dbURL,
		"REDIS_URL":                   p.redisURL,
		"SEATD_ADDR":                  addr,
		"SEATD_ENV":                   "development",
		"SEATD_LOG_LEVEL":             "warn",
		"SEATD_HOLD_RATE_PER_MINUTE":  "1000000000",
		"SEATD_LOGIN_RATE_PER_MINUTE": "1000000000",
		"SEATD_MAX_HOLDS_PER_BUYER":   "1000000",
		"SEATD_NEW_ACCOUNT_AGE":       "0", // its buyers are made just before the load
		// The live phase opens thousands of sockets over a few sessions
		// from one address: the per-session, per-process and upgrade-rate
		// caps that protect a public server would refuse most of them.
		"SEATD_MAX_SOCKETS_PER_SESSION": "100000",
		"SEATD_MAX_SOCKETS":             "100000",
		"SEATD_UPGRADE_RATE_PER_MINUTE": "1000000000",
		"SEATD_MAX_SOCKETS_PER_USER":    "100000",
		"SEATD_MAX_SOCKETS_PER_NETWORK": "100000",
		// Whole-event reads, sign-ups and new sessions are limited per
		// address prefix too, and every phase comes from 127.0.0.1.
		"SEATD_READ_RATE_PER_MINUTE":        "1000000000",
		"SEATD_READ_PREFIX_RATE_PER_MINUTE": "1000000000",
		"SEATD_SIGNUP_RATE_PER_MINUTE":      "1000000000",
		"SEATD_NEW_SESSION_RATE_PER_MINUTE": "1000000000",
		// Phases warm their own event; a process warming every bench
		// event at startup would load them inside other phases' windows.
		// The opening phase turns it on.
		"SEATD_WARM_EVENTS": "0",
		// The webhook phase's receiver listens on loopback; after its
		// outage, deliveries come back within 5 s rather than the
		// production backoff's hour.
		"SEATD_WEBHOOK_ALLOW_PRIVATE": "true",
		"SEATD_WEBHOOK_BACKOFF_MAX":   "5s",
		// The sales measured here book directly, as before payments:
		// they measure the hold and purchase path.
		"SEATD_PAYMENTS": "off",
	}
	if p.pgMaxConns > 0 {
		vars["SEATD_PG_MAX_CONNS"] = strconv.Itoa(p.pgMaxConns)
	}
	for k, v := range p.seatdEnv {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// start starts `seatd serve` on a free loopback port and waits until it
// answers /healthz (it migrates first).
func (p *procs) start(ctx context.Context, name string, extra map[string]string) (*server, error) {
	port, err := p.ports.Loopback()
	if err != nil {
		return nil, err
	}
	opsPort, err := p.ports.Loopback()
	if err != nil {
		return nil, err
	}
	s := &server{name: name, addr: fmt.Sprintf("127.0.0.1:%d", port), exited: make(chan struct{})}
	s.base = "http://" + s.addr
	opsAddr := fmt.Sprintf("127.0.0.1:%d", opsPort)
	s.ops = "http://" + opsAddr
	extra = maps.Clone(extra)
	if extra == nil {
		extra = map[string]string{}
	}
	extra["SEATD_OPS_ADDR"] = opsAddr
	s.logPath = filepath.Join(p.tmp, "seatd-"+name+".log")
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.bin, "serve")
	cmd.Env = p.env(s.addr, extra)
	cmd.Stdout, cmd.Stderr = logf, logf
	// If seatbench dies without cleaning up, its servers die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start seatd %s: %w", name, err)
	}
	s.cmd, s.pid = cmd, cmd.Process.Pid
	go func() { s.waitErr = cmd.Wait(); _ = logf.Close(); close(s.exited) }()
	// Thousands of sockets: give the server the hard file limit.
	var lim unix.Rlimit
	if unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, nil, &lim) == nil && lim.Cur < lim.Max {
		_ = unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: lim.Max, Max: lim.Max}, nil)
	}
	p.mu.Lock()
	p.servers = append(p.servers, s)
	p.mu.Unlock()
	s.http = newHTTPClient()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("seatd %s exited at start (%v): %s", name, s.waitErr, tail(s.logPath, 15))
		case <-ctx.Done():
			p.stop(s)
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := s.http.Get(s.base + "/healthz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.log.printf("seatd %s pid %d on %s", name, s.pid, s.addr)
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop(s)
			return nil, fmt.Errorf("seatd %s did not answer /healthz within 90s: %s", name, tail(s.logPath, 15))
		}
	}
}

// stop ends a server by its PID: SIGTERM (graceful shutdown), then
// SIGKILL after 15 seconds.
func (p *procs) stop(s *server) {
	p.mu.Lock()
	for i, x := range p.servers {
		if x == s {
			p.servers = append(p.servers[:i], p.servers[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	s.http.CloseIdleConnections()
	select {
	case <-s.exited:
		return
	default:
	}
	_ = syscall.Kill(s.pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		p.log.printf("seatd %s pid %d ignored SIGTERM for 15s; killing it", s.name, s.pid)
		_ = syscall.Kill(s.pid, syscall.SIGKILL)
		<-s.exited
	}
	p.log.printf("stopped seatd %s pid %d", s.name, s.pid)
}

// stopAll stops every server still running.
func (p *procs) stopAll() {
	p.mu.Lock()
	servers := append([]*server(nil), p.servers...)
	p.mu.Unlock()
	for _, s := range servers {
		p.stop(s)
	}
}

// mainServer returns the main seatd process, starting it again if a
// phase stopped it.
func (p *procs) mainServer(ctx context.Context) (*server, error) {
	p.mu.Lock()
	for _, s := range p.servers {
		if s.name == "main" {
			p.mu.Unlock()
			return s, nil
		}
	}
	p.mu.Unlock()
	return p.start(ctx, "main", nil)
}

// stopNamed stops the running servers with these names.
func (p *procs) stopNamed(names ...string) {
	p.mu.Lock()
	var stop []*server
	for _, s := range p.servers {
		if contains(names, s.name) {
			stop = append(stop, s)
		}
	}
	p.mu.Unlock()
	for _, s := range stop {
		p.stop(s)
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// metrics scrapes a server's /metrics (on its ops listener) into
// name{labels} -> value.
func (s *server) metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.ops+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

type memSnap struct {
	heap, stack, goroutines float64
	rss                     int64
}

// memory is the server's heap, stacks and goroutines (from /metrics) and
// its resident set.
func (s *server) memory(ctx context.Context) (memSnap, error) {
	m, err := s.metrics(ctx)
	if err != nil {
		return memSnap{}, err
	}
	rss, err := rssBytes(s.pid)
	return memSnap{heap: m["go_memstats_heap_inuse_bytes"], stack: m["go_memstats_stack_inuse_bytes"],
		goroutines: m["go_goroutines"], rss: rss}, err
}

// rssBytes is a process's resident set (VmRSS).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			f := strings.Fields(v)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}
