package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

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
func (b *bench) startBalancer(ctx context.Context, servers []*server) (*balancer, error) {
	out, err := exec.CommandContext(ctx, b.root+"/scripts/haproxy.sh").Output()
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
	path := filepath.Join(b.tmp, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(b.tmp, "haproxy.log"))
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
			return nil, fmt.Errorf("haproxy exited at start: %s", tail(filepath.Join(b.tmp, "haproxy.log"), 5))
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
	b.log.printf("haproxy pid %d on %s in front of %d processes", lb.pid, lb.addr, len(servers))
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

// LiveAcross is live fan-out through the balancer: sockets opened through
// haproxy land on every process, holds go through it too, and each hold
// is timed to the frame at every socket, whichever process serves it.
type LiveAcross struct {
	Procs     int     `json:"procs"`
	Sockets   int     `json:"sockets"`
	Holds     int     `json:"holds"`
	Latency   Latency `json:"latency"`
	Missed    int     `json:"missed"`
	Expected  int     `json:"expected"`
	OthersCPU float64 `json:"others_cpu_share"`
}

// liveAcross opens n sockets through the balancer on a fresh event and
// times holds (through the balancer) to their frames at every socket.
func (b *bench) liveAcross(ctx context.Context, via *server, procs, n, holds int) (*LiveAcross, error) {
	ev, seats, err := b.genEvent(ctx, "live across", 1000, false)
	if err != nil {
		return nil, err
	}
	la := &LiveAcross{Procs: procs, Holds: min(holds, len(seats))}
	lat := make([][]float32, n)
	var cur atomic.Pointer[probe]
	var readers sync.WaitGroup
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
		readers.Wait()
	}()
	for i := range n {
		conn, err := dialLive(ctx, via, b.fx.buyers[1+i%b.cfg.wsSessions], ev)
		if err != nil {
			return nil, fmt.Errorf("socket %d through haproxy: %w", i, err)
		}
		conns = append(conns, conn)
		lat[i] = make([]float32, la.Holds)
		for k := range lat[i] {
			lat[i][k] = -1
		}
		var states []seatState
		readers.Go(func() {
			readFrames(conn, func(at time.Time, frame []byte) {
				p := cur.Load()
				if p == nil || lat[i][p.k] >= 0 {
					return
				}
				states = parseFrame(frame, states)
				for _, st := range states {
					if st.id == p.seat && st.status == "held" {
						lat[i][p.k] = float32(ms(at.Sub(p.t0)))
						p.arrived()
						return
					}
				}
			})
		})
	}
	la.Sockets = len(conns)
	// Sockets join their topic after the upgrade answers.
	time.Sleep(time.Second)
	cpu0 := b.sampleCPU(nil)
	for k := range la.Holds {
		p := &probe{k: k, seat: seats[k], done: make(chan struct{})}
		p.remaining.Store(int64(n))
		p.t0 = time.Now()
		cur.Store(p)
		code, _, err := via.hold(ctx, b.fx.buyers[0], ev, seats[k])
		if err != nil || code != http.StatusCreated {
			return nil, fmt.Errorf("hold through haproxy: %d %v", code, err)
		}
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		time.Sleep(50 * time.Millisecond)
	}
	la.OthersCPU = round3(cpu0.to(b.sampleCPU(nil)).otherShare())
	cur.Store(nil)
	var all []float64
	for i := range lat {
		for _, v := range lat[i] {
			if v >= 0 {
				all = append(all, float64(v))
			} else {
				la.Missed++
			}
		}
	}
	la.Expected = n * la.Holds
	la.Latency = latencyOf(all)
	return la, nil
}
