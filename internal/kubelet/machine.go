package kubelet

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// What the kubelet reads of its machine, from /proc, /sys and /etc: the
// figures of the Node's capacity and nodeInfo, and the node's current
// usage for eviction signals and stats.

// machineInfo is the machine's fixed facts.
type machineInfo struct {
	machineID, systemUUID, bootID string
	kernel, osImage               string
	cpus                          int
	memoryBytes                   int64
}

func readMachineInfo(rootDir string) machineInfo {
	m := machineInfo{cpus: runtime.NumCPU(), memoryBytes: meminfo()["MemTotal"]}
	m.machineID = strings.TrimSpace(readString("/etc/machine-id"))
	if m.machineID == "" {
		m.machineID = strings.TrimSpace(readString("/var/lib/dbus/machine-id"))
	}
	if m.machineID == "" {
		// No machine-id (a minimal container image): one derived from the
		// kubelet's directory, stable across restarts.
		sum := sha256.Sum256([]byte("rudder-machine/" + rootDir))
		m.machineID = hex.EncodeToString(sum[:16])
	}
	m.systemUUID = strings.TrimSpace(readString("/sys/class/dmi/id/product_uuid"))
	if m.systemUUID == "" {
		m.systemUUID = m.machineID
	}
	m.bootID = strings.TrimSpace(readString("/proc/sys/kernel/random/boot_id"))
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.kernel = unix.ByteSliceToString(u.Release[:])
	}
	m.osImage = osImage(readString("/etc/os-release"))
	return m
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// osImage is os-release's PRETTY_NAME ("Linux" without one).
func osImage(osRelease string) string {
	for _, line := range strings.Split(osRelease, "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}

// meminfo is /proc/meminfo in bytes.
func meminfo() map[string]int64 {
	out := map[string]int64{}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[name] = n
	}
	return out
}

// fsStats is a filesystem's size and free space in bytes.
func fsStats(path string) (capacity, available, inodes, inodesFree uint64, ok bool) {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return 0, 0, 0, 0, false
	}
	bs := uint64(s.Bsize)
	return s.Blocks * bs, s.Bavail * bs, s.Files, s.Ffree, true
}

// cpuSeconds is the machine's busy CPU time in core-seconds (/proc/stat,
// all but idle and iowait).
func cpuSeconds() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy uint64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseUint(v, 10, 64)
		busy += n
	}
	return float64(busy) / 100 // USER_HZ is 100 on Linux
}

// minOOMScoreAdj is the lowest oom_score_adj containers may get: without
// CAP_SYS_RESOURCE in our bounding set a process cannot go below its
// parent's, so ours is the floor.
func minOOMScoreAdj() int64 {
	const capSysResource = 24
	for _, line := range strings.Split(readString("/proc/self/status"), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err == nil && n&(1<<capSysResource) != 0 {
				return -1000
			}
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(readString("/proc/self/oom_score_adj")), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
