package scheduler

import (
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Cache is the scheduler's own model of where pods run: one NodeInfo per
// node, with the pods bound to it and the pods the scheduler has assumed
// there but whose bind has not landed yet. Informer event handlers feed
// it (AddNode…RemovePod); the scheduling loop assumes pods into it and
// copies it into a framework.Snapshot at the start of every cycle.
//
// Pod lifecycle in the cache:
//
//	AssumePod ──► assumed ──AddPod/UpdatePod (informer)──► confirmed ──RemovePod──► gone
//	                 │  └─FinishBinding (bookkeeping only; assumed pods never expire)
//	                 └─ForgetPod (bind failed) ──► gone
//
// Events may arrive in any order across the node and pod informers: a pod
// can name a node the cache has not seen (its NodeInfo then has no node
// and is left out of snapshots), and a deleted node whose pods are still
// known keeps such a node-less NodeInfo until its last pod goes.
//
// UpdateSnapshot costs O(nodes changed since the snapshot was last
// updated): NodeInfos sit in a list ordered by most recent change, and
// only those with a Generation above the snapshot's are copied.
//
// All methods are safe for concurrent use.
type Cache struct {
	mu sync.RWMutex

	nodes map[string]*cacheItem
	// head is the most recently changed NodeInfo; following next walks
	// towards older generations.
	head *cacheItem
	tree *cacheNodeTree

	pods map[types.UID]*cachePodState

	// images indexes image name → nodes reporting it. dirtyImages are
	// the entries whose node count changed since the last UpdateSnapshot.
	images      map[string]*cacheImage
	dirtyImages map[*cacheImage]struct{}
	// imagesVersion counts changes to the set of image names, which
	// snapshots copy (Snapshot.Images) when it moved; it starts at 1 so
	// that a new snapshot copies the (empty) index once.
	imagesVersion int64

	// own remembers the snapshot whose lists this cache built last, so
	// the next update of that same snapshot can patch them in place.
	own cacheSnapState
	// changes is scratch space for UpdateSnapshot, reused across calls.
	changes []cacheChange
	// changedPos is UpdateSnapshot's buffer for the snapshot's change log.
	changedPos []int32
}

// cacheItem is one NodeInfo in the recency list.
type cacheItem struct {
	name       string
	info       *framework.NodeInfo
	prev, next *cacheItem
	// Positions of this node's copy in the owned snapshot's NodeInfoList
	// and affinity lists (-1 when absent). Valid only while own.snap is
	// that snapshot and the node tree has not changed since it was built.
	listPos, affPos, antiPos int
}

type cachePodState struct {
	pi   *framework.PodInfo
	node string
	// assumed: accounted by AssumePod, not yet seen from the informer.
	assumed bool
	// bindingFinished records FinishBinding. Assumed pods do not expire
	// (upstream's default), so nothing acts on it yet; it is kept so a
	// TTL can be added without changing callers.
	bindingFinished bool
}

// cacheImage is one image name across the cluster. state is shared by
// every NodeInfo (cache-side and snapshot copies) reporting the image;
// its NumNodes is written only inside UpdateSnapshot, which runs between
// scheduling cycles, so readers in a cycle never race with the write.
type cacheImage struct {
	nodes map[string]struct{}
	state *framework.ImageState
}

type cacheSnapState struct {
	snap        *framework.Snapshot
	treeVersion int64
	// items[i] is the cache item whose copy is snap.NodeInfoList[i].
	items []*cacheItem
	// pvcNodes counts, per "namespace/claim", the listed nodes with a pod
	// using it; the claim is in snap.UsedPVCSet while the count is > 0.
	pvcNodes map[string]int
}

type cacheChange struct {
	item     *cacheItem
	old, new *framework.NodeInfo
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		nodes:         map[string]*cacheItem{},
		tree:          newCacheNodeTree(),
		pods:          map[types.UID]*cachePodState{},
		images:        map[string]*cacheImage{},
		dirtyImages:   map[*cacheImage]struct{}{},
		imagesVersion: 1,
	}
}

// AddNode records a node (or replaces it, if already known).
func (c *Cache) AddNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upsertNode(node)
}

// UpdateNode replaces a node. The cache compares against the node it
// holds rather than oldNode, so a missed event cannot leave it stale.
func (c *Cache) UpdateNode(_, newNode *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upsertNode(newNode)
}

func (c *Cache) upsertNode(node *corev1.Node) {
	if node == nil {
		return
	}
	it := c.nodes[node.Name]
	if it == nil {
		it = c.newItem(node.Name, framework.NewNodeInfo())
	}
	old := it.info.Node()
	c.tree.update(old, node)
	images := c.trackImages(node)
	if old != nil {
		c.untrackImages(old, images)
	}
	it.info.SetNode(node)
	it.info.ImageStates = images
	c.moveToHead(it)
}

// RemoveNode forgets a node. Its pods stay accounted (their deletions
// come through the pod informer, possibly later) in a NodeInfo without a
// node, which snapshots skip.
func (c *Cache) RemoveNode(node *corev1.Node) {
	if node == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.nodes[node.Name]
	if it == nil || it.info.Node() == nil {
		slog.Debug("scheduler cache: removing unknown node", "node", node.Name)
		return
	}
	cached := it.info.Node()
	c.untrackImages(cached, nil)
	c.tree.remove(cached)
	it.info.RemoveNode()
	it.info.ImageStates = nil
	c.touchOrDrop(it)
}

// AddPod records a pod from the informer. A pod without spec.nodeName or
// in a terminal phase is not on any node and is ignored (or dropped, if
// the cache held it). An assumed pod becomes confirmed, moving to the
// node the informer reports if that differs from the assumed one.
func (c *Cache) AddPod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upsertPod(pod)
}

// UpdatePod replaces a pod: the old version's accounting is removed and
// the new one's added. A pod that was not bound before (or was assumed)
// is handled as AddPod.
func (c *Cache) UpdatePod(oldPod, newPod *corev1.Pod) {
	if newPod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// The informer keys by namespace/name: a pod deleted and recreated
	// between two list calls reaches us as an update with a new UID.
	if oldPod != nil && oldPod.UID != newPod.UID {
		if st := c.pods[oldPod.UID]; st != nil {
			c.dropPod(oldPod.UID, st)
		}
	}
	c.upsertPod(newPod)
}

// RemovePod forgets a pod, bound or assumed.
func (c *Cache) RemovePod(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.pods[pod.UID]; st != nil {
		c.dropPod(pod.UID, st)
	}
}

// cacheCountsPod reports whether a pod takes room on a node: bound and
// not finished.
func cacheCountsPod(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

func (c *Cache) upsertPod(pod *corev1.Pod) {
	if pod.UID == "" {
		slog.Warn("scheduler cache: ignoring pod without UID", "pod", pod.Namespace+"/"+pod.Name)
		return
	}
	st := c.pods[pod.UID]
	if !cacheCountsPod(pod) {
		if st != nil {
			c.dropPod(pod.UID, st)
		}
		return
	}
	if st != nil {
		if st.assumed && st.node != pod.Spec.NodeName {
			slog.Info("scheduler cache: pod bound to a different node than assumed",
				"pod", pod.Namespace+"/"+pod.Name, "assumed", st.node, "bound", pod.Spec.NodeName)
		}
		c.detach(st)
	}
	pi := framework.NewPodInfo(pod)
	c.attach(pi, pod.Spec.NodeName)
	c.pods[pod.UID] = &cachePodState{pi: pi, node: pod.Spec.NodeName}
}

// AssumePod accounts pi on pi.Pod.Spec.NodeName before the bind lands, so
// the next cycle sees the node as used. The caller passes a copy of the
// pod with the node name set. It fails if the cache already knows the pod.
func (c *Cache) AssumePod(pi *framework.PodInfo) error {
	if pi == nil || pi.Pod == nil {
		return fmt.Errorf("assume: no pod given")
	}
	pod := pi.Pod
	if pod.UID == "" {
		return fmt.Errorf("assume pod %s/%s: pod has no UID", pod.Namespace, pod.Name)
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("assume pod %s/%s: spec.nodeName is empty", pod.Namespace, pod.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.pods[pod.UID]; st != nil {
		return fmt.Errorf("pod %s/%s is already in the scheduler cache (on node %q), so it cannot be assumed",
			pod.Namespace, pod.Name, st.node)
	}
	c.attach(pi, pod.Spec.NodeName)
	c.pods[pod.UID] = &cachePodState{pi: pi, node: pod.Spec.NodeName, assumed: true}
	return nil
}

// FinishBinding records that the bind of an assumed pod was sent. The
// pod stays assumed until the informer confirms it or ForgetPod.
func (c *Cache) FinishBinding(pod *corev1.Pod) {
	if pod == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.pods[pod.UID]; st != nil && st.assumed {
		st.bindingFinished = true
	}
}

// ForgetPod undoes AssumePod after a failed bind. A pod the cache no
// longer holds is not an error; a confirmed pod, or one assumed on a
// different node than pod names, is.
func (c *Cache) ForgetPod(pod *corev1.Pod) error {
	if pod == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.pods[pod.UID]
	if st == nil {
		return nil
	}
	if !st.assumed {
		return fmt.Errorf("pod %s/%s is bound to node %q, not assumed, so it cannot be forgotten", pod.Namespace, pod.Name, st.node)
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != st.node {
		return fmt.Errorf("pod %s/%s was assumed on node %q, not %q", pod.Namespace, pod.Name, st.node, pod.Spec.NodeName)
	}
	c.dropPod(pod.UID, st)
	return nil
}

// IsAssumedPod reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := c.pods[pod.UID]
	return st != nil && st.assumed
}

// NodeCount counts the NodeInfos, including those known only through
// their pods (no node object yet, or the node was deleted).
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodes)
}

// PodCount counts the pods, assumed and bound, including pods on
// deleted or not yet seen nodes.
func (c *Cache) PodCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.pods)
}

// attach accounts pi on a node, creating a node-less NodeInfo if the
// node is not known yet.
func (c *Cache) attach(pi *framework.PodInfo, nodeName string) {
	it := c.nodes[nodeName]
	if it == nil {
		it = c.newItem(nodeName, framework.NewNodeInfo())
	}
	it.info.AddPod(pi)
	c.moveToHead(it)
}

// detach removes a pod's accounting from its node.
func (c *Cache) detach(st *cachePodState) {
	it := c.nodes[st.node]
	if it == nil {
		slog.Error("scheduler cache: pod's node missing", "pod", st.pi.Pod.Namespace+"/"+st.pi.Pod.Name, "node", st.node)
		return
	}
	if err := it.info.RemovePod(st.pi.Pod); err != nil {
		slog.Error("scheduler cache: inconsistent", "err", err)
	}
	c.touchOrDrop(it)
}

func (c *Cache) dropPod(uid types.UID, st *cachePodState) {
	c.detach(st)
	delete(c.pods, uid)
}

// touchOrDrop moves a changed NodeInfo to the head, or drops it once it
// has neither a node nor pods.
func (c *Cache) touchOrDrop(it *cacheItem) {
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, it.name)
		return
	}
	c.moveToHead(it)
}

func (c *Cache) newItem(name string, info *framework.NodeInfo) *cacheItem {
	it := &cacheItem{name: name, info: info, listPos: -1, affPos: -1, antiPos: -1}
	c.nodes[name] = it
	c.moveToHead(it)
	return it
}

// moveToHead keeps the list ordered by Generation, newest first; call it
// after every change to it.info.
func (c *Cache) moveToHead(it *cacheItem) {
	if c.head == it {
		return
	}
	c.unlink(it)
	it.next = c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *cacheItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

// trackImages indexes node's images and returns its ImageStates map.
func (c *Cache) trackImages(node *corev1.Node) map[string]*framework.ImageState {
	if len(node.Status.Images) == 0 {
		return nil
	}
	states := make(map[string]*framework.ImageState, len(node.Status.Images))
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			e := c.images[name]
			if e == nil {
				// The first node to report a name fixes its size, as
				// upstream: sizes of one image rarely differ by node.
				e = &cacheImage{nodes: map[string]struct{}{}, state: &framework.ImageState{Size: img.SizeBytes}}
				c.images[name] = e
				c.imagesVersion++
			}
			if _, ok := e.nodes[node.Name]; !ok {
				e.nodes[node.Name] = struct{}{}
				c.dirtyImages[e] = struct{}{}
			}
			states[name] = e.state
		}
	}
	return states
}

// untrackImages removes node from the index of each of its images not in
// keep (the images the node's newer version still reports).
func (c *Cache) untrackImages(node *corev1.Node, keep map[string]*framework.ImageState) {
	for _, img := range node.Status.Images {
		for _, name := range img.Names {
			if _, ok := keep[name]; ok {
				continue
			}
			e := c.images[name]
			if e == nil {
				continue
			}
			if _, ok := e.nodes[node.Name]; !ok {
				continue
			}
			delete(e.nodes, node.Name)
			c.dirtyImages[e] = struct{}{}
			if len(e.nodes) == 0 {
				delete(c.images, name)
				c.imagesVersion++
			}
		}
	}
}

// UpdateSnapshot brings s up to date with the cache. Only NodeInfos that
// changed after s.Generation are copied (NodeInfo.Clone); the lists are
// rebuilt in node-tree order only when the set of nodes, their order, or
// which nodes have affinity pods changed, and otherwise patched by
// replacing the changed pointers where they stand. Patching needs the
// positions recorded when the lists were last built, which the cache
// keeps for one snapshot only, the last one it updated: the scheduler
// keeps a single snapshot, and alternating between two costs a rebuild
// each time. s must have been updated only by this cache (or be empty). It must not be called while
// a scheduling cycle still reads s or any other snapshot of this cache:
// image node counts shared by all snapshots are refreshed here.
//
// An error means s was found inconsistent with the cache; it has been
// rebuilt from scratch and is usable, but the caller should not trust a
// decision made from the previous state.
func (c *Cache) UpdateSnapshot(s *framework.Snapshot) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.NodeInfoMap == nil {
		s.NodeInfoMap = map[string]*framework.NodeInfo{}
	}
	if s.UsedPVCSet == nil {
		s.UsedPVCSet = map[string]struct{}{}
	}
	for e := range c.dirtyImages {
		e.state.NumNodes = len(e.nodes)
	}
	clear(c.dirtyImages)
	if s.ImagesVersion() != c.imagesVersion {
		images := make(map[string]*framework.ImageState, len(c.images))
		for name, e := range c.images {
			images[name] = e.state
		}
		s.SetImages(images, c.imagesVersion)
	}

	rebuild := c.own.snap != s || c.own.treeVersion != c.tree.version
	changes := c.changes[:0]
	for it := c.head; it != nil && it.info.Generation > s.Generation; it = it.next {
		old := s.NodeInfoMap[it.name]
		if it.info.Node() == nil {
			if old != nil {
				delete(s.NodeInfoMap, it.name)
				rebuild = true
			}
			continue
		}
		clone := it.info.Clone()
		s.NodeInfoMap[it.name] = clone
		if old == nil {
			rebuild = true
			continue
		}
		changes = append(changes, cacheChange{item: it, old: old, new: clone})
	}
	if c.head != nil {
		s.Generation = c.head.info.Generation
	}
	// Fully removed nodes are no longer in the recency list; find them by
	// count, as a node deletion is rare next to pod churn.
	if len(s.NodeInfoMap) > c.tree.numNodes {
		for name := range s.NodeInfoMap {
			if it := c.nodes[name]; it == nil || it.info.Node() == nil {
				delete(s.NodeInfoMap, name)
			}
		}
		rebuild = true
	}
	if !rebuild {
		rebuild = !c.patchSnapshot(s, changes)
	}
	if !rebuild {
		pos := c.changedPos[:0]
		for _, ch := range changes {
			pos = append(pos, int32(ch.item.listPos))
		}
		s.ListPatched(pos)
		c.changedPos = pos
	}
	clear(changes) // drop references to old NodeInfos
	c.changes = changes[:0]
	if rebuild {
		c.rebuildSnapshotLists(s)
	}
	if len(s.NodeInfoList) != c.tree.numNodes || len(s.NodeInfoMap) != c.tree.numNodes {
		err := fmt.Errorf("scheduler snapshot inconsistent with cache: %d nodes listed, %d mapped, %d in cache; rebuilt it",
			len(s.NodeInfoList), len(s.NodeInfoMap), c.tree.numNodes)
		slog.Error("scheduler cache", "err", err)
		c.resyncSnapshot(s)
		return err
	}
	return nil
}

// patchSnapshot replaces the changed NodeInfos in the owned snapshot's
// lists at the positions recorded at the last rebuild. It reports false
// if the lists do not hold what the cache expects (the caller rebuilds).
func (c *Cache) patchSnapshot(s *framework.Snapshot, changes []cacheChange) bool {
	rebuildAff, rebuildAnti := false, false
	for _, ch := range changes {
		it := ch.item
		if !cacheReplaceAt(s.NodeInfoList, it.listPos, ch.old, ch.new) {
			return false
		}
		had, has := len(ch.old.PodsWithAffinity) > 0, len(ch.new.PodsWithAffinity) > 0
		switch {
		case had && has:
			if !cacheReplaceAt(s.HavePodsWithAffinityList, it.affPos, ch.old, ch.new) {
				return false
			}
		case had != has:
			rebuildAff = true
		}
		had, has = len(ch.old.PodsWithRequiredAntiAffinity) > 0, len(ch.new.PodsWithRequiredAntiAffinity) > 0
		switch {
		case had && has:
			if !cacheReplaceAt(s.HavePodsWithRequiredAntiAffinityList, it.antiPos, ch.old, ch.new) {
				return false
			}
		case had != has:
			rebuildAnti = true
		}
		c.patchPVCs(s, ch.old, ch.new)
	}
	if rebuildAff || rebuildAnti {
		c.rebuildAffinityLists(s, rebuildAff, rebuildAnti)
	}
	return true
}

func cacheReplaceAt(list []*framework.NodeInfo, i int, old, new *framework.NodeInfo) bool {
	if i < 0 || i >= len(list) || list[i] != old {
		return false
	}
	list[i] = new
	return true
}

// patchPVCs moves UsedPVCSet by the claims one node gained or lost.
func (c *Cache) patchPVCs(s *framework.Snapshot, old, new *framework.NodeInfo) {
	for k := range old.PVCRefCounts {
		if _, ok := new.PVCRefCounts[k]; ok {
			continue
		}
		if c.own.pvcNodes[k]--; c.own.pvcNodes[k] <= 0 {
			delete(c.own.pvcNodes, k)
			delete(s.UsedPVCSet, k)
		}
	}
	for k := range new.PVCRefCounts {
		if _, ok := old.PVCRefCounts[k]; ok {
			continue
		}
		if c.own.pvcNodes[k]++; c.own.pvcNodes[k] == 1 {
			s.UsedPVCSet[k] = struct{}{}
		}
	}
}

// rebuildAffinityLists recomputes the named affinity lists from the
// (already patched) NodeInfoList, keeping its order.
func (c *Cache) rebuildAffinityLists(s *framework.Snapshot, aff, anti bool) {
	// New slices (plugins may still hold the old ones), sized for one
	// more node than before: the usual change is a node gaining its first
	// such pod, and appending from nil was most of this function's cost.
	if aff {
		s.HavePodsWithAffinityList = make([]*framework.NodeInfo, 0, len(s.HavePodsWithAffinityList)+1)
	}
	if anti {
		s.HavePodsWithRequiredAntiAffinityList = make([]*framework.NodeInfo, 0, len(s.HavePodsWithRequiredAntiAffinityList)+1)
	}
	for i, ni := range s.NodeInfoList {
		it := c.own.items[i]
		if aff {
			it.affPos = -1
			if len(ni.PodsWithAffinity) > 0 {
				it.affPos = len(s.HavePodsWithAffinityList)
				s.HavePodsWithAffinityList = append(s.HavePodsWithAffinityList, ni)
			}
		}
		if anti {
			it.antiPos = -1
			if len(ni.PodsWithRequiredAntiAffinity) > 0 {
				it.antiPos = len(s.HavePodsWithRequiredAntiAffinityList)
				s.HavePodsWithRequiredAntiAffinityList = append(s.HavePodsWithRequiredAntiAffinityList, ni)
			}
		}
	}
}

// rebuildSnapshotLists recomputes every list and UsedPVCSet of s from
// s.NodeInfoMap in node-tree order, and makes s the owned snapshot.
func (c *Cache) rebuildSnapshotLists(s *framework.Snapshot) {
	names := c.tree.list()
	list := make([]*framework.NodeInfo, 0, len(names))
	items := make([]*cacheItem, 0, len(names))
	var aff, anti []*framework.NodeInfo
	pvc := map[string]int{}
	for _, name := range names {
		ni, it := s.NodeInfoMap[name], c.nodes[name]
		if ni == nil || it == nil {
			continue // counted as an inconsistency by the caller
		}
		it.listPos, it.affPos, it.antiPos = len(list), -1, -1
		list = append(list, ni)
		items = append(items, it)
		if len(ni.PodsWithAffinity) > 0 {
			it.affPos = len(aff)
			aff = append(aff, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			it.antiPos = len(anti)
			anti = append(anti, ni)
		}
		for k := range ni.PVCRefCounts {
			pvc[k]++
		}
	}
	s.NodeInfoList = list
	s.HavePodsWithAffinityList = aff
	s.HavePodsWithRequiredAntiAffinityList = anti
	s.UsedPVCSet = make(map[string]struct{}, len(pvc))
	for k := range pvc {
		s.UsedPVCSet[k] = struct{}{}
	}
	c.own = cacheSnapState{snap: s, treeVersion: c.tree.version, items: items, pvcNodes: pvc}
	s.ListRebuilt()
}

// resyncSnapshot copies every node into s afresh: the recovery path when
// s's contents disagree with its Generation.
func (c *Cache) resyncSnapshot(s *framework.Snapshot) {
	s.NodeInfoMap = make(map[string]*framework.NodeInfo, c.tree.numNodes)
	for name, it := range c.nodes {
		if it.info.Node() != nil {
			s.NodeInfoMap[name] = it.info.Clone()
		}
	}
	if c.head != nil {
		s.Generation = c.head.info.Generation
	}
	c.rebuildSnapshotLists(s)
}
