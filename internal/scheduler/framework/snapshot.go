package framework

import "fmt"

// Snapshot is a point-in-time view of the nodes for one scheduling cycle.
// The scheduler cache updates one Snapshot in place between cycles,
// copying only node infos whose Generation changed.
type Snapshot struct {
	NodeInfoMap map[string]*NodeInfo
	// NodeInfoList holds nodes in a stable order (by zone, round-robin,
	// as upstream, so that the first nodes examined spread over zones).
	NodeInfoList []*NodeInfo
	// HavePodsWithAffinityList and HavePodsWithRequiredAntiAffinityList
	// are the nodes with such pods, for InterPodAffinity.
	HavePodsWithAffinityList             []*NodeInfo
	HavePodsWithRequiredAntiAffinityList []*NodeInfo
	// UsedPVCSet holds "namespace/claim" for claims used by any pod.
	UsedPVCSet map[string]struct{}
	// Generation is the highest NodeInfo generation copied.
	Generation int64
}

// NewEmptySnapshot returns an empty snapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{NodeInfoMap: map[string]*NodeInfo{}, UsedPVCSet: map[string]struct{}{}}
}

// NewSnapshot builds a snapshot from node infos directly (for tests and
// the in-process benchmark); the list order is the given order.
func NewSnapshot(nodes ...*NodeInfo) *Snapshot {
	s := NewEmptySnapshot()
	for _, n := range nodes {
		s.NodeInfoMap[n.Name()] = n
		s.NodeInfoList = append(s.NodeInfoList, n)
		if len(n.PodsWithAffinity) > 0 {
			s.HavePodsWithAffinityList = append(s.HavePodsWithAffinityList, n)
		}
		if len(n.PodsWithRequiredAntiAffinity) > 0 {
			s.HavePodsWithRequiredAntiAffinityList = append(s.HavePodsWithRequiredAntiAffinityList, n)
		}
		for k := range n.PVCRefCounts {
			s.UsedPVCSet[k] = struct{}{}
		}
		s.Generation = max(s.Generation, n.Generation)
	}
	return s
}

// List returns the nodes.
func (s *Snapshot) List() []*NodeInfo { return s.NodeInfoList }

// Get returns one node's info.
func (s *Snapshot) Get(name string) (*NodeInfo, error) {
	if n, ok := s.NodeInfoMap[name]; ok && n.Node() != nil {
		return n, nil
	}
	return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
}

// NumNodes counts the nodes.
func (s *Snapshot) NumNodes() int { return len(s.NodeInfoList) }
