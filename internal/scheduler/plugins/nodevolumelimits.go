package plugins

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodeVolumeLimitsName is the name of the NodeVolumeLimits plugin.
const NodeVolumeLimitsName = "NodeVolumeLimits"

const nvlReasonMaxVolumeCount = "node(s) exceed max volume count"

// nvlLegacyLimitPrefix is how nodes used to report a CSI driver's attach
// limit in status.allocatable; CSINode's allocatable count wins.
const nvlLegacyLimitPrefix = "attachable-volumes-csi-"

// NodeVolumeLimits keeps a node's attached CSI volumes per driver within
// what the driver can attach there (CSINode spec.drivers[].allocatable
// .count). A volume counts once per node however many pods use it; an
// unbound claim counts as a new volume of its class's provisioner.
// In-tree volumes migrated to CSI are not translated (not counted).
type NodeVolumeLimits struct {
	csiNodeLister storagelisters.CSINodeLister
	pvLister      corelisters.PersistentVolumeLister
	pvcLister     corelisters.PersistentVolumeClaimLister
	scLister      storagelisters.StorageClassLister
	// unboundPrefix makes the stand-in handle of an unbound claim unique
	// to this scheduler, so it never equals a real volume handle.
	unboundPrefix string
}

var (
	_ framework.PreFilterPlugin   = (*NodeVolumeLimits)(nil)
	_ framework.FilterPlugin      = (*NodeVolumeLimits)(nil)
	_ framework.EnqueueExtensions = (*NodeVolumeLimits)(nil)
)

// NewNodeVolumeLimits builds the plugin; it takes no args.
func NewNodeVolumeLimits(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	f := h.SharedInformerFactory()
	return &NodeVolumeLimits{
		csiNodeLister: f.Storage().V1().CSINodes().Lister(),
		pvLister:      f.Core().V1().PersistentVolumes().Lister(),
		pvcLister:     f.Core().V1().PersistentVolumeClaims().Lister(),
		scLister:      f.Storage().V1().StorageClasses().Lister(),
		unboundPrefix: utilrand.String(32),
	}, nil
}

func (pl *NodeVolumeLimits) Name() string { return NodeVolumeLimitsName }

// EventsToRegister: a CSINode appearing (new limits), a scheduled pod
// with claims leaving (fewer attachments), a claim appearing.
func (pl *NodeVolumeLimits) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.CSINodeResource, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.AssignedPodResource, ActionType: framework.Delete}, QueueingHintFn: nvlHintPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaimResource, ActionType: framework.Add}, QueueingHintFn: vbHintClaimOfPod},
	}, nil
}

func nvlHintPodDeleted(_ *corev1.Pod, oldObj, _ interface{}) (framework.QueueingHint, error) {
	deleted, ok := oldObj.(*corev1.Pod)
	if !ok {
		return framework.Queue, fmt.Errorf("unexpected object %T", oldObj)
	}
	if deleted.Spec.NodeName != "" && len(vbClaimNames(deleted)) > 0 {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

const nvlStateKey framework.StateKey = "PreFilter" + NodeVolumeLimitsName

// nvlState holds the pod's CSI volumes: unique name ("driver/handle") to
// driver. They do not depend on the node.
type nvlState struct{ volumes map[string]string }

func (s *nvlState) Clone() framework.StateData { return s }

// PreFilter resolves the pod's claims to CSI volumes once; Skip when the
// pod uses no claims.
func (pl *NodeVolumeLimits) PreFilter(_ context.Context, cs *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	if len(vbClaimNames(pod)) == 0 {
		return nil, skipNodeVolumeLimits
	}
	vols := map[string]string{}
	if err := pl.nvlVolumes(pod, true, vols); err != nil {
		if apierrors.IsNotFound(err) {
			// The pod cannot run until the claim exists.
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		return nil, framework.AsStatus(err)
	}
	cs.Write(nvlStateKey, &nvlState{volumes: vols})
	return nil, nil
}

func (pl *NodeVolumeLimits) PreFilterExtensions() framework.PreFilterExtensions { return nil }

func (pl *NodeVolumeLimits) Filter(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, ok := cs.Read(nvlStateKey).(*nvlState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", nvlStateKey))
	}
	if len(s.volumes) == 0 {
		return nil
	}
	node := ni.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	csiNode, _ := pl.csiNodeLister.Get(node.Name)
	limits := nvlLimits(node, csiNode)
	if len(limits) == 0 {
		return nil
	}
	attached := map[string]string{}
	for _, ep := range ni.Pods {
		if err := pl.nvlVolumes(ep.Pod, false, attached); err != nil {
			return framework.AsStatus(err)
		}
	}
	used := map[string]int{}
	for _, driver := range attached {
		used[driver]++
	}
	added := map[string]int{}
	for name, driver := range s.volumes {
		if _, ok := attached[name]; !ok {
			added[driver]++
		}
	}
	for driver, n := range added {
		if limit, ok := limits[driver]; ok && used[driver]+n > limit {
			return framework.NewStatus(framework.Unschedulable, nvlReasonMaxVolumeCount)
		}
	}
	return nil
}

// nvlLimits returns the node's attach limit per CSI driver.
func nvlLimits(node *corev1.Node, csiNode *storagev1.CSINode) map[string]int {
	out := map[string]int{}
	for name, q := range node.Status.Allocatable {
		if driver, ok := strings.CutPrefix(string(name), nvlLegacyLimitPrefix); ok {
			out[driver] = int(q.Value())
		}
	}
	if csiNode != nil {
		for _, d := range csiNode.Spec.Drivers {
			if d.Allocatable != nil && d.Allocatable.Count != nil {
				out[d.Name] = int(*d.Allocatable.Count)
			}
		}
	}
	return out
}

// nvlVolumes adds the pod's CSI volumes to out. A missing claim is an
// error for the pod being scheduled and skipped for a pod already placed.
func (pl *NodeVolumeLimits) nvlVolumes(pod *corev1.Pod, incoming bool, out map[string]string) error {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		var name string
		ephemeral := false
		switch {
		case v.PersistentVolumeClaim != nil:
			name = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			name, ephemeral = vbEphemeralClaimName(pod, v), true
		default:
			continue
		}
		if name == "" {
			return fmt.Errorf("PersistentVolumeClaim had no name")
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if incoming {
				return fmt.Errorf("looking up PVC %s/%s: %w", pod.Namespace, name, err)
			}
			continue
		}
		if ephemeral {
			if err := vbEphemeralOwned(pod, pvc); err != nil {
				return err
			}
		}
		if driver, handle := pl.nvlDriver(pvc); driver != "" && handle != "" {
			out[driver+"/"+handle] = driver
		}
	}
	return nil
}

// nvlDriver returns the claim's CSI driver and volume handle; for an
// unbound claim (or a missing PV), its class's provisioner and a handle
// unique to the claim.
func (pl *NodeVolumeLimits) nvlDriver(pvc *corev1.PersistentVolumeClaim) (string, string) {
	if pvc.Spec.VolumeName != "" {
		if pv, err := pl.pvLister.Get(pvc.Spec.VolumeName); err == nil {
			if pv.Spec.CSI == nil {
				return "", ""
			}
			return pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
		}
	}
	class := vbClaimClass(pvc)
	if class == "" {
		// Immediate binding: bound before scheduling, safe to skip.
		return "", ""
	}
	sc, err := pl.scLister.Get(class)
	if err != nil {
		return "", ""
	}
	return sc.Provisioner, pl.unboundPrefix + "-" + pvc.Namespace + "/" + pvc.Name
}
