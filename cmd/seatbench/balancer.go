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
)

// balancer is a haproxy in front of bench servers with the configuration
// make run-cluster runs (scripts/haproxy-config.sh): writes to one event
// go to one process, the rest round robin, /readyz checks.
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
	port, err := p.ports.Loopback()
	if err != nil {
		return nil, err
	}
	lb := &balancer{addr: fmt.Sprintf("127.0.0.1:%d", port), done: make(chan struct{})}
	args := []string{lb.addr, "-"}
	for _, s := range servers {
		args = append(args, s.addr)
	}
	cfg, err := exec.CommandContext(ctx, p.root+"/scripts/haproxy-config.sh", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/haproxy-config.sh: %w", err)
	}
	path := filepath.Join(p.tmp, "haproxy.cfg")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
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
