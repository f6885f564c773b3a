package kubelet

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// The Node: registration, its status (capacity, allocatable, nodeInfo,
// addresses, conditions, images) posted every NodeStatusUpdateFrequency
// when it changed and every NodeStatusReportFrequency regardless, and
// the lease in kube-node-lease renewed every quarter of its duration —
// the pattern of internal/simnode, with figures read from the machine.

// Hard eviction thresholds, taken from allocatable (upstream's defaults).
var (
	evictionMemory         = resource.MustParse("100Mi")
	evictionNodefsFraction = 0.10
)

// maxImagesInStatus and maxNamesPerImage bound the images listed.
const (
	maxImagesInStatus = 50
	maxNamesPerImage  = 5
)

// nodeFigures are the node's measured figures at one time.
type nodeFigures struct {
	capacity, allocatable corev1.ResourceList
	memoryAvailable       int64
	fsAvailable, fsSize   uint64
	runtimeErr            string // why the runtime is not ready; "" ready
	images                []corev1.ContainerImage
}

// capacity is the node's capacity.
func (k *Kubelet) capacity() corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(k.machine.cpus), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(k.machine.memoryBytes, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(k.cfg.MaxPods), resource.DecimalSI),
	}
	if size, _, _, _, ok := fsStats(k.cfg.RootDir); ok {
		c[corev1.ResourceEphemeralStorage] = *resource.NewQuantity(int64(size), resource.BinarySI)
	}
	return c
}

// allocatable is capacity less the reservations and hard eviction
// thresholds, never below zero.
func (k *Kubelet) allocatable() corev1.ResourceList {
	return allocatableOf(k.capacity(), k.cfg.SystemReserved, k.cfg.KubeReserved)
}

func allocatableOf(capacity, system, kube corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range capacity {
		a := q.DeepCopy()
		for _, r := range []corev1.ResourceList{system, kube} {
			if v, ok := r[name]; ok {
				a.Sub(v)
			}
		}
		switch name {
		case corev1.ResourceMemory:
			a.Sub(evictionMemory)
		case corev1.ResourceEphemeralStorage:
			a.Sub(*resource.NewQuantity(int64(float64(q.Value())*evictionNodefsFraction), resource.BinarySI))
		}
		if a.Sign() < 0 {
			a = *resource.NewQuantity(0, q.Format)
		}
		out[name] = a
	}
	return out
}

// measure reads the node's figures now.
func (k *Kubelet) measure(ctx context.Context) nodeFigures {
	f := nodeFigures{capacity: k.capacity()}
	f.allocatable = allocatableOf(f.capacity, k.cfg.SystemReserved, k.cfg.KubeReserved)
	mi := meminfo()
	f.memoryAvailable = mi["MemAvailable"]
	if _, ok := mi["MemAvailable"]; !ok {
		f.memoryAvailable = k.machine.memoryBytes
	}
	if size, avail, _, _, ok := fsStats(k.cfg.RootDir); ok {
		f.fsSize, f.fsAvailable = size, avail
	}
	f.runtimeErr = k.runtimeStatus(ctx)
	f.images = k.nodeImages(ctx)
	return f
}

// runtimeStatus is why the runtime is not ready, or "".
func (k *Kubelet) runtimeStatus(ctx context.Context) string {
	cctx, cancel := k.cri.ctx(ctx)
	defer cancel()
	st, err := k.cri.rt.Status(cctx, &cri.StatusRequest{})
	if err != nil || st.Status == nil {
		return "container runtime is down"
	}
	for _, c := range st.Status.Conditions {
		if !c.Status {
			if c.Type == cri.NetworkReady {
				return fmt.Sprintf("container runtime network not ready: NetworkReady=false reason:%s message:%s", c.Reason, c.Message)
			}
			return fmt.Sprintf("container runtime status check may not have completed yet: %s=false reason:%s message:%s", c.Type, c.Reason, c.Message)
		}
	}
	return ""
}

// nodeImages are the runtime's images, the largest first.
func (k *Kubelet) nodeImages(ctx context.Context) []corev1.ContainerImage {
	cctx, cancel := k.cri.ctx(ctx)
	defer cancel()
	r, err := k.cri.img.ListImages(cctx, &cri.ListImagesRequest{})
	if err != nil {
		return nil
	}
	imgs := slices.Clone(r.Images)
	slices.SortStableFunc(imgs, func(a, b *cri.Image) int {
		switch {
		case a.Size > b.Size:
			return -1
		case a.Size < b.Size:
			return 1
		}
		return strings.Compare(a.Id, b.Id)
	})
	var out []corev1.ContainerImage
	for _, im := range imgs {
		names := append(slices.Clone(im.RepoDigests), im.RepoTags...)
		if len(names) == 0 {
			continue
		}
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, corev1.ContainerImage{Names: names, SizeBytes: int64(im.Size)})
		if len(out) == maxImagesInStatus {
			break
		}
	}
	return out
}

// nodeLabels are the labels the kubelet puts on its Node.
func (k *Kubelet) nodeLabels() map[string]string {
	l := map[string]string{
		corev1.LabelHostname:   k.cfg.NodeName,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: runtime.GOARCH,
	}
	maps.Copy(l, k.cfg.Labels)
	return l
}

// nodeStatus is the status to post at now given what the API holds:
// fields others own are kept; a condition's transition time moves only
// when its status does.
func (k *Kubelet) nodeStatus(cur corev1.NodeStatus, f nodeFigures, now time.Time) corev1.NodeStatus {
	st := *cur.DeepCopy()
	st.Capacity, st.Allocatable = f.capacity, f.allocatable
	st.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: k.cfg.NodeIP.String()},
		{Type: corev1.NodeHostName, Address: k.cfg.NodeName},
	}
	st.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(k.Port())}}
	st.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               k.machine.machineID,
		SystemUUID:              k.machine.systemUUID,
		BootID:                  k.machine.bootID,
		KernelVersion:           k.machine.kernel,
		OSImage:                 k.machine.osImage,
		ContainerRuntimeVersion: k.runtimeName + "://" + k.runtimeVersion,
		KubeletVersion:          Version,
		OperatingSystem:         "linux",
		Architecture:            runtime.GOARCH,
	}
	st.Images = f.images
	setNodeConditions(&st, nodeConditions(f), now)
	return st
}

// condition is one of the Node conditions this kubelet reports.
type condition = kubeletapi.NodeCondition

// nodeConditions are the conditions figures f give, in upstream's order.
func nodeConditions(f nodeFigures) []condition {
	mem := condition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"}
	if f.memoryAvailable < evictionMemory.Value() {
		mem = condition{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasInsufficientMemory", Message: "kubelet has insufficient memory available"}
	}
	disk := condition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"}
	if f.fsSize > 0 && float64(f.fsAvailable) < evictionNodefsFraction*float64(f.fsSize) {
		disk = condition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"}
	}
	pid := condition{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"}
	ready := condition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if f.runtimeErr != "" {
		ready = condition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: f.runtimeErr}
	}
	return []condition{mem, disk, pid, ready}
}

func setNodeConditions(st *corev1.NodeStatus, want []condition, now time.Time) {
	kubeletapi.SetNodeConditions(st, want, now)
}

// nodeStatusChanged compares statuses as the kubelet does: heartbeats
// alone are no change.
func nodeStatusChanged(a, b *corev1.NodeStatus) bool {
	strip := func(s *corev1.NodeStatus) *corev1.NodeStatus {
		s = s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return !equality.Semantic.DeepEqual(strip(a), strip(b))
}

// registerNode creates the Node, or takes over the existing one
// (reconciling the kubelet's labels), and posts its status.
func (k *Kubelet) registerNode(ctx context.Context) error {
	nodes := k.client().CoreV1().Nodes()
	now := k.cfg.Clock.Now()
	f := k.measure(ctx)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Labels: k.nodeLabels(),
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{Taints: slices.Clone(k.cfg.Taints)},
	}
	node.Status = k.nodeStatus(corev1.NodeStatus{}, f, now)
	delay := 200 * time.Millisecond
	for {
		out, err := nodes.Create(ctx, node, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			out, err = k.adoptNode(ctx, f, now)
		}
		if err == nil {
			k.nodeMu.Lock()
			k.lastPost = now
			k.lease.nodeUID = out.UID
			k.nodeMu.Unlock()
			k.cfg.Logger.Info("node registered", "uid", out.UID)
			return nil
		}
		k.cfg.Logger.Warn("cannot register the node", "err", err)
		t := k.cfg.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		delay = min(2*delay, 7*time.Second)
	}
}

func (k *Kubelet) adoptNode(ctx context.Context, f nodeFigures, now time.Time) (*corev1.Node, error) {
	nodes := k.client().CoreV1().Nodes()
	cur, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	changed := false
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	for key, v := range k.nodeLabels() {
		if cur.Labels[key] != v {
			cur.Labels[key], changed = v, true
		}
	}
	if changed {
		if cur, err = nodes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return nil, err
		}
	}
	cur.Status = k.nodeStatus(cur.Status, f, now)
	return nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
}

// nodeStatusLoop posts the node's status when it changed, or when
// NodeStatusReportFrequency passed.
//
// Until the node is first Ready it looks every 100 ms instead, as
// upstream's kubelet does at start (fastStatusUpdateOnce): a node whose
// runtime network comes up a moment after registration (it waits for its
// pod CIDR) turns Ready then, not a whole period later.
func (k *Kubelet) nodeStatusLoop(ctx context.Context) {
	const fast = 100 * time.Millisecond
	beenReady := false
	for {
		interval := k.cfg.NodeStatusUpdateFrequency
		if !beenReady {
			interval = min(fast, interval)
		}
		t := k.cfg.Clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		ready, err := k.syncNodeStatus(ctx)
		if err != nil && ctx.Err() == nil {
			k.cfg.Logger.Warn("node status", "err", err)
		}
		beenReady = beenReady || ready
	}
}

// syncNodeStatus posts the node's status if it changed or is due, and
// says whether the node is Ready.
func (k *Kubelet) syncNodeStatus(ctx context.Context) (ready bool, err error) {
	nodes := k.client().CoreV1().Nodes()
	node, err := nodes.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Deleted under us: register again, as a kubelet whose Node
		// went missing does.
		return false, k.registerNode(ctx)
	}
	if err != nil {
		return false, err
	}
	now := k.cfg.Clock.Now()
	want := k.nodeStatus(node.Status, k.measure(ctx), now)
	ready = nodeReady(&want)
	k.nodeMu.Lock()
	due := now.Sub(k.lastPost) >= k.cfg.NodeStatusReportFrequency
	k.nodeMu.Unlock()
	if !due && !nodeStatusChanged(&node.Status, &want) {
		return ready, nil
	}
	node.Status = want
	if _, err := nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("post node status: %w", err)
	}
	k.nodeMu.Lock()
	k.lastPost = now
	k.nodeMu.Unlock()
	return ready, nil
}

// nodeReady reads the Ready condition of a status.
func nodeReady(st *corev1.NodeStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaseState is the lease as last written: renewals need no read.
type leaseState struct {
	nodeUID types.UID
	last    *coordinationv1.Lease
}

func (k *Kubelet) leaseLoop(ctx context.Context) {
	interval := k.cfg.LeaseDuration / 4
	for {
		if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
			k.cfg.Logger.Warn("renew lease", "err", err)
			interval = 200 * time.Millisecond // retry soon, as the lease controller
		} else {
			interval = k.cfg.LeaseDuration / 4
		}
		t := k.cfg.Clock.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

func (k *Kubelet) setLeaseSpec(l *coordinationv1.Lease, uid types.UID, now time.Time) {
	l.Spec.HolderIdentity = ptr.To(k.cfg.NodeName)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(k.cfg.LeaseDuration / time.Second))
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if len(l.OwnerReferences) == 0 && uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: k.cfg.NodeName, UID: uid}}
	}
}

// renewLease writes a fresh renewTime: an update of the lease as last
// written, a read only when that is stale, a create when it is missing.
func (k *Kubelet) renewLease(ctx context.Context) error {
	leases := k.client().CoordinationV1().Leases(corev1.NamespaceNodeLease)
	k.nodeMu.Lock()
	last, uid := k.lease.last, k.lease.nodeUID
	k.nodeMu.Unlock()
	now := k.cfg.Clock.Now()
	var out *coordinationv1.Lease
	var err error
	if last != nil {
		l := last.DeepCopy()
		k.setLeaseSpec(l, uid, now)
		out, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if last == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		var cur *coordinationv1.Lease
		cur, err = leases.Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: k.cfg.NodeName, Namespace: corev1.NamespaceNodeLease}}
			k.setLeaseSpec(l, uid, now)
			out, err = leases.Create(ctx, l, metav1.CreateOptions{})
		case err == nil:
			k.setLeaseSpec(cur, uid, now)
			out, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return err
	}
	k.nodeMu.Lock()
	k.lease.last = out
	k.nodeMu.Unlock()
	return nil
}
