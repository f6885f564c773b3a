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
	// Images holds every image name some node reports, with the state
	// the nodes' ImageStates share (read-only).
	Images map[string]*ImageState
	// imagesVersion is the cache's image index version Images copies.
	imagesVersion int64
	// Generation is the highest NodeInfo generation copied.
	Generation int64

	// The change log of NodeInfoList, for plugins that keep indexes
	// across cycles (see ChangedSince); written by the scheduler cache.
	listEpoch uint64
	updates   uint64
	log       []snapshotLogEntry
}

// snapshotLogEntries is how many recent updates ChangedSince can answer
// for; a plugin that syncs every cycle needs one.
const snapshotLogEntries = 8

type snapshotLogEntry struct {
	update    uint64
	positions []int32
}

// ListVersion identifies NodeInfoList as of one update of the snapshot.
// The zero value is older than any.
type ListVersion struct{ epoch, update uint64 }

// ListVersion is the current version of NodeInfoList.
func (s *Snapshot) ListVersion() ListVersion { return ListVersion{s.listEpoch, s.updates} }

// ChangedSince appends to dst the NodeInfoList positions whose NodeInfo
// was replaced since version v (a position may repeat) and reports true;
// every other position still holds the very NodeInfo it held at v. It
// reports false when it cannot tell (the list was rebuilt, v is too old,
// or the snapshot keeps no log, as those made by NewSnapshot): the
// caller must then compare the whole list.
func (s *Snapshot) ChangedSince(v ListVersion, dst []int32) ([]int32, bool) {
	if s.listEpoch == 0 || v.epoch != s.listEpoch || v.update > s.updates {
		return dst, false
	}
	if v.update == s.updates {
		return dst, true
	}
	// The log holds consecutive updates, the newest last.
	if len(s.log) == 0 || s.log[0].update > v.update+1 {
		return dst, false
	}
	for _, e := range s.log {
		if e.update > v.update {
			dst = append(dst, e.positions...)
		}
	}
	return dst, true
}

// ListRebuilt records that NodeInfoList was rebuilt: positions may have
// moved, so versions before it get no answer from ChangedSince.
func (s *Snapshot) ListRebuilt() {
	s.listEpoch++
	s.updates++
	for i := range s.log {
		s.log[i].positions = s.log[i].positions[:0]
	}
	s.log = s.log[:0]
}

// ListPatched records one update that replaced the NodeInfos at the
// given positions of NodeInfoList in place (none: nothing changed).
func (s *Snapshot) ListPatched(positions []int32) {
	s.updates++
	var e snapshotLogEntry
	if len(s.log) == snapshotLogEntries {
		// Reuse the oldest entry's buffer.
		e = s.log[0]
		copy(s.log, s.log[1:])
		s.log = s.log[:len(s.log)-1]
	}
	e.update = s.updates
	e.positions = append(e.positions[:0], positions...)
	s.log = append(s.log, e)
}

// NewEmptySnapshot returns an empty snapshot.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{NodeInfoMap: map[string]*NodeInfo{}, UsedPVCSet: map[string]struct{}{}, Images: map[string]*ImageState{}}
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
		for name, st := range n.ImageStates {
			s.Images[name] = st
		}
		s.Generation = max(s.Generation, n.Generation)
	}
	return s
}

// ImagesVersion is the version of the cache's image index that Images
// copies; SetImages replaces both (the scheduler cache calls them).
func (s *Snapshot) ImagesVersion() int64 { return s.imagesVersion }

// SetImages replaces Images with a copy of the cache's index at version.
func (s *Snapshot) SetImages(images map[string]*ImageState, version int64) {
	s.Images, s.imagesVersion = images, version
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
