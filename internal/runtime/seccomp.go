package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// deniedSyscalls is RuntimeDefault: everything is allowed except the
// syscalls Docker's default profile keeps from unprivileged containers
// (kernel modules, clocks, mounts, namespaces, tracing, keyrings, BPF,
// reboot...). They fail with EPERM. Docker's profile is an allow-list;
// a deny-list of the same dangerous calls is the smaller contract.
var deniedSyscalls = []string{
	"acct", "add_key", "bpf", "clock_adjtime", "clock_settime", "create_module",
	"delete_module", "finit_module", "fsconfig", "fsmount", "fsopen", "fspick",
	"get_kernel_syms", "get_mempolicy", "init_module", "ioperm", "iopl", "kcmp",
	"kexec_file_load", "kexec_load", "keyctl", "lookup_dcookie", "mbind", "mount",
	"mount_setattr", "move_mount", "move_pages", "name_to_handle_at", "nfsservctl",
	"open_by_handle_at", "open_tree", "perf_event_open", "pivot_root",
	"process_vm_readv", "process_vm_writev", "ptrace", "query_module", "quotactl",
	"quotactl_fd", "reboot", "request_key", "set_mempolicy", "setns", "settimeofday",
	"stime", "swapoff", "swapon", "sysfs", "_sysctl", "umount", "umount2", "unshare",
	"uselib", "userfaultfd", "ustat", "vm86", "vm86old",
}

func defaultSeccomp() *specs.LinuxSeccomp {
	eperm := uint(1)
	s := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{{
			Names:    deniedSyscalls,
			Action:   specs.ActErrno,
			ErrnoRet: &eperm,
		}},
	}
	switch goruntime.GOARCH {
	case "amd64":
		s.Architectures = []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	case "arm64":
		s.Architectures = []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	}
	return s
}

// seccompFor picks the container's profile. Privileged containers and
// Unconfined get none; a missing profile means RuntimeDefault, as the
// kubelet sends it for pods that ask for nothing only when configured to.
func seccompFor(sc *runtimeapi.LinuxContainerSecurityContext) (*specs.LinuxSeccomp, error) {
	if sc.GetPrivileged() {
		return nil, nil
	}
	p := sc.GetSeccomp()
	if p == nil {
		switch path := sc.GetSeccompProfilePath(); {
		case path == "" || path == "unconfined":
			return nil, nil
		case path == "runtime/default" || path == "docker/default":
			return defaultSeccomp(), nil
		case len(path) > len("localhost/") && path[:len("localhost/")] == "localhost/":
			return loadSeccomp(path[len("localhost/"):])
		default:
			return nil, fmt.Errorf("seccomp profile %q: %w", path, errInvalid)
		}
	}
	switch p.GetProfileType() {
	case runtimeapi.SecurityProfile_Unconfined:
		return nil, nil
	case runtimeapi.SecurityProfile_RuntimeDefault:
		return defaultSeccomp(), nil
	case runtimeapi.SecurityProfile_Localhost:
		return loadSeccomp(p.GetLocalhostRef())
	}
	return nil, fmt.Errorf("seccomp profile type %v: %w", p.GetProfileType(), errInvalid)
}

// loadSeccomp reads a Localhost profile: an OCI LinuxSeccomp in JSON
// (Docker's profile format has the same field names).
func loadSeccomp(path string) (*specs.LinuxSeccomp, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("seccomp profile: %w: %w", err, errInvalid)
	}
	var s specs.LinuxSeccomp
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("seccomp profile %s: %w: %w", path, err, errInvalid)
	}
	if s.DefaultAction == "" {
		return nil, fmt.Errorf("seccomp profile %s has no defaultAction: %w", path, errInvalid)
	}
	return &s, nil
}
