package plugins

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// VolumeBindingName is the name of the VolumeBinding plugin.
const VolumeBindingName = "VolumeBinding"

// Reasons, as upstream words them.
const (
	vbReasonBindConflict     = "node(s) didn't find available persistent volumes to bind"
	vbReasonNodeConflict     = "node(s) had volume node affinity conflict"
	vbReasonPVNotExist       = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	vbReasonUnboundImmediate = "pod has unbound immediate PersistentVolumeClaims"
)

// Annotations of the PV/PVC binding protocol shared with the PV
// controller and external provisioners.
const (
	// vbAnnSelectedNode on a PVC hands provisioning to the provisioner of
	// its class, for that node.
	vbAnnSelectedNode      = "volume.kubernetes.io/selected-node"
	vbAnnBindCompleted     = "pv.kubernetes.io/bind-completed"
	vbAnnBoundByController = "pv.kubernetes.io/bound-by-controller"
	vbNoProvisioner        = "kubernetes.io/no-provisioner"
	vbDefaultBindTimeout   = 600 * time.Second
	// vbRecheckInterval bounds how long PreBind waits between checks when
	// no PV/PVC event arrives (events wake it at once).
	vbRecheckInterval = time.Second
)

// VolumeBinding places pods with PersistentVolumeClaims where their
// volumes can be: bound claims' PVs must allow the node (PV node
// affinity); unbound claims of a WaitForFirstConsumer class need, on the
// node, either an available PV that fits (size, access modes, volume
// mode, class, selector, node affinity) or a class with a provisioner
// whose allowed topologies include the node. Claims of immediate classes
// must already be bound.
//
// The binding itself happens after a node is chosen: Reserve records, in
// memory, the PVs chosen and the claims to provision (so the next cycles
// do not pick the same PV before the API catches up); PreBind writes them
// (PV.spec.claimRef and PVC.spec.volumeName for a static PV; the
// selected-node annotation on the PVC for provisioning) and waits, up to
// bindTimeoutSeconds, for the PV controller to report the claims Bound.
type VolumeBinding struct {
	client      kubernetes.Interface
	pvcLister   corelisters.PersistentVolumeClaimLister
	pvLister    corelisters.PersistentVolumeLister
	scLister    storagelisters.StorageClassLister
	bindTimeout time.Duration
	recheck     time.Duration
	pvs         *vbAssumeCache[*corev1.PersistentVolume]
	pvcs        *vbAssumeCache[*corev1.PersistentVolumeClaim]
	// changed wakes PreBind waiters on any PV or PVC event.
	changed vbSignal
}

var (
	_ framework.PreFilterPlugin   = (*VolumeBinding)(nil)
	_ framework.FilterPlugin      = (*VolumeBinding)(nil)
	_ framework.ReservePlugin     = (*VolumeBinding)(nil)
	_ framework.PreBindPlugin     = (*VolumeBinding)(nil)
	_ framework.EnqueueExtensions = (*VolumeBinding)(nil)
)

// NewVolumeBinding builds the plugin. args is nil or
// *configv1.VolumeBindingArgs (bindTimeoutSeconds defaults to 600).
func NewVolumeBinding(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	timeout := vbDefaultBindTimeout
	switch a := args.(type) {
	case nil:
	case *configv1.VolumeBindingArgs:
		if a != nil && a.BindTimeoutSeconds != nil {
			if *a.BindTimeoutSeconds < 0 {
				return nil, fmt.Errorf("bindTimeoutSeconds: Invalid value: %d: invalid BindTimeoutSeconds, should not be a negative value", *a.BindTimeoutSeconds)
			}
			timeout = time.Duration(*a.BindTimeoutSeconds) * time.Second
		}
	default:
		return nil, fmt.Errorf("want args to be of type VolumeBindingArgs, got %T", args)
	}
	f := h.SharedInformerFactory()
	pl := &VolumeBinding{
		client:      h.ClientSet(),
		pvcLister:   f.Core().V1().PersistentVolumeClaims().Lister(),
		pvLister:    f.Core().V1().PersistentVolumes().Lister(),
		scLister:    f.Storage().V1().StorageClasses().Lister(),
		bindTimeout: timeout,
		recheck:     vbRecheckInterval,
		pvs:         newVBAssumeCache[*corev1.PersistentVolume](),
		pvcs:        newVBAssumeCache[*corev1.PersistentVolumeClaim](),
	}
	wake := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(interface{}) { pl.changed.notify() },
		UpdateFunc: func(interface{}, interface{}) { pl.changed.notify() },
		DeleteFunc: func(interface{}) { pl.changed.notify() },
	}
	for _, inf := range []cache.SharedIndexInformer{f.Core().V1().PersistentVolumeClaims().Informer(), f.Core().V1().PersistentVolumes().Informer()} {
		if _, err := inf.AddEventHandler(wake); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

func (pl *VolumeBinding) Name() string { return VolumeBindingName }

// EventsToRegister: claims and volumes appearing or changing, classes
// appearing or changing (binding mode, topologies), and nodes appearing
// or changing labels (PV node affinity, allowed topologies).
func (pl *VolumeBinding) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClassResource, ActionType: framework.Add | framework.Update}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaimResource, ActionType: framework.Add | framework.Update}, QueueingHintFn: vbHintClaimOfPod},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeResource, ActionType: framework.Add | framework.Update}, QueueingHintFn: vbHintPodHasClaims},
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeLabel | framework.UpdateNodeTaint}},
	}, nil
}

// vbHintClaimOfPod queues the pod when the event's claim is one of its.
func vbHintClaimOfPod(pod *corev1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
	pvc, ok := newObj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return framework.Queue, fmt.Errorf("unexpected object %T", newObj)
	}
	if pvc.Namespace == pod.Namespace && slices.Contains(vbClaimNames(pod), pvc.Name) {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

func vbHintPodHasClaims(pod *corev1.Pod, _, _ interface{}) (framework.QueueingHint, error) {
	if len(vbClaimNames(pod)) > 0 {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// ---- cycle state ----

const vbStateKey framework.StateKey = VolumeBindingName

type vbBinding struct {
	pvc *corev1.PersistentVolumeClaim
	pv  *corev1.PersistentVolume
}

// vbPodVolumes is what the pod's unbound claims get on one node.
type vbPodVolumes struct {
	node      *corev1.Node
	static    []vbBinding
	provision []*corev1.PersistentVolumeClaim
}

// vbState is written by PreFilter, filled per node by Filter (under mu:
// Filter runs in parallel), and read by Reserve and PreBind. Clone
// returns the same state, as upstream: later phases only touch the
// chosen node's entry.
type vbState struct {
	bound    []*corev1.PersistentVolumeClaim
	boundPVs []*corev1.PersistentVolume // nil where the PV does not exist
	// delayed are the unbound WaitForFirstConsumer claims, smallest
	// request first so that the smallest claims get the smallest PVs.
	delayed    []*corev1.PersistentVolumeClaim
	pvsByClass map[string][]*corev1.PersistentVolume

	mu       sync.Mutex
	byNode   map[string]*vbPodVolumes
	allBound bool
}

func (s *vbState) Clone() framework.StateData { return s }

func vbReadState(cs *framework.CycleState) (*vbState, error) {
	s, ok := cs.Read(vbStateKey).(*vbState)
	if !ok {
		return nil, fmt.Errorf("reading %q from cycle state: not found", vbStateKey)
	}
	return s, nil
}

// PreFilter sorts the pod's claims into bound, unbound delayed and
// unbound immediate, rejecting the pod while immediate claims are
// unbound. Pods without claims Skip.
func (pl *VolumeBinding) PreFilter(_ context.Context, cs *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	claims, err := pl.vbPodClaims(pod)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(claims) == 0 {
		cs.Write(vbStateKey, &vbState{allBound: true})
		return nil, skipVolumeBinding
	}
	s := &vbState{byNode: map[string]*vbPodVolumes{}, pvsByClass: map[string][]*corev1.PersistentVolume{}}
	immediate := false
	for _, pvc := range claims {
		if vbClaimFullyBound(pvc) {
			s.bound = append(s.bound, pvc)
			pv, _ := pl.vbGetPV(pvc.Spec.VolumeName)
			s.boundPVs = append(s.boundPVs, pv)
			continue
		}
		delay, err := pl.vbDelayBinding(pvc)
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		// A claim naming its volume but not yet bound is the PV
		// controller's to finish, as for immediate claims.
		if delay && pvc.Spec.VolumeName == "" {
			s.delayed = append(s.delayed, pvc)
		} else {
			immediate = true
		}
	}
	if immediate {
		// The PV controller binds these; the claim update requeues the pod.
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, vbReasonUnboundImmediate)
	}
	slices.SortStableFunc(s.delayed, func(a, b *corev1.PersistentVolumeClaim) int {
		qa, qb := a.Spec.Resources.Requests[corev1.ResourceStorage], b.Spec.Resources.Requests[corev1.ResourceStorage]
		return qa.Cmp(qb)
	})
	for _, pvc := range s.delayed {
		class := vbClaimClass(pvc)
		if _, ok := s.pvsByClass[class]; !ok {
			pvs, err := pl.vbListPVs(class)
			if err != nil {
				return nil, framework.AsStatus(err)
			}
			s.pvsByClass[class] = pvs
		}
	}
	cs.Write(vbStateKey, s)
	return nil, nil
}

func (pl *VolumeBinding) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// vbPodClaims returns the pod's claims (through the assumed ones), with
// upstream's errors for missing, lost, deleting or foreign claims.
func (pl *VolumeBinding) vbPodClaims(pod *corev1.Pod) ([]*corev1.PersistentVolumeClaim, error) {
	var out []*corev1.PersistentVolumeClaim
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		var name string
		ephemeral := false
		switch {
		case vol.PersistentVolumeClaim != nil:
			name = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			name, ephemeral = vbEphemeralClaimName(pod, vol), true
		default:
			continue
		}
		if slices.ContainsFunc(out, func(c *corev1.PersistentVolumeClaim) bool { return c.Name == name }) {
			continue
		}
		pvc, err := pl.vbGetPVC(pod.Namespace, name)
		if err != nil {
			if ephemeral && apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name)
			}
			return nil, err
		}
		if pvc.Status.Phase == corev1.ClaimLost {
			return nil, fmt.Errorf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", pvc.Name, pvc.Spec.VolumeName)
		}
		if pvc.DeletionTimestamp != nil {
			return nil, fmt.Errorf("persistentvolumeclaim %q is being deleted", pvc.Name)
		}
		if ephemeral {
			if err := vbEphemeralOwned(pod, pvc); err != nil {
				return nil, err
			}
		}
		out = append(out, pvc)
	}
	return out, nil
}

func (pl *VolumeBinding) vbGetPVC(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := pl.pvcLister.PersistentVolumeClaims(ns).Get(name)
	if err != nil {
		pl.pvcs.restore(ns + "/" + name)
		return nil, err
	}
	return pl.pvcs.resolve(ns+"/"+name, pvc), nil
}

func (pl *VolumeBinding) vbGetPV(name string) (*corev1.PersistentVolume, error) {
	pv, err := pl.pvLister.Get(name)
	if err != nil {
		pl.pvs.restore(name)
		return nil, err
	}
	return pl.pvs.resolve(name, pv), nil
}

// vbListPVs lists the PVs of a class, the assumed ones as assumed.
func (pl *VolumeBinding) vbListPVs(class string) ([]*corev1.PersistentVolume, error) {
	all, err := pl.pvLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*corev1.PersistentVolume
	for _, pv := range all {
		if vbPVClass(pv) == class {
			out = append(out, pl.pvs.resolve(pv.Name, pv))
		}
	}
	return out, nil
}

// vbDelayBinding reports whether the claim's class waits for the first
// consumer. A claim without a class, or with a class that does not
// exist, binds immediately.
func (pl *VolumeBinding) vbDelayBinding(pvc *corev1.PersistentVolumeClaim) (bool, error) {
	name := vbClaimClass(pvc)
	if name == "" {
		return false, nil
	}
	sc, err := pl.scLister.Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	if sc.VolumeBindingMode == nil {
		return false, fmt.Errorf("VolumeBindingMode not set for StorageClass %q", name)
	}
	return *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer, nil
}

// Filter checks bound claims' PVs against the node, then finds PVs or
// provisioning for the unbound ones.
func (pl *VolumeBinding) Filter(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := vbReadState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	if node == nil {
		return framework.AsStatus(errors.New("node not found"))
	}
	vols, reasons, err := pl.vbFindVolumes(s, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	s.mu.Lock()
	s.byNode[node.Name] = vols
	s.mu.Unlock()
	return nil
}

func (pl *VolumeBinding) vbFindVolumes(s *vbState, node *corev1.Node) (*vbPodVolumes, []string, error) {
	vols := &vbPodVolumes{node: node}
	boundOK, pvsExist, unboundOK := true, true, true
	reasons := func() []string {
		var r []string
		if !boundOK {
			r = append(r, vbReasonNodeConflict)
		}
		if !unboundOK {
			r = append(r, vbReasonBindConflict)
		}
		if !pvsExist {
			r = append(r, vbReasonPVNotExist)
		}
		return r
	}
	for _, pv := range s.boundPVs {
		if pv == nil {
			pvsExist = false
			break
		}
		if !vbNodeAffinityOK(pv, node) {
			boundOK = false
			break
		}
	}
	if len(s.delayed) == 0 {
		return vols, reasons(), nil
	}
	var toMatch, toProvision []*corev1.PersistentVolumeClaim
	for _, pvc := range s.delayed {
		if sel, ok := pvc.Annotations[vbAnnSelectedNode]; ok {
			// Provisioning was already handed to a node.
			if sel != node.Name {
				unboundOK = false
				return vols, reasons(), nil
			}
			toProvision = append(toProvision, pvc)
		} else {
			toMatch = append(toMatch, pvc)
		}
	}
	if len(toMatch) > 0 {
		var chosen map[string]bool
		for _, pvc := range toMatch {
			pv, err := vbFindMatchingPV(pvc, s.pvsByClass[vbClaimClass(pvc)], node, chosen)
			if err != nil {
				return nil, nil, err
			}
			if pv == nil {
				unboundOK = false
				toProvision = append(toProvision, pvc)
				continue
			}
			if chosen == nil {
				chosen = map[string]bool{}
			}
			chosen[pv.Name] = true
			vols.static = append(vols.static, vbBinding{pvc: pvc, pv: pv})
		}
	}
	if len(toProvision) > 0 {
		ok, err := pl.vbCanProvision(toProvision, node)
		if err != nil {
			return nil, nil, err
		}
		unboundOK = ok
		if ok {
			vols.provision = toProvision
		}
	}
	return vols, reasons(), nil
}

// vbCanProvision reports whether every claim's class can provision a
// volume reachable from the node. (CSIStorageCapacity is not checked.)
func (pl *VolumeBinding) vbCanProvision(claims []*corev1.PersistentVolumeClaim, node *corev1.Node) (bool, error) {
	for _, pvc := range claims {
		name := vbClaimClass(pvc)
		if name == "" {
			return false, fmt.Errorf("no class for claim %q", pvc.Namespace+"/"+pvc.Name)
		}
		sc, err := pl.scLister.Get(name)
		if err != nil {
			return false, fmt.Errorf("failed to find storage class %q", name)
		}
		if sc.Provisioner == "" || sc.Provisioner == vbNoProvisioner {
			return false, nil
		}
		if !vbMatchTopology(sc.AllowedTopologies, node.Labels) {
			return false, nil
		}
	}
	return true, nil
}

// vbFindMatchingPV picks for the claim the PV pre-bound to it, or else
// the smallest available PV that fits it on the node.
func vbFindMatchingPV(pvc *corev1.PersistentVolumeClaim, pvs []*corev1.PersistentVolume, node *corev1.Node, exclude map[string]bool) (*corev1.PersistentVolume, error) {
	var sel labels.Selector
	if pvc.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(pvc.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("error creating internal label selector for claim: %s/%s: %w", pvc.Namespace, pvc.Name, err)
		}
		sel = s
	}
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	class := vbClaimClass(pvc)
	var best *corev1.PersistentVolume
	for _, pv := range pvs {
		if exclude[pv.Name] {
			continue
		}
		boundHere := vbPVBoundToClaim(pv, pvc)
		if pv.Spec.ClaimRef != nil && !boundHere {
			continue
		}
		size := pv.Spec.Capacity[corev1.ResourceStorage]
		if size.Cmp(want) < 0 || vbVolumeModeOf(pvc.Spec.VolumeMode) != vbVolumeModeOf(pv.Spec.VolumeMode) || pv.DeletionTimestamp != nil {
			continue
		}
		affinityOK := vbNodeAffinityOK(pv, node)
		if boundHere {
			// A PV pre-bound to the claim is the only candidate.
			if !affinityOK {
				return nil, nil
			}
			return pv, nil
		}
		if pv.Status.Phase != corev1.VolumeAvailable || (sel != nil && !sel.Matches(labels.Set(pv.Labels))) ||
			vbPVClass(pv) != class || !affinityOK || !vbAccessModesFit(pvc, pv) {
			continue
		}
		if best == nil {
			best = pv
		} else if bs := best.Spec.Capacity[corev1.ResourceStorage]; bs.Cmp(size) > 0 {
			best = pv
		}
	}
	return best, nil
}

func vbVolumeModeOf(m *corev1.PersistentVolumeMode) corev1.PersistentVolumeMode {
	if m == nil {
		return corev1.PersistentVolumeFilesystem
	}
	return *m
}

func vbAccessModesFit(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	for _, m := range pvc.Spec.AccessModes {
		if !slices.Contains(pv.Spec.AccessModes, m) {
			return false
		}
	}
	return true
}

func vbPVBoundToClaim(pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	return ref != nil && ref.Name == pvc.Name && ref.Namespace == pvc.Namespace && (ref.UID == "" || ref.UID == pvc.UID)
}

// ---- helpers shared by the volume plugins ----

// vbClaimNames lists the claims a pod uses, generic ephemeral ones
// included.
func vbClaimNames(pod *corev1.Pod) []string {
	var out []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			out = append(out, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			out = append(out, vbEphemeralClaimName(pod, v))
		}
	}
	return out
}

// vbEphemeralClaimName is the claim the ephemeral volume controller
// creates for a generic ephemeral volume.
func vbEphemeralClaimName(pod *corev1.Pod, v *corev1.Volume) string {
	return pod.Name + "-" + v.Name
}

func vbEphemeralOwned(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Namespace != pod.Namespace || !metav1.IsControlledBy(pvc, pod) {
		return fmt.Errorf("PVC %s/%s was not created for pod %s/%s (pod is not owner)", pvc.Namespace, pvc.Name, pod.Namespace, pod.Name)
	}
	return nil
}

// vbClaimFullyBound: the claim names its volume and the PV controller
// finished binding (annotation, or phase Bound).
func vbClaimFullyBound(pvc *corev1.PersistentVolumeClaim) bool {
	if pvc.Spec.VolumeName == "" {
		return false
	}
	_, done := pvc.Annotations[vbAnnBindCompleted]
	return done || pvc.Status.Phase == corev1.ClaimBound
}

// vbClaimClass is the claim's class name; the beta annotation wins.
func vbClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

func vbPVClass(pv *corev1.PersistentVolume) string {
	if c, ok := pv.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	return pv.Spec.StorageClassName
}

// vbNodeAffinityOK reports whether the PV's required node affinity
// admits the node.
func vbNodeAffinityOK(pv *corev1.PersistentVolume, node *corev1.Node) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return true
	}
	return vbMatchNodeSelector(pv.Spec.NodeAffinity.Required, node)
}

// vbMatchNodeSelector: the terms are ORed, a term's requirements ANDed;
// an empty term matches nothing.
func vbMatchNodeSelector(ns *corev1.NodeSelector, node *corev1.Node) bool {
	for i := range ns.NodeSelectorTerms {
		t := &ns.NodeSelectorTerms[i]
		if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
			continue
		}
		if vbMatchRequirements(t.MatchExpressions, labels.Set(node.Labels)) &&
			vbMatchRequirements(t.MatchFields, labels.Set{"metadata.name": node.Name}) {
			return true
		}
	}
	return false
}

var vbSelectorOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

func vbMatchRequirements(reqs []corev1.NodeSelectorRequirement, set labels.Set) bool {
	for _, r := range reqs {
		op, ok := vbSelectorOps[r.Operator]
		if !ok {
			return false
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil || !req.Matches(set) {
			return false
		}
	}
	return true
}

// vbMatchTopology reports whether node labels satisfy a class's allowed
// topologies (none means anywhere).
func vbMatchTopology(terms []corev1.TopologySelectorTerm, nodeLabels map[string]string) bool {
	if len(terms) == 0 {
		return true
	}
	for _, t := range terms {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			if v, has := nodeLabels[e.Key]; !has || !slices.Contains(e.Values, v) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
