package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/monitor"
)

// sandbox is a pod sandbox: namespaces held by files, a directory with
// the pod's /etc files and /dev/shm, and a cgroup parent.
type sandbox struct {
	mu sync.Mutex // serialises lifecycle operations; st is guarded by Runtime.mu
	st sandboxState
}

type sandboxState struct {
	ID        string
	Config    []byte // proto of *runtimeapi.PodSandboxConfig
	CreatedAt int64
	Ready     bool
	// NetNS, IPCNS, UTSNS are the bind-mounted namespace files; empty
	// when the pod shares the host's.
	NetNS, IPCNS, UTSNS string
	// ShmMounted tells whether Dir/shm is a tmpfs of ours.
	ShmMounted   bool
	Dir          string // under RunDir: hostname, hosts, resolv.conf, shm
	CgroupParent string // the pod's cgroup, as given to runc (absolute or relative)
	// OwnCgroup is set when CgroupParent is ours, not the kubelet's: the
	// kubelet's pod cgroup outlives the sandbox (a pod's next sandbox
	// uses it too), ours goes with it.
	OwnCgroup bool
	IPs       []string
	LogDir    string
	Pid       runtimeapi.NamespaceMode

	config *runtimeapi.PodSandboxConfig
}

// container is one container; its monitor (shim) owns its stdio.
type container struct {
	mu sync.Mutex
	st containerState
}

type containerState struct {
	ID, SandboxID string
	Config        []byte // proto of *runtimeapi.ContainerConfig
	ImageRef      string // what the kubelet asked for
	ImageID       string // the config digest
	// ImageName and ImageDigest are what statuses report, as containerd
	// does: the image's first normalised tag, and its first repo digest
	// (name@sha256:…) or else its ID.
	ImageName, ImageDigest string
	CreatedAt              int64
	StartedAt              int64
	FinishedAt             int64
	State                  runtimeapi.ContainerState
	ExitCode               int32
	Reason                 string
	Message                string
	Bundle                 string // RunDir/containers/<id>
	Rootfs                 string
	LogPath                string
	CgroupsPath            string // as given to runc
	StopSignal             string
	ShimPid                int
	ShimStart              uint64 // the shim's start time in clock ticks, against pid reuse
	Pid                    int    // the container's init process, host pid namespace

	config *runtimeapi.ContainerConfig
}

func newID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return hex.EncodeToString(b[:])
}

func (r *Runtime) sandboxStateDir(id string) string {
	return filepath.Join(r.cfg.Root, "sandboxes", id)
}

func (r *Runtime) containerStateDir(id string) string {
	return filepath.Join(r.cfg.Root, "containers", id)
}

func (r *Runtime) saveSandbox(st *sandboxState) error {
	return monitor.WriteJSON(filepath.Join(r.sandboxStateDir(st.ID), "state.json"), st)
}

func (r *Runtime) saveContainer(st *containerState) error {
	return monitor.WriteJSON(filepath.Join(r.containerStateDir(st.ID), "state.json"), st)
}

// load reads every state file; containers are then reconciled with their
// shims and runc (adopt).
func (r *Runtime) load() error {
	sbs, err := os.ReadDir(filepath.Join(r.cfg.Root, "sandboxes"))
	if err != nil {
		return fmt.Errorf("runtime: load: %w", err)
	}
	for _, e := range sbs {
		var st sandboxState
		if err := monitor.ReadJSON(filepath.Join(r.sandboxStateDir(e.Name()), "state.json"), &st); err != nil {
			r.log.Warn("runtime: skipping unreadable sandbox state", "id", e.Name(), "err", err)
			continue
		}
		st.config = &runtimeapi.PodSandboxConfig{}
		if err := proto.Unmarshal(st.Config, st.config); err != nil {
			r.log.Warn("runtime: skipping sandbox with corrupt config", "id", st.ID, "err", err)
			continue
		}
		if st.Ready && !namespacesPinned(&st) {
			// A reboot (RunDir is a tmpfs) took the namespaces.
			r.log.Warn("runtime: sandbox lost its namespaces; marking it not ready", "id", st.ID)
			st.Ready = false
			st.NetNS, st.IPCNS, st.UTSNS = "", "", ""
			r.saveSandbox(&st)
		}
		r.sandboxes[st.ID] = &sandbox{st: st}
	}
	cs, err := os.ReadDir(filepath.Join(r.cfg.Root, "containers"))
	if err != nil {
		return fmt.Errorf("runtime: load: %w", err)
	}
	for _, e := range cs {
		var st containerState
		if err := monitor.ReadJSON(filepath.Join(r.containerStateDir(e.Name()), "state.json"), &st); err != nil {
			r.log.Warn("runtime: skipping unreadable container state", "id", e.Name(), "err", err)
			continue
		}
		st.config = &runtimeapi.ContainerConfig{}
		if err := proto.Unmarshal(st.Config, st.config); err != nil {
			r.log.Warn("runtime: skipping container with corrupt config", "id", st.ID, "err", err)
			continue
		}
		c := &container{st: st}
		r.adopt(c)
		r.containers[st.ID] = c
	}
	r.log.Info("runtime: state loaded", "sandboxes", len(r.sandboxes), "containers", len(r.containers))
	return nil
}

// lookupSandbox finds a sandbox by ID or unique ID prefix.
func (r *Runtime) lookupSandbox(id string) (*sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "" {
		return nil, fmt.Errorf("pod sandbox ID is empty: %w", errInvalid)
	}
	if s, ok := r.sandboxes[id]; ok {
		return s, nil
	}
	var found *sandbox
	for k, s := range r.sandboxes {
		if strings.HasPrefix(k, id) {
			if found != nil {
				return nil, fmt.Errorf("pod sandbox ID prefix %q is ambiguous: %w", id, errInvalid)
			}
			found = s
		}
	}
	if found == nil {
		return nil, notFound("pod sandbox", id)
	}
	return found, nil
}

func (r *Runtime) lookupContainer(id string) (*container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id == "" {
		return nil, fmt.Errorf("container ID is empty: %w", errInvalid)
	}
	if c, ok := r.containers[id]; ok {
		return c, nil
	}
	var found *container
	for k, c := range r.containers {
		if strings.HasPrefix(k, id) {
			if found != nil {
				return nil, fmt.Errorf("container ID prefix %q is ambiguous: %w", id, errInvalid)
			}
			found = c
		}
	}
	if found == nil {
		return nil, notFound("container", id)
	}
	return found, nil
}

// namespacesPinned reports whether every namespace file of a sandbox
// still has its namespace mounted on it.
func namespacesPinned(st *sandboxState) bool {
	for _, p := range []string{st.NetNS, st.IPCNS, st.UTSNS} {
		if p == "" {
			continue
		}
		var fs unix.Statfs_t
		if err := unix.Statfs(p, &fs); err != nil || fs.Type != unix.NSFS_MAGIC {
			return false
		}
	}
	return true
}
