package plugins

import "github.com/rudder-dev/rudder/internal/scheduler/framework"

// Registry returns every in-tree plugin's factory by name. It is a
// literal: adding a plugin means adding a line here.
func Registry() map[string]framework.Factory {
	return map[string]framework.Factory{
		PrioritySortName:                    NewPrioritySort,
		SchedulingGatesName:                 NewSchedulingGates,
		NodeUnschedulableName:               NewNodeUnschedulable,
		NodeNameName:                        NewNodeName,
		NodePortsName:                       NewNodePorts,
		NodeResourcesFitName:                NewNodeResourcesFit,
		NodeResourcesBalancedAllocationName: NewNodeResourcesBalancedAllocation,
		ImageLocalityName:                   NewImageLocality,
		NodeAffinityName:                    NewNodeAffinity,
		TaintTolerationName:                 NewTaintToleration,
		PodTopologySpreadName:               NewPodTopologySpread,
		InterPodAffinityName:                NewInterPodAffinity,
		VolumeBindingName:                   NewVolumeBinding,
		VolumeRestrictionsName:              NewVolumeRestrictions,
		VolumeZoneName:                      NewVolumeZone,
		NodeVolumeLimitsName:                NewNodeVolumeLimits,
		DefaultPreemptionName:               NewDefaultPreemption,
		DefaultBinderName:                   NewDefaultBinder,
	}
}
