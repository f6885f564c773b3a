package bench

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuMeter measures how much CPU this process used over a span of wall
// time. With an embedded server that is the server and the clients
// together; reported as cores (CPU seconds per second), it shows whether a
// stage was bound by the CPU it got — and, on a machine shared with other
// work, how much it got.
type cpuMeter struct {
	wall time.Time
	cpu  time.Duration
}

func startCPU() cpuMeter { return cpuMeter{wall: time.Now(), cpu: processCPU()} }

// read returns the average number of cores used since the meter started,
// and the CPU microseconds per unit of work for n units. The second does
// not depend on how much CPU other work left the process: it is the
// figure to compare between runs on a busy machine.
func (m cpuMeter) read(n uint64) (cores, usPerUnit float64) {
	wall := time.Since(m.wall)
	used := processCPU() - m.cpu
	if wall > 0 {
		cores = round3(float64(used) / float64(wall))
	}
	if n > 0 {
		usPerUnit = round3(float64(used) / float64(time.Microsecond) / float64(n))
	}
	return cores, usPerUnit
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's one-minute load average, or -1 where
// /proc/loadavg does not exist. Above the CPU count, something besides the
// benchmark competes for the CPUs and the figures are pessimistic.
func loadAverage() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// serverUsage measures what an embedded server cost over a phase: this
// process's CPU time and its peak resident memory (the kernel's VmHWM,
// reset when the phase starts). The benchmark's clients share the process,
// so both include them.
type serverUsage struct {
	started bool
	cpu     time.Duration
}

func startServerUsage() serverUsage {
	// Writing 5 to clear_refs resets VmHWM to the current RSS, so the
	// phase reports its own peak; where that is refused, the peak is the
	// process's since it started.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return serverUsage{started: true, cpu: processCPU()}
}

// read returns the CPU seconds since start and the peak RSS in MiB; both
// nil for a meter never started (the server was not in this process).
func (u serverUsage) read() (cpuSeconds, peakRSSMiB *float64) {
	if !u.started {
		return nil, nil
	}
	cpu := round3((processCPU() - u.cpu).Seconds())
	cpuSeconds = &cpu
	if rss, err := procStatusMiB(os.Getpid(), "VmHWM"); err == nil {
		peakRSSMiB = &rss
	}
	return cpuSeconds, peakRSSMiB
}
