package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// Network gives a sandbox its pod IPs. Setup runs after the sandbox's
// network namespace exists (loopback already up) and returns the pod's
// IPs, first the primary; Teardown undoes it and must succeed when Setup
// never ran or ran twice. Both are called with the sandbox locked.
type Network interface {
	Setup(ctx context.Context, id, netnsPath string, config *runtimeapi.PodSandboxConfig) (ips []string, err error)
	Teardown(ctx context.Context, id, netnsPath string) error
}

// StreamServer hands out the URLs the kubelet redirects exec, attach and
// port-forward requests to. internal/runtime/streaming's Server is one.
type StreamServer interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// Config is what New needs. Zero values take the documented defaults.
type Config struct {
	// Root holds the state that must survive a reboot of the runtime:
	// one JSON file per sandbox and container, exit files
	// (e.g. /var/lib/rudder/agent/runtime). Required.
	Root string
	// RunDir holds what dies with the machine: namespace files, OCI
	// bundles, runc's state, shim sockets (e.g. /run/rudder/runtime).
	// Keep it short: unix socket paths under it must fit in 108 bytes.
	// Required.
	RunDir string
	// LogRoot is where containers log when the kubelet gives no log
	// directory (default /var/log/pods).
	LogRoot string
	// LogMaxSize is the size at which a container's log rotates
	// (default 10 MiB); LogMaxFiles how many files are kept, the live
	// one included (default 5).
	LogMaxSize  int64
	LogMaxFiles int
	// Images is the image store. Required.
	Images image.Images
	// OCIRuntime is the runc-compatible binary (default "runc" from PATH).
	OCIRuntime string
	// CgroupParent is the cgroup under which pods go when the kubelet
	// names none: absolute from each hierarchy's root, or relative to
	// the runtime's own cgroup (default "kubepods", relative).
	CgroupParent string
	// ShimBinary is the executable re-executed as the per-container
	// monitor with "runtime-shim" as its first argument (default: this
	// process's executable, /proc/self/exe).
	ShimBinary string
	// Network sets up pod networking; nil gives sandboxes loopback only.
	Network Network
	// Streaming serves exec, attach and port-forward; nil refuses them.
	Streaming StreamServer
	// StopTimeout bounds how long the runtime waits for a container to
	// die after SIGKILL (default 10 s).
	KillTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.Root == "" || c.RunDir == "" {
		return errors.New("runtime: Root and RunDir are required")
	}
	if c.Images == nil {
		return errors.New("runtime: Images is required")
	}
	// The longest socket is RunDir/containers/<64 hex>/a.sock; unix
	// socket paths hold 107 bytes.
	if n := len(c.RunDir) + len("/containers/") + 64 + len("/a.sock"); n > 107 {
		return fmt.Errorf("runtime: RunDir %q is too long: container sockets under it would need %d bytes, unix sockets hold 107", c.RunDir, n)
	}
	if c.LogRoot == "" {
		c.LogRoot = "/var/log/pods"
	}
	if c.LogMaxSize <= 0 {
		c.LogMaxSize = 10 << 20
	}
	if c.LogMaxFiles <= 0 {
		c.LogMaxFiles = 5
	}
	if c.OCIRuntime == "" {
		c.OCIRuntime = "runc"
	}
	p, err := exec.LookPath(c.OCIRuntime)
	if err == nil {
		p, err = filepath.Abs(p) // the monitor runs it from "/"
	}
	if err != nil {
		return fmt.Errorf("runtime: OCI runtime %q: %w", c.OCIRuntime, err)
	}
	c.OCIRuntime = p
	if c.CgroupParent == "" {
		c.CgroupParent = "kubepods"
	}
	if c.ShimBinary == "" {
		// Not os.Executable(): /proc/self/exe still runs after an upgrade
		// replaced the binary on disk.
		c.ShimBinary = "/proc/self/exe"
	}
	if c.KillTimeout <= 0 {
		c.KillTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Runtime is a CRI runtime and image service. Create it with New and
// serve it with Serve; its methods are the CRI RPCs and are safe for
// concurrent use.
type Runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	cfg    Config
	log    *slog.Logger
	host   hostInfo
	runc   *runc
	images image.Images

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	streaming  StreamServer
	cpuSamples map[string]cpuSample
}

// New loads the state under cfg.Root and re-adopts every sandbox and
// container found there; running containers keep running.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	for _, d := range []string{cfg.Root, cfg.RunDir,
		filepath.Join(cfg.Root, "sandboxes"), filepath.Join(cfg.Root, "containers"),
		filepath.Join(cfg.RunDir, "sandboxes"), filepath.Join(cfg.RunDir, "containers"),
		filepath.Join(cfg.RunDir, "runc")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
	}
	host, err := probeHost()
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	r := &Runtime{
		cfg:        cfg,
		log:        cfg.Logger,
		host:       host,
		runc:       &runc{bin: cfg.OCIRuntime, root: filepath.Join(cfg.RunDir, "runc")},
		images:     cfg.Images,
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
		streaming:  cfg.Streaming,
		cpuSamples: map[string]cpuSample{},
	}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// SetStreaming installs the streaming server after New, for the
// streaming server is built from the runtime (StreamRuntime).
func (r *Runtime) SetStreaming(s StreamServer) {
	r.mu.Lock()
	r.streaming = s
	r.mu.Unlock()
}

// Serve serves the CRI RuntimeService and ImageService on a unix socket
// at socketPath until ctx ends. A stale socket file is replaced.
func (r *Runtime) Serve(ctx context.Context, socketPath string) error {
	if err := os.MkdirAll(filepath.Dir(socketPath), 0o755); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if err := os.Remove(socketPath); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("runtime: %w", err)
	}
	l, err := net.Listen("unix", socketPath)
	if err != nil {
		return fmt.Errorf("runtime: listen: %w", err)
	}
	defer os.Remove(socketPath)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(16<<20), grpc.MaxSendMsgSize(16<<20))
	runtimeapi.RegisterRuntimeServiceServer(srv, r)
	runtimeapi.RegisterImageServiceServer(srv, &imageService{r: r})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			srv.Stop()
		}
		return nil
	case err := <-errc:
		return fmt.Errorf("runtime: serve: %w", err)
	}
}

// Error classes. grpcError maps them to status codes in one place.
var (
	errNotFound      = errors.New("not found")
	errInvalid       = errors.New("invalid argument")
	errPrecondition  = errors.New("failed precondition")
	errAlreadyExists = errors.New("already exists")
)

func notFound(kind, id string) error {
	return fmt.Errorf("%s %q: %w", kind, id, errNotFound)
}

// grpcError turns an error of ours into a gRPC status error.
func grpcError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, errNotFound), errors.Is(err, image.ErrNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, errInvalid):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, errPrecondition), errors.Is(err, image.ErrInUse):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.Is(err, streaming.ErrTooManyRequests):
		return status.Error(codes.ResourceExhausted, err.Error())
	case errors.Is(err, errAlreadyExists):
		return status.Error(codes.AlreadyExists, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}
