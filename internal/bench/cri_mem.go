package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// criMemoryOf measures a runtime: the process listening on socket, and
// every process whose command line contains match (its monitors).
func criMemoryOf(socket, match string) (CRIMemory, error) {
	var m CRIMemory
	pid, err := socketOwner(socket)
	if err != nil {
		return m, err
	}
	rss, pss, err := processMemory(pid)
	if err != nil {
		return m, err
	}
	m.RuntimeRSSMiB, m.TotalRSSMiB, m.TotalPSSMiB = rss, rss, pss
	if match == "" {
		return m, nil
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return m, err
	}
	for _, p := range procs {
		n, err := strconv.Atoi(p.Name())
		if err != nil || n == pid {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}), []byte(match)) {
			continue
		}
		rss, pss, err := processMemory(n)
		if err != nil {
			continue // it exited meanwhile
		}
		m.Monitors++
		m.MonitorsRSSMiB += rss
		m.TotalRSSMiB += rss
		m.TotalPSSMiB += pss
	}
	m.MonitorsRSSMiB, m.TotalRSSMiB, m.TotalPSSMiB = round1(m.MonitorsRSSMiB), round1(m.TotalRSSMiB), round1(m.TotalPSSMiB)
	return m, nil
}

// processMemory reads a process's Rss and Pss (MiB) from smaps_rollup.
func processMemory(pid int) (rss, pss float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			rss = kb / 1024
		case "Pss:":
			pss = kb / 1024
		}
	}
	return round1(rss), round1(pss), nil
}

// socketOwner finds the process that listens on a unix socket path: the
// socket's inode from net/unix, then the process holding it. net/unix
// lists the sockets of one network namespace, so each namespace a
// process is in is read (containerd may run in one of its own).
func socketOwner(path string) (int, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var pids []string
	seen := map[string]bool{}
	inodes := map[string]bool{}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		pids = append(pids, p.Name())
		ns, err := os.Readlink(filepath.Join("/proc", p.Name(), "ns", "net"))
		if err != nil || seen[ns] {
			continue
		}
		seen[ns] = true
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "net", "unix"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			// Num RefCount Protocol Flags Type St Inode Path; flag
			// 00010000 is __SO_ACCEPTCON: a listening socket.
			if len(f) >= 8 && f[7] == path && f[3] == "00010000" {
				inodes["socket:["+f[6]+"]"] = true
			}
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("no process listens on %s", path)
	}
	for _, p := range pids {
		fds, err := os.ReadDir(filepath.Join("/proc", p, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p, "fd", fd.Name())); err == nil && inodes[l] {
				return strconv.Atoi(p)
			}
		}
	}
	return 0, fmt.Errorf("no process holds the socket %s", path)
}
