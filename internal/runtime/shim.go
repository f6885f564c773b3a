package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
)

// ShimSubcommand is os.Args[1] of a re-executed monitor process.
const ShimSubcommand = "runtime-shim"

// ShimMain is the per-container monitor, run as `rudder runtime-shim
// CONFIG`. cmd/rudder calls it before anything else when os.Args[1] is
// ShimSubcommand; it returns the process's exit code. See doc.go.
func ShimMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: rudder runtime-shim CONFIG.json")
		return 2
	}
	// The monitor lives as long as its container: keep its heap small.
	debug.SetGCPercent(25)
	var cfg shimConfig
	if err := readJSON(args[0], &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-shim:", err)
		return 2
	}
	ready := os.NewFile(3, "ready")
	if err := runShim(cfg, ready); err != nil {
		fmt.Fprintln(os.Stderr, "runtime-shim:", err)
		return 1
	}
	return 0
}

// shimConfig is what the runtime tells a monitor, in a JSON file.
type shimConfig struct {
	ID          string
	Bundle      string
	Runc        string
	RuncRoot    string
	PidFile     string
	Socket      string // attach/control socket
	Console     string // console socket path, for tty
	ExitFile    string
	LogPath     string
	LogMaxSize  int64
	LogMaxFiles int
	Tty         bool
	Stdin       bool
	StdinOnce   bool
	// OOMFile is the memory cgroup's file with an oom_kill counter
	// (memory.oom_control in v1, memory.events in v2).
	OOMFile string
}

func (c shimConfig) marshal() ([]byte, error) { return json.Marshal(c) }
