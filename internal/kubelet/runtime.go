package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's side of the CRI: a gRPC client on the runtime's unix
// socket and the calls that read a pod's state back from the runtime.
// Everything the kubelet knows of running pods comes from here, which is
// what lets a restarted kubelet adopt what its predecessor started: the
// labels and annotations below are written on every sandbox and
// container and read back.

// Labels and annotations on sandboxes and containers (upstream's names).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"

	annotationRestartCount       = "io.kubernetes.container.restartCount"
	annotationHash               = "io.kubernetes.container.hash"
	annotationTerminationPath    = "io.kubernetes.container.terminationMessagePath"
	annotationTerminationPolicy  = "io.kubernetes.container.terminationMessagePolicy"
	annotationTerminationGrace   = "io.kubernetes.pod.terminationGracePeriod"
	annotationContainerImageSpec = "rudder.dev/container-image"
)

// criClient is the two CRI services.
type criClient struct {
	rt      cri.RuntimeServiceClient
	img     cri.ImageServiceClient
	conns   []*grpc.ClientConn
	timeout time.Duration
}

// dialCRI opens the CRI endpoints (unix:///path). gRPC connects lazily:
// a runtime not up yet only fails the calls.
func dialCRI(runtimeEndpoint, imageEndpoint string, timeout time.Duration) (*criClient, error) {
	dial := func(ep string) (*grpc.ClientConn, error) {
		conn, err := grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
		if err != nil {
			return nil, fmt.Errorf("kubelet: CRI endpoint %s: %w", ep, err)
		}
		return conn, nil
	}
	rc, err := dial(runtimeEndpoint)
	if err != nil {
		return nil, err
	}
	c := &criClient{rt: cri.NewRuntimeServiceClient(rc), conns: []*grpc.ClientConn{rc}, timeout: timeout}
	ic := rc
	if imageEndpoint != runtimeEndpoint {
		if ic, err = dial(imageEndpoint); err != nil {
			rc.Close()
			return nil, err
		}
		c.conns = append(c.conns, ic)
	}
	c.img = cri.NewImageServiceClient(ic)
	return c, nil
}

func (c *criClient) close() {
	for _, conn := range c.conns {
		conn.Close()
	}
}

// ctx bounds one call.
func (c *criClient) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, c.timeout)
}

// observer reads pods' state from the runtime, keeping what never
// changes (an exited container's status, a ready sandbox's IPs) so a sync
// costs two list calls and a status call per changed container.
type observer struct {
	cri     *criClient
	rootDir string

	mu         sync.Mutex
	containers map[string]observedContainer // by ID, as last fetched
	sandboxIPs map[string][]string          // ready sandboxes, by ID
}

func newObserver(c *criClient, rootDir string) *observer {
	return &observer{cri: c, rootDir: rootDir, containers: map[string]observedContainer{}, sandboxIPs: map[string][]string{}}
}

// observe is everything the runtime holds for pod uid, newest first.
func (o *observer) observe(ctx context.Context, uid string) (podObserved, error) {
	filter := map[string]string{labelPodUID: uid}
	cctx, cancel := o.cri.ctx(ctx)
	defer cancel()
	sbs, err := o.cri.rt.ListPodSandbox(cctx, &cri.ListPodSandboxRequest{Filter: &cri.PodSandboxFilter{LabelSelector: filter}})
	if err != nil {
		return podObserved{}, fmt.Errorf("list pod sandboxes: %w", err)
	}
	cs, err := o.cri.rt.ListContainers(cctx, &cri.ListContainersRequest{Filter: &cri.ContainerFilter{LabelSelector: filter}})
	if err != nil {
		return podObserved{}, fmt.Errorf("list containers: %w", err)
	}
	var obs podObserved
	for _, s := range sbs.Items {
		osb := observedSandbox{ID: s.Id, Ready: s.State == cri.PodSandboxState_SANDBOX_READY, CreatedAt: time.Unix(0, s.CreatedAt)}
		if s.Metadata != nil {
			osb.Attempt = s.Metadata.Attempt
		}
		if osb.Ready {
			osb.IPs = o.sandboxIPsOf(ctx, s.Id)
		}
		obs.Sandboxes = append(obs.Sandboxes, osb)
	}
	for _, c := range cs.Containers {
		oc, err := o.container(ctx, uid, c)
		if err != nil {
			return podObserved{}, err
		}
		obs.Containers = append(obs.Containers, oc)
	}
	obs.sortNewestFirst()
	return obs, nil
}

// sandboxIPsOf is a ready sandbox's IPs, asked once.
func (o *observer) sandboxIPsOf(ctx context.Context, id string) []string {
	o.mu.Lock()
	ips, ok := o.sandboxIPs[id]
	o.mu.Unlock()
	if ok {
		return ips
	}
	cctx, cancel := o.cri.ctx(ctx)
	defer cancel()
	st, err := o.cri.rt.PodSandboxStatus(cctx, &cri.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil || st.Status == nil {
		return nil
	}
	if n := st.Status.Network; n != nil {
		if n.Ip != "" {
			ips = append(ips, n.Ip)
		}
		for _, a := range n.AdditionalIps {
			if a.Ip != "" {
				ips = append(ips, a.Ip)
			}
		}
	}
	o.mu.Lock()
	o.sandboxIPs[id] = ips
	o.mu.Unlock()
	return ips
}

// container is one container's state: the list's, completed by a status
// call when its state is new.
func (o *observer) container(ctx context.Context, uid string, c *cri.Container) (observedContainer, error) {
	state := criState(c.State)
	o.mu.Lock()
	cached, ok := o.containers[c.Id]
	o.mu.Unlock()
	if ok && cached.State == state {
		return cached, nil
	}
	oc := observedContainer{ID: c.Id, SandboxID: c.PodSandboxId, State: state, CreatedAt: time.Unix(0, c.CreatedAt), ImageRef: c.ImageRef,
		Name: c.Labels[labelContainerName], Hash: c.Annotations[annotationHash]}
	if c.Metadata != nil {
		if oc.Name == "" {
			oc.Name = c.Metadata.Name
		}
		oc.RestartCount = int32(c.Metadata.Attempt)
	}
	if n, err := strconv.Atoi(c.Annotations[annotationRestartCount]); err == nil {
		oc.RestartCount = int32(n)
	}
	cctx, cancel := o.cri.ctx(ctx)
	defer cancel()
	st, err := o.cri.rt.ContainerStatus(cctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
	if err != nil {
		return observedContainer{}, fmt.Errorf("status of container %s: %w", c.Id, err)
	}
	if s := st.Status; s != nil {
		oc.State = criState(s.State)
		if s.StartedAt > 0 {
			oc.StartedAt = time.Unix(0, s.StartedAt)
		}
		if s.FinishedAt > 0 {
			oc.FinishedAt = time.Unix(0, s.FinishedAt)
		}
		oc.ExitCode, oc.Reason, oc.Message, oc.LogPath = s.ExitCode, s.Reason, s.Message, s.LogPath
		if s.ImageRef != "" {
			oc.ImageRef = s.ImageRef
		}
		if oc.State == stateExited && oc.Message == "" {
			oc.Message = o.terminationMessage(uid, &oc, c.Annotations[annotationTerminationPolicy])
		}
	}
	o.mu.Lock()
	o.containers[c.Id] = oc
	o.mu.Unlock()
	return oc, nil
}

// forget drops what is cached of removed containers and sandboxes.
func (o *observer) forget(ids ...string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, id := range ids {
		delete(o.containers, id)
		delete(o.sandboxIPs, id)
	}
}

// prune drops what is cached of containers and sandboxes the runtime no
// longer has (removed by someone else: crictl rm).
func (o *observer) prune(live map[string]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.containers {
		if !live[id] {
			delete(o.containers, id)
		}
	}
	for id := range o.sandboxIPs {
		if !live[id] {
			delete(o.sandboxIPs, id)
		}
	}
}

func criState(s cri.ContainerState) containerState {
	switch s {
	case cri.ContainerState_CONTAINER_CREATED:
		return stateCreated
	case cri.ContainerState_CONTAINER_RUNNING:
		return stateRunning
	case cri.ContainerState_CONTAINER_EXITED:
		return stateExited
	}
	return stateUnknown
}

// Termination messages are read from the file the container wrote, at
// most 4 KiB; FallbackToLogsOnError takes a failed container's last 80
// log lines when it wrote none.
const (
	terminationMessageMax = 4096
	fallbackLogLines      = 80
)

// terminationMessagePath is the host file mounted at a container
// instance's terminationMessagePath.
func terminationMessagePath(rootDir, uid, container string, restartCount int32) string {
	return filepath.Join(rootDir, "pods", uid, "containers", container, strconv.Itoa(int(restartCount)))
}

func (o *observer) terminationMessage(uid string, c *observedContainer, policy string) string {
	b, _ := readAtMost(terminationMessagePath(o.rootDir, uid, c.Name, c.RestartCount), terminationMessageMax)
	if len(b) > 0 || policy != "FallbackToLogsOnError" || c.ExitCode == 0 || c.LogPath == "" {
		return string(b)
	}
	lines, err := readCRILog(c.LogPath)
	if err != nil {
		return ""
	}
	if len(lines) > fallbackLogLines {
		lines = lines[len(lines)-fallbackLogLines:]
	}
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.Text)
		if !l.Partial {
			sb.WriteByte('\n')
		}
	}
	s := sb.String()
	if len(s) > terminationMessageMax {
		s = s[len(s)-terminationMessageMax:]
	}
	return s
}

func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := f.Read(b)
	if m > 0 {
		return b[:m], nil
	}
	return nil, err
}
