package plugins

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// VolumeRestrictionsName is the name of the VolumeRestrictions plugin.
const VolumeRestrictionsName = "VolumeRestrictions"

// Reasons, as upstream words them.
const (
	vrReasonDiskConflict = "node(s) had no available disk"
	vrReasonRWOPConflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

// VolumeRestrictions rejects placements that would share a volume in a way
// the volume does not allow:
//
//   - a ReadWriteOncePod claim already used by a scheduled pod (anywhere:
//     the claim allows one pod in the cluster). Preemption can help, so
//     the status is Unschedulable.
//   - legacy in-tree disks on the same node: the same GCE PD unless every
//     mount is read-only, the same AWS EBS volume at all, the same Ceph
//     RBD image (overlapping monitors, same pool and image) or iSCSI IQN
//     unless every mount is read-only.
type VolumeRestrictions struct {
	h         framework.Handle
	pvcLister corelisters.PersistentVolumeClaimLister
}

var (
	_ framework.PreFilterPlugin     = (*VolumeRestrictions)(nil)
	_ framework.FilterPlugin        = (*VolumeRestrictions)(nil)
	_ framework.PreFilterExtensions = (*VolumeRestrictions)(nil)
	_ framework.EnqueueExtensions   = (*VolumeRestrictions)(nil)
)

// NewVolumeRestrictions builds the plugin; it takes no args.
func NewVolumeRestrictions(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &VolumeRestrictions{h: h, pvcLister: h.SharedInformerFactory().Core().V1().PersistentVolumeClaims().Lister()}, nil
}

func (pl *VolumeRestrictions) Name() string { return VolumeRestrictionsName }

// EventsToRegister: a scheduled pod leaving releases its volumes; a new
// node has no conflicting mounts; a claim appearing lets PreFilter read
// its access modes.
func (pl *VolumeRestrictions) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPodResource, ActionType: framework.Delete}, QueueingHintFn: vrHintPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaimResource, ActionType: framework.Add}, QueueingHintFn: vbHintClaimOfPod},
	}, nil
}

// vrHintPodDeleted queues the pod when the deleted pod shared a disk or a
// claim with it.
func vrHintPodDeleted(pod *corev1.Pod, oldObj, _ interface{}) (framework.QueueingHint, error) {
	deleted, ok := oldObj.(*corev1.Pod)
	if !ok {
		return framework.Queue, fmt.Errorf("unexpected object %T", oldObj)
	}
	if deleted.Namespace != pod.Namespace && !vrNeedsDiskCheck(pod) {
		return framework.QueueSkip, nil
	}
	for i := range pod.Spec.Volumes {
		if vrConflicts(&pod.Spec.Volumes[i], deleted) {
			return framework.Queue, nil
		}
	}
	if deleted.Namespace == pod.Namespace {
		mine := vbClaimNames(pod)
		for _, c := range vbClaimNames(deleted) {
			if slices.Contains(mine, c) {
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

const vrStateKey framework.StateKey = "PreFilter" + VolumeRestrictionsName

// vrState: the pod's ReadWriteOncePod claims and how many scheduled pods
// use them.
type vrState struct {
	namespace string
	rwop      sets.Set[string]
	conflicts int
}

func (s *vrState) Clone() framework.StateData {
	c := *s
	return &c
}

func (s *vrState) update(pi *framework.PodInfo, d int) {
	if pi.Pod.Namespace != s.namespace {
		return
	}
	for _, v := range pi.Pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && s.rwop.Has(v.PersistentVolumeClaim.ClaimName) {
			s.conflicts += d
		}
	}
}

// PreFilter finds the pod's ReadWriteOncePod claims already in use. It
// Skips pods with neither such claims in use nor legacy disks.
func (pl *VolumeRestrictions) PreFilter(_ context.Context, cs *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	s := &vrState{namespace: pod.Namespace, rwop: sets.New[string]()}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(v.PersistentVolumeClaim.ClaimName)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
			}
			return nil, framework.AsStatus(err)
		}
		if slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOncePod) {
			s.rwop.Insert(pvc.Name)
		}
	}
	used := pl.h.Snapshot().UsedPVCSet
	for name := range s.rwop {
		if _, ok := used[pod.Namespace+"/"+name]; ok {
			// At most one pod can use a ReadWriteOncePod claim.
			s.conflicts++
		}
	}
	if !vrNeedsDiskCheck(pod) && s.conflicts == 0 {
		return nil, skipVolumeRestrictions
	}
	cs.Write(vrStateKey, s)
	return nil, nil
}

func (pl *VolumeRestrictions) PreFilterExtensions() framework.PreFilterExtensions { return pl }

func (pl *VolumeRestrictions) AddPod(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, add *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, ok := cs.Read(vrStateKey).(*vrState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("cannot read %q from cycleState", vrStateKey))
	}
	s.update(add, 1)
	return nil
}

func (pl *VolumeRestrictions) RemovePod(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, rm *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	s, ok := cs.Read(vrStateKey).(*vrState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("cannot read %q from cycleState", vrStateKey))
	}
	s.update(rm, -1)
	return nil
}

func (pl *VolumeRestrictions) Filter(_ context.Context, cs *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !vrIsDisk(v) {
			continue
		}
		for _, ep := range ni.Pods {
			if vrConflicts(v, ep.Pod) {
				return framework.NewStatus(framework.Unschedulable, vrReasonDiskConflict)
			}
		}
	}
	s, ok := cs.Read(vrStateKey).(*vrState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("cannot read %q from cycleState", vrStateKey))
	}
	if s.conflicts > 0 {
		return framework.NewStatus(framework.Unschedulable, vrReasonRWOPConflict)
	}
	return nil
}

func vrIsDisk(v *corev1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

func vrNeedsDiskCheck(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return vrIsDisk(&v) })
}

// vrConflicts reports whether v cannot be mounted next to pod's volumes.
func vrConflicts(v *corev1.Volume, pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		e := &pod.Spec.Volumes[i]
		if d, ed := v.GCEPersistentDisk, e.GCEPersistentDisk; d != nil && ed != nil &&
			d.PDName == ed.PDName && !(d.ReadOnly && ed.ReadOnly) {
			return true
		}
		if d, ed := v.AWSElasticBlockStore, e.AWSElasticBlockStore; d != nil && ed != nil && d.VolumeID == ed.VolumeID {
			return true
		}
		if d, ed := v.ISCSI, e.ISCSI; d != nil && ed != nil && d.IQN == ed.IQN && !(d.ReadOnly && ed.ReadOnly) {
			return true
		}
		if d, ed := v.RBD, e.RBD; d != nil && ed != nil && d.RBDPool == ed.RBDPool && d.RBDImage == ed.RBDImage &&
			!(d.ReadOnly && ed.ReadOnly) && slices.ContainsFunc(d.CephMonitors, func(m string) bool { return slices.Contains(ed.CephMonitors, m) }) {
			return true
		}
	}
	return false
}
