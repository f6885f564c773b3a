package scheduler

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// cacheNodeTree orders node names by zone so that a list of them
// alternates zones: the first node of every zone, then the second of
// every zone, and so on. The scheduler examines nodes in this order and
// stops after enough feasible ones (percentageOfNodesToScore), so the
// order is what spreads a small sample over the failure domains instead
// of filling the first zone registered.
//
// Within a zone nodes keep their arrival order; zones keep the order in
// which their first node arrived. Not safe for concurrent use: the
// Cache's mutex guards it.
type cacheNodeTree struct {
	zones    []string            // zone keys, in arrival order
	byZone   map[string][]string // zone key → node names
	numNodes int
	// version changes whenever the list order could change (a node
	// added, removed or moved to another zone), so a snapshot knows its
	// NodeInfoList is stale.
	version int64
}

func newCacheNodeTree() *cacheNodeTree {
	return &cacheNodeTree{byZone: map[string][]string{}}
}

// cacheZoneKey identifies a node's failure domain: region and zone from
// the topology labels (with the deprecated beta labels as fallback),
// or "" when the node names neither.
func cacheZoneKey(node *corev1.Node) string {
	l := node.Labels
	if l == nil {
		return ""
	}
	zone, ok := l[corev1.LabelTopologyZone]
	if !ok {
		zone = l[corev1.LabelFailureDomainBetaZone]
	}
	region, ok := l[corev1.LabelTopologyRegion]
	if !ok {
		region = l[corev1.LabelFailureDomainBetaRegion]
	}
	if region == "" && zone == "" {
		return ""
	}
	// The NUL cannot appear in a label value, so distinct (region, zone)
	// pairs never share a key.
	return region + ":\x00:" + zone
}

// add puts a node at the end of its zone; a node already there is left
// in place.
func (t *cacheNodeTree) add(node *corev1.Node) {
	t.addToZone(cacheZoneKey(node), node.Name)
}

func (t *cacheNodeTree) addToZone(zone, name string) {
	names, ok := t.byZone[zone]
	if slices.Contains(names, name) {
		return
	}
	if !ok {
		t.zones = append(t.zones, zone)
	}
	t.byZone[zone] = append(names, name)
	t.numNodes++
	t.version++
}

// remove takes a node out of its zone, dropping the zone when it empties.
// It reports whether the node was there.
func (t *cacheNodeTree) remove(node *corev1.Node) bool {
	return t.removeFromZone(cacheZoneKey(node), node.Name)
}

func (t *cacheNodeTree) removeFromZone(zone, name string) bool {
	names := t.byZone[zone]
	i := slices.Index(names, name)
	if i < 0 {
		return false
	}
	// Delete keeps the order of the others, which is what keeps the
	// round-robin list stable for the nodes that stay.
	names = slices.Delete(names, i, i+1)
	if len(names) == 0 {
		delete(t.byZone, zone)
		if zi := slices.Index(t.zones, zone); zi >= 0 {
			t.zones = slices.Delete(t.zones, zi, zi+1)
		}
	} else {
		t.byZone[zone] = names
	}
	t.numNodes--
	t.version++
	return true
}

// update moves a node to its new zone if its labels changed it. oldNode
// may be nil when the tree does not hold the node yet.
func (t *cacheNodeTree) update(oldNode, newNode *corev1.Node) {
	newZone := cacheZoneKey(newNode)
	if oldNode != nil {
		oldZone := cacheZoneKey(oldNode)
		if oldZone == newZone && slices.Contains(t.byZone[oldZone], newNode.Name) {
			return
		}
		t.removeFromZone(oldZone, oldNode.Name)
	}
	t.addToZone(newZone, newNode.Name)
}

// list returns the names round-robin across zones.
func (t *cacheNodeTree) list() []string {
	out := make([]string, 0, t.numNodes)
	for i := 0; len(out) < t.numNodes; i++ {
		added := false
		for _, z := range t.zones {
			if names := t.byZone[z]; i < len(names) {
				out = append(out, names[i])
				added = true
			}
		}
		if !added {
			// numNodes disagrees with the zones; never loop forever on it.
			break
		}
	}
	return out
}
