package plugins

import "github.com/rudder-dev/rudder/internal/scheduler/framework"

// Skip statuses, one per plugin, shared by every cycle. PreFilter and
// PreScore return Skip for most pods (no ports, no volumes, no affinity),
// several times a cycle; a fresh status each time is garbage the
// collector pays for. Sharing is safe because a status is read-only once
// it names its plugin: WithPlugin with the same name does not write it
// (see framework.Status), and the framework only tests Skip with IsSkip.
var (
	skipBalancedAllocation = sharedSkip(NodeResourcesBalancedAllocationName)
	skipImageLocality      = sharedSkip(ImageLocalityName)
	skipInterPodAffinity   = sharedSkip(InterPodAffinityName)
	skipNodeAffinity       = sharedSkip(NodeAffinityName)
	skipNodeName           = sharedSkip(NodeNameName)
	skipNodePorts          = sharedSkip(NodePortsName)
	skipNodeVolumeLimits   = sharedSkip(NodeVolumeLimitsName)
	skipPodTopologySpread  = sharedSkip(PodTopologySpreadName)
	skipVolumeBinding      = sharedSkip(VolumeBindingName)
	skipVolumeRestrictions = sharedSkip(VolumeRestrictionsName)
	skipVolumeZone         = sharedSkip(VolumeZoneName)
)

func sharedSkip(plugin string) *framework.Status {
	return framework.NewStatus(framework.Skip).WithPlugin(plugin)
}
