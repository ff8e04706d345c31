package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

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

// otherShare is the fraction of the machine's CPU that processes outside
// the bench used during the window.
func (c CPU) otherShare() float64 {
	total := c.Seatd + c.Postgres + c.Redis + c.Client + c.Other + c.Idle
	if total <= 0 {
		return 0
	}
	return c.Other / total
}

type cpuSample struct {
	at                            time.Time
	seatd, postgres, redis, bench float64
	busy, idle                    float64 // whole machine, from /proc/stat
}

// sampleCPU reads the CPU time of the servers, of Postgres (the
// postmaster with its exited backends, plus every live backend) and of
// Redis, and of this process.
func (p *procs) sampleCPU(servers []*server) cpuSample {
	s := cpuSample{at: time.Now()}
	for _, sv := range servers {
		t, _, _ := procCPU(sv.pid, false)
		s.seatd += t
	}
	if pm := pidFromFile(filepath.Join(p.root, ".data/bench/pg/postmaster.pid")); pm > 0 {
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
	if rp := pidFromFile(filepath.Join(p.root, ".data/bench/redis.pid")); rp > 0 {
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

func pidFromFile(path string) int {
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
