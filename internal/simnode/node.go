package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// simNode is one simulated machine. Its identity is fixed at New; the rest
// is guarded by mu and changes as the node registers, stops and starts.
type simNode struct {
	index   int
	name    string
	zone    string
	ip      netip.Addr // InternalIP
	podCIDR string     // asked for at creation; an existing node's wins
	machine string     // machineID
	uuid    string     // systemUUID: the machineID's bytes as a UUID
	boot    string

	mu         sync.Mutex
	registered bool
	stopped    bool // the stop annotation is set
	gone       bool // the Node was deleted: nothing is renewed any more
	forcePost  bool // post status at the next check even if unchanged
	uid        types.UID
	pool       *ipPool
	lease      *coordinationv1.Lease // as last written: renewals need no read
	leaseDue   time.Time             // when the current renewal was due
	lastPost   time.Time
}

// alive reports whether the node renews its lease, posts status and runs
// pods: registered, not stopped, not deleted.
func (n *simNode) alive() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.registered && !n.stopped && !n.gone
}

func newSimNode(cfg *Config, i int) *simNode {
	cluster := netip.MustParsePrefix(cfg.ClusterCIDR)
	ips := netip.MustParsePrefix(cfg.NodeIPRange)
	name := cfg.Prefix + strconv.Itoa(i)
	id := sha256.Sum256(fmt.Appendf(nil, "%d/%s", cfg.Seed, name))
	boot := sha256.Sum256(fmt.Appendf(nil, "%d/%s/boot/%d", cfg.Seed, name, cfg.Clock.Now().UnixNano()))
	return &simNode{
		index:   i,
		name:    name,
		zone:    "zone-" + strconv.Itoa(i%cfg.Zones),
		ip:      addAddr(ips.Masked().Addr(), uint64(i)+1),
		podCIDR: nodeCIDR(cluster, cfg.NodeCIDRMaskSize, i).String(),
		machine: hex.EncodeToString(id[:16]),
		uuid:    uuidString(id[:16]),
		boot:    uuidString(boot[:16]),
	}
}

func uuidString(b []byte) string {
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// nodeLabels are the labels a kubelet puts on its node, plus the fleet's.
func nodeLabels(cfg *Config, n *simNode) map[string]string {
	l := map[string]string{
		corev1.LabelHostname:           n.name,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         "amd64",
		corev1.LabelInstanceTypeStable: cfg.InstanceType,
		corev1.LabelTopologyZone:       n.zone,
		corev1.LabelTopologyRegion:     cfg.Region,
	}
	maps.Copy(l, cfg.Labels)
	l[LabelSimulated] = "true" // the fleet's node watch selects on it
	return l
}

// newNodeObject is the Node a simulated node registers, status included,
// as a kubelet creates it.
func newNodeObject(cfg *Config, n *simNode, now time.Time) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   n.name,
			Labels: nodeLabels(cfg, n),
			// The kubelet's default: attach/detach belongs to the controller.
			Annotations: map[string]string{"volumes.kubernetes.io/controller-managed-attach-detach": "true"},
		},
		Spec: corev1.NodeSpec{
			PodCIDR:  n.podCIDR,
			PodCIDRs: []string{n.podCIDR},
			Taints:   append([]corev1.Taint(nil), cfg.Taints...),
		},
	}
	node.Status = nodeStatus(cfg, n, corev1.NodeStatus{}, now)
	return node
}

// adoptNode brings an existing Node under the fleet: the kubelet's
// labels reconciled, a podCIDR set if it has none. It reports whether
// anything changed.
func adoptNode(cfg *Config, n *simNode, node *corev1.Node) bool {
	changed := false
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range nodeLabels(cfg, n) {
		if node.Labels[k] != v {
			node.Labels[k] = v
			changed = true
		}
	}
	if node.Spec.PodCIDR == "" && len(node.Spec.PodCIDRs) == 0 {
		node.Spec.PodCIDR, node.Spec.PodCIDRs = n.podCIDR, []string{n.podCIDR}
		changed = true
	}
	return changed
}

// nodeConditions are the conditions a healthy kubelet reports, in its
// order.
var nodeConditions = []kubeletapi.NodeCondition{
	{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
	{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
	{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
	{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
}

// nodeStatus is the status node n posts at now, given what the API holds:
// conditions and fields other writers own are kept, a condition's
// transition time moves only when its status changes.
func nodeStatus(cfg *Config, n *simNode, cur corev1.NodeStatus, now time.Time) corev1.NodeStatus {
	st := *cur.DeepCopy()
	st.Capacity, st.Allocatable = nodeResources(cfg, cur)
	st.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: n.ip.String()},
		{Type: corev1.NodeHostName, Address: n.name},
	}
	// Port 0 unless the node serves the kubelet API: nothing to dial.
	st.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: cfg.kubeletPort}}
	st.NodeInfo = corev1.NodeSystemInfo{
		MachineID:               n.machine,
		SystemUUID:              n.uuid,
		BootID:                  n.boot,
		KernelVersion:           "6.12.0-simnode",
		OSImage:                 "rudder simulated node",
		ContainerRuntimeVersion: "simnode://" + KubeletVersion[1:],
		KubeletVersion:          KubeletVersion,
		OperatingSystem:         "linux",
		Architecture:            "amd64",
	}
	st.Images = append([]corev1.ContainerImage(nil), cfg.Images...)
	kubeletapi.SetNodeConditions(&st, nodeConditions, now)
	return st
}

// nodeResources are the capacity and allocatable a node posts, as the
// kubelet builds them: it sets the resources it knows (the fleet's) and
// leaves others in capacity alone — an extended resource someone patched
// in (upstream's e2e tests add example.com/... this way) stays, and is
// allocatable whole; an extended resource left only in allocatable goes.
func nodeResources(cfg *Config, cur corev1.NodeStatus) (capacity, allocatable corev1.ResourceList) {
	capacity = corev1.ResourceList{}
	for k, v := range cur.Capacity {
		if _, ours := cfg.Capacity[k]; !ours {
			capacity[k] = v.DeepCopy()
		}
	}
	maps.Copy(capacity, cfg.Capacity.DeepCopy())
	allocatable = cfg.Allocatable.DeepCopy()
	for k, v := range capacity {
		if _, ours := allocatable[k]; !ours {
			allocatable[k] = v.DeepCopy()
		}
	}
	return capacity, allocatable
}

// statusChanged compares two statuses as the kubelet does: heartbeats
// alone are no change.
func statusChanged(a, b *corev1.NodeStatus) bool {
	strip := func(s *corev1.NodeStatus) *corev1.NodeStatus {
		s = s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return !equality.Semantic.DeepEqual(strip(a), strip(b))
}

// register creates node n, or adopts it if it exists, and its lease. The
// caller schedules what follows.
func (f *Fleet) register(ctx context.Context, n *simNode) error {
	nodes := f.cfg.Client.CoreV1().Nodes()
	now := f.cfg.Clock.Now()
	node, err := nodes.Create(ctx, newNodeObject(&f.cfg, n, now), metav1.CreateOptions{})
	adopted := false
	if apierrors.IsAlreadyExists(err) {
		adopted = true
		if node, err = nodes.Get(ctx, n.name, metav1.GetOptions{}); err != nil {
			return err
		}
		if adoptNode(&f.cfg, n, node) {
			node, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.name, err)
	}
	cidr := n.podCIDR
	if node.Spec.PodCIDR != "" {
		cidr = node.Spec.PodCIDR
	}
	pool, err := newIPPool(cidr)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.uid, n.pool = node.UID, pool
	n.stopped = node.Annotations[AnnotationStopped] == "true"
	n.gone = false
	if adopted {
		n.forcePost = true // a restarted kubelet posts its status at once
	} else {
		n.lastPost = now
	}
	stopped := n.stopped
	n.mu.Unlock()
	if stopped {
		// A dead machine does not come back by restarting the simulator.
		return nil
	}
	return f.renewLease(ctx, n)
}

// newLease is node n's lease as the kubelet writes it: held by the node,
// owned by the Node so it goes when the Node does.
func newLease(cfg *Config, n *simNode, uid types.UID, now time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.name, Namespace: corev1.NamespaceNodeLease}}
	setLeaseSpec(cfg, n, uid, l, now)
	return l
}

func setLeaseSpec(cfg *Config, n *simNode, uid types.UID, l *coordinationv1.Lease, now time.Time) {
	l.Spec.HolderIdentity = ptr.To(n.name)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(cfg.LeaseDuration / time.Second))
	l.Spec.RenewTime = &metav1.MicroTime{Time: now}
	if len(l.OwnerReferences) == 0 && uid != "" {
		l.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: n.name, UID: uid}}
	}
}

// renewLease writes a fresh renewTime: an update of the lease as last
// written, a read only when that is stale, a create when it is missing.
func (f *Fleet) renewLease(ctx context.Context, n *simNode) error {
	leases := f.cfg.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	n.mu.Lock()
	last, uid := n.lease, n.uid
	n.mu.Unlock()
	now := f.cfg.Clock.Now()
	var out *coordinationv1.Lease
	var err error
	if last != nil {
		l := last.DeepCopy()
		setLeaseSpec(&f.cfg, n, uid, l, now)
		out, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if last == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		var cur *coordinationv1.Lease
		cur, err = leases.Get(ctx, n.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out, err = leases.Create(ctx, newLease(&f.cfg, n, uid, now), metav1.CreateOptions{})
		case err == nil:
			setLeaseSpec(&f.cfg, n, uid, cur, now)
			out, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.lease = out
	n.mu.Unlock()
	f.stats.leaseRenewals.Add(1)
	return nil
}

// syncStatus posts node n's status if it differs from the API's, or if
// StatusReportFrequency has passed since the last post.
func (f *Fleet) syncStatus(ctx context.Context, n *simNode) error {
	var node *corev1.Node
	if obj, ok, _ := f.nodeInformer.GetStore().GetByKey(n.name); ok {
		node = obj.(*corev1.Node)
	} else {
		var err error
		if node, err = f.cfg.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				f.nodeGone(n)
				return nil
			}
			return err
		}
	}
	now := f.cfg.Clock.Now()
	want := nodeStatus(&f.cfg, n, node.Status, now)
	n.mu.Lock()
	due := n.forcePost || now.Sub(n.lastPost) >= f.cfg.StatusReportFrequency
	n.mu.Unlock()
	if !due && !statusChanged(&node.Status, &want) {
		return nil
	}
	out := node.DeepCopy()
	out.Status = want
	if _, err := f.cfg.Client.CoreV1().Nodes().UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			f.nodeGone(n)
			return nil
		}
		return fmt.Errorf("post status of %s: %w", n.name, err)
	}
	n.mu.Lock()
	n.lastPost, n.forcePost = now, false
	n.mu.Unlock()
	f.stats.statusPosts.Add(1)
	return nil
}

// nodeGone retires a node whose Node was deleted. A kubelet registers only
// when it starts, so a deleted node stays away until the fleet restarts.
func (f *Fleet) nodeGone(n *simNode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.registered && !n.gone {
		f.cfg.Logger.Info("node deleted; it no longer renews its lease or posts status", "node", n.name)
	}
	n.gone = true
}
