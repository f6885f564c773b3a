package plugins

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// VolumeZoneName is the name of the VolumeZone plugin.
const VolumeZoneName = "VolumeZone"

const vzReasonConflict = "node(s) had no available volume zone"

// vzTopologyLabels are the PV labels that pin a volume to zones or
// regions; beta labels on a PV also match GA labels on a node.
var vzTopologyLabels = []string{
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
}

// VolumeZone keeps pods with bound PersistentVolumes in the zones and
// regions the volumes' labels name (a label value may list several,
// separated by "__"). Nodes without any zone or region label fit (single
// zone clusters). PV node affinity is VolumeBinding's check; unbound
// claims of WaitForFirstConsumer classes are VolumeBinding's too.
type VolumeZone struct {
	pvLister  corelisters.PersistentVolumeLister
	pvcLister corelisters.PersistentVolumeClaimLister
	scLister  storagelisters.StorageClassLister
}

var (
	_ framework.PreFilterPlugin   = (*VolumeZone)(nil)
	_ framework.FilterPlugin      = (*VolumeZone)(nil)
	_ framework.EnqueueExtensions = (*VolumeZone)(nil)
)

// NewVolumeZone builds the plugin; it takes no args.
func NewVolumeZone(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	f := h.SharedInformerFactory()
	return &VolumeZone{
		pvLister:  f.Core().V1().PersistentVolumes().Lister(),
		pvcLister: f.Core().V1().PersistentVolumeClaims().Lister(),
		scLister:  f.Storage().V1().StorageClasses().Lister(),
	}, nil
}

func (pl *VolumeZone) Name() string { return VolumeZoneName }

// EventsToRegister: a WaitForFirstConsumer class appearing, a node
// appearing or changing labels, a claim appearing or getting bound, a
// volume appearing or changing labels.
func (pl *VolumeZone) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.StorageClassResource, ActionType: framework.Add}},
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeLabel | framework.UpdateNodeTaint}},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeClaimResource, ActionType: framework.Add | framework.Update}, QueueingHintFn: vbHintClaimOfPod},
		{Event: framework.ClusterEvent{Resource: framework.PersistentVolumeResource, ActionType: framework.Add | framework.Update}},
	}, nil
}

const vzStateKey framework.StateKey = "PreFilter" + VolumeZoneName

// vzTopology is one zone/region label of one of the pod's PVs.
type vzTopology struct {
	pv     string
	key    string
	values sets.Set[string]
}

type vzState struct{ topologies []vzTopology }

func (s *vzState) Clone() framework.StateData { return s }

// PreFilter collects the zone/region labels of the pod's bound PVs; Skip
// when there are none.
func (pl *VolumeZone) PreFilter(ctx context.Context, cs *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	tops, st := pl.vzTopologies(ctx, pod)
	if !st.IsSuccess() {
		return nil, st
	}
	if len(tops) == 0 {
		return nil, skipVolumeZone
	}
	cs.Write(vzStateKey, &vzState{topologies: tops})
	return nil, nil
}

func (pl *VolumeZone) PreFilterExtensions() framework.PreFilterExtensions { return nil }

func vzLookupStatus(err error) *framework.Status {
	if apierrors.IsNotFound(err) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	return framework.AsStatus(err)
}

func (pl *VolumeZone) vzTopologies(ctx context.Context, pod *corev1.Pod) ([]vzTopology, *framework.Status) {
	var out []vzTopology
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		if name == "" {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no name")
		}
		pvc, err := pl.pvcLister.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			return nil, vzLookupStatus(err)
		}
		if pvc.Spec.VolumeName == "" {
			class := vbClaimClass(pvc)
			if class == "" {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolumeClaim had no pv name and storageClass name")
			}
			sc, err := pl.scLister.Get(class)
			if err != nil {
				return nil, vzLookupStatus(err)
			}
			if sc.VolumeBindingMode == nil {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("VolumeBindingMode not set for StorageClass %q", class))
			}
			if *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
				continue
			}
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "PersistentVolume had no name")
		}
		pv, err := pl.pvLister.Get(pvc.Spec.VolumeName)
		if err != nil {
			return nil, vzLookupStatus(err)
		}
		for _, key := range vzTopologyLabels {
			value, ok := pv.Labels[key]
			if !ok {
				continue
			}
			values, err := vzZones(value)
			if err != nil {
				slog.InfoContext(ctx, "ignoring unparsable PV topology label", "pv", pv.Name, "label", key+"="+value, "err", err)
				continue
			}
			out = append(out, vzTopology{pv: pv.Name, key: key, values: values})
		}
	}
	return out, nil
}

// vzZones splits a multi-zone label value ("a__b").
func vzZones(value string) (sets.Set[string], error) {
	out := sets.New[string]()
	for _, z := range strings.Split(value, "__") {
		z = strings.TrimSpace(z)
		if z == "" {
			return nil, fmt.Errorf("%q separated list (%q) must not contain an empty string", "__", value)
		}
		out.Insert(z)
	}
	return out, nil
}

func (pl *VolumeZone) Filter(ctx context.Context, cs *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, ok := cs.Read(vzStateKey).(*vzState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", vzStateKey))
	}
	node := ni.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("node not found"))
	}
	zoned := false
	for _, k := range vzTopologyLabels {
		if _, ok := node.Labels[k]; ok {
			zoned = true
			break
		}
	}
	if !zoned {
		return nil
	}
	for _, t := range s.topologies {
		v, ok := node.Labels[t.key]
		if !ok {
			v, ok = node.Labels[vzGALabel(t.key)]
		}
		if !ok || !t.values.Has(v) {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, vzReasonConflict)
		}
	}
	return nil
}

func vzGALabel(key string) string {
	switch key {
	case corev1.LabelFailureDomainBetaZone:
		return corev1.LabelTopologyZone
	case corev1.LabelFailureDomainBetaRegion:
		return corev1.LabelTopologyRegion
	}
	return key
}
