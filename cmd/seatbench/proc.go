package main

import (
	"bufio"
	"bytes"
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

// serverEnv is the configuration every bench server gets: loopback only,
// quiet logs, and limits out of the way of the load (they are per user
// and per IP, and the whole load comes from one IP and a few users).
func (b *bench) serverEnv(addr string, extra map[string]string) []string {
	env := serviceEnv()
	vars := map[string]string{
		"DATABASE_URL":                b.dbURL,
		"REDIS_URL":                   b.redisURL,
		"SEATD_ADDR":                  addr,
		"SEATD_ENV":                   "development",
		"SEATD_LOG_LEVEL":             "warn",
		"SEATD_HOLD_RATE_PER_MINUTE":  "1000000000",
		"SEATD_LOGIN_RATE_PER_MINUTE": "1000000000",
		"SEATD_MAX_HOLDS_PER_BUYER":   "1000000",
		// The live phase opens thousands of sockets over a few sessions
		// from one address: the per-session, per-process and upgrade-rate
		// caps that protect a public server would refuse most of them.
		"SEATD_MAX_SOCKETS_PER_SESSION": "100000",
		"SEATD_MAX_SOCKETS":             "100000",
		"SEATD_UPGRADE_RATE_PER_MINUTE": "1000000000",
		// Phases warm their own event; a process warming every bench
		// event at startup would load them inside other phases' windows.
		// The opening phase turns it on.
		"SEATD_WARM_EVENTS": "0",
		// The webhook phase's receiver listens on loopback; after its
		// outage, deliveries come back within 5 s rather than the
		// production backoff's hour.
		"SEATD_WEBHOOK_ALLOW_PRIVATE": "true",
		"SEATD_WEBHOOK_BACKOFF_MAX":   "5s",
	}
	if b.cfg.pgMaxConns > 0 {
		vars["SEATD_PG_MAX_CONNS"] = strconv.Itoa(b.cfg.pgMaxConns)
	}
	for k, v := range b.cfg.seatdEnv {
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

// startServer starts `seatd serve` on a free loopback port and waits until
// it answers /healthz (it migrates first).
func (b *bench) startServer(ctx context.Context, name string, extra map[string]string) (*server, error) {
	port, err := freeport.Loopback()
	if err != nil {
		return nil, err
	}
	opsPort, err := freeport.Loopback()
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
	s.logPath = filepath.Join(b.tmp, "seatd-"+name+".log")
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.seatdBin, "serve")
	cmd.Env = b.serverEnv(s.addr, extra)
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
	b.mu.Lock()
	b.servers = append(b.servers, s)
	b.mu.Unlock()
	s.http = newHTTPClient()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("seatd %s exited at start (%v): %s", name, s.waitErr, tail(s.logPath, 15))
		case <-ctx.Done():
			b.stopServer(s)
			return nil, context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := s.http.Get(s.base + "/healthz"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				b.log.printf("seatd %s pid %d on %s", name, s.pid, s.addr)
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			b.stopServer(s)
			return nil, fmt.Errorf("seatd %s did not answer /healthz within 90s: %s", name, tail(s.logPath, 15))
		}
	}
}

// stopServer ends a server by its PID: SIGTERM (graceful shutdown), then
// SIGKILL after 15 seconds.
func (b *bench) stopServer(s *server) {
	b.mu.Lock()
	for i, x := range b.servers {
		if x == s {
			b.servers = append(b.servers[:i], b.servers[i+1:]...)
			break
		}
	}
	b.mu.Unlock()
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
		b.log.printf("seatd %s pid %d ignored SIGTERM for 15s; killing it", s.name, s.pid)
		_ = syscall.Kill(s.pid, syscall.SIGKILL)
		<-s.exited
	}
	b.log.printf("stopped seatd %s pid %d", s.name, s.pid)
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

// --- CPU accounting ---

// clockTicks is USER_HZ, which is 100 on every Linux this runs on.
const clockTicks = 100

// procCPU returns utime+stime of a process, plus its waited-for children
// when children is set, in seconds; and its parent pid.
func procCPU(pid int, children bool) (secs float64, ppid int, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("bad stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, 0, errors.New("short stat")
	}
	// f[0] is field 3 (state): ppid is field 4, utime 14, stime 15,
	// cutime 16, cstime 17.
	ppid, _ = strconv.Atoi(f[1])
	var t int64
	for _, k := range []int{11, 12} {
		n, _ := strconv.ParseInt(f[k], 10, 64)
		t += n
	}
	if children {
		for _, k := range []int{13, 14} {
			n, _ := strconv.ParseInt(f[k], 10, 64)
			t += n
		}
	}
	return float64(t) / clockTicks, ppid, nil
}

// CPU is processor time spent during a window, in core-seconds, by party.
type CPU struct {
	Seatd    float64 `json:"seatd"`
	Postgres float64 `json:"postgres"`
	Redis    float64 `json:"redis"`
	Client   float64 `json:"client"` // seatbench itself, or pgbench
	// Balancer is haproxy's, when the load went through it.
	Balancer float64 `json:"balancer,omitempty"`
	// Other is what the rest of the machine used meanwhile (other people's
	// builds and tests share these cores); Idle is what nobody used.
	Other float64 `json:"other"`
	Idle  float64 `json:"idle"`
	Wall  float64 `json:"wall"`
}

type cpuSample struct {
	at                            time.Time
	seatd, postgres, redis, bench float64
	busy, idle                    float64 // whole machine, from /proc/stat
}

// sampleCPU reads the CPU time of the servers, of Postgres (the
// postmaster with its exited backends, plus every live backend) and of
// Redis, and of this process.
func (b *bench) sampleCPU(servers []*server) cpuSample {
	s := cpuSample{at: time.Now()}
	for _, sv := range servers {
		t, _, _ := procCPU(sv.pid, false)
		s.seatd += t
	}
	if pm := b.pidFromFile(filepath.Join(b.root, ".data/bench/pg/postmaster.pid")); pm > 0 {
		t, _, _ := procCPU(pm, true)
		s.postgres += t
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == pm {
				continue
			}
			t, ppid, err := procCPU(pid, false)
			if err == nil && ppid == pm {
				s.postgres += t
			}
		}
	}
	if rp := b.pidFromFile(filepath.Join(b.root, ".data/bench/redis.pid")); rp > 0 {
		s.redis, _, _ = procCPU(rp, false)
	}
	// Children too: pgbench's time lands there once it is waited for.
	s.bench, _, _ = procCPU(os.Getpid(), true)
	s.busy, s.idle = machineCPU()
	return s
}

// machineCPU is the busy and idle (with iowait) time of all CPUs since
// boot, in seconds, from the first line of /proc/stat.
func machineCPU() (busy, idle float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	// user nice system idle iowait irq softirq steal
	for i, v := range f[1:9] {
		n, _ := strconv.ParseFloat(v, 64)
		if i == 3 || i == 4 {
			idle += n
		} else {
			busy += n
		}
	}
	return busy / clockTicks, idle / clockTicks
}

func (b *bench) pidFromFile(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

func (s cpuSample) to(e cpuSample) CPU {
	c := CPU{Seatd: e.seatd - s.seatd, Postgres: e.postgres - s.postgres, Redis: e.redis - s.redis,
		Client: e.bench - s.bench, Idle: round3(e.idle - s.idle), Wall: round3(e.at.Sub(s.at).Seconds())}
	c.Other = round3(max(0, (e.busy-s.busy)-c.Seatd-c.Postgres-c.Redis-c.Client))
	return c
}
