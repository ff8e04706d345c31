package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"seatd/internal/freeport"
)

// balancer is a haproxy in front of bench servers, as make run-cluster
// runs it (scripts/run-cluster.sh): round robin, /readyz checks.
type balancer struct {
	addr string
	pid  int
	cmd  *exec.Cmd
	done chan struct{}
}

// startBalancer starts haproxy in front of servers on a free loopback
// port; scripts/haproxy.sh installs the Debian package when it is missing,
// as make run-cluster does.
func (p *procs) startBalancer(ctx context.Context, servers []*server) (*balancer, error) {
	out, err := exec.CommandContext(ctx, p.root+"/scripts/haproxy.sh").Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/haproxy.sh: %w", err)
	}
	bin := strings.TrimSpace(string(out))
	port, err := freeport.Loopback()
	if err != nil {
		return nil, err
	}
	var backends strings.Builder
	for i, s := range servers {
		fmt.Fprintf(&backends, "    server s%d %s check\n", i, s.addr)
	}
	lb := &balancer{addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
	cfg := fmt.Sprintf(`global
    maxconn 9000
defaults
    mode http
    option http-keep-alive
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h
frontend seatd
    bind %s
    default_backend seatd
backend seatd
    balance roundrobin
    option httpchk GET /readyz
    default-server inter 1s fall 2 rise 1
%s`, lb.addr, backends.String())
	path := filepath.Join(p.tmp, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(p.tmp, "haproxy.log"))
	if err != nil {
		return nil, err
	}
	lb.cmd = exec.Command(bin, "-db", "-f", path)
	lb.cmd.Stdout, lb.cmd.Stderr = logf, logf
	lb.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := lb.cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, err
	}
	lb.pid = lb.cmd.Process.Pid
	go func() { _ = lb.cmd.Wait(); _ = logf.Close(); close(lb.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", lb.addr, time.Second); err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-lb.done:
			return nil, fmt.Errorf("haproxy exited at start: %s", tail(filepath.Join(p.tmp, "haproxy.log"), 5))
		case <-ctx.Done():
			lb.stop()
			return nil, context.Cause(ctx)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			lb.stop()
			return nil, fmt.Errorf("haproxy did not listen on %s within 10 s", lb.addr)
		}
	}
	p.log.printf("haproxy pid %d on %s in front of %d processes", lb.pid, lb.addr, len(servers))
	return lb, nil
}

// stop ends haproxy by its PID and waits for it.
func (lb *balancer) stop() {
	_ = syscall.Kill(lb.pid, syscall.SIGTERM)
	select {
	case <-lb.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(lb.pid, syscall.SIGKILL)
		<-lb.done
	}
}

// through returns copies of servers whose requests go to the balancer;
// their CPU is still sampled by the servers' PIDs.
func (lb *balancer) through(servers []*server) []*server {
	client := newHTTPClient()
	out := make([]*server, len(servers))
	for i, s := range servers {
		c := *s
		c.addr, c.base, c.http = lb.addr, "http://"+lb.addr, client
		out[i] = &c
	}
	return out
}
