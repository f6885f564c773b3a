package scheduler

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// queueNominator remembers which pending pods were nominated to which
// node: a preemptor waits for its victims to leave, and meanwhile Filter
// must count it on that node so that lower-priority pods do not take the
// room it made.
//
// A nomination comes from status.nominatedNodeName (recorded on
// Add/Update) or from AddNominatedPod (the scheduler's own decision,
// known before the status patch lands). It lasts until the pod is
// deleted, bound, or nominated elsewhere.
//
// It has its own lock because NominatedPodsForNode is called from the
// parallel Filter calls; lock order is Queue.mu, then nominator.mu.
type queueNominator struct {
	mu     sync.RWMutex
	byNode map[string][]*framework.PodInfo // highest priority first
	byPod  map[types.UID]string
}

func newQueueNominator() queueNominator {
	return queueNominator{byNode: make(map[string][]*framework.PodInfo), byPod: make(map[types.UID]string)}
}

// AddNominatedPod records that pi's pod is nominated to nodeName, or, if
// nodeName is empty, to its status.nominatedNodeName (none if that is
// empty too). It replaces any earlier nomination of the pod. A pod known
// to have been deleted while in flight is not nominated.
func (q *Queue) AddNominatedPod(pi *framework.PodInfo, nodeName string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.inFlight[pi.Pod.UID].deleted {
		return
	}
	q.nominator.add(pi, nodeName)
}

// DeleteNominatedPodIfExists drops the pod's nomination, e.g. when the
// scheduler assumes it on a node.
func (q *Queue) DeleteNominatedPodIfExists(pod *corev1.Pod) {
	q.nominator.delete(pod)
}

// NominatedPodsForNode returns the pods nominated to nodeName, highest
// priority first. The slice is the caller's; the PodInfos are shared and
// must not be changed.
func (q *Queue) NominatedPodsForNode(nodeName string) []*framework.PodInfo {
	return q.nominator.forNode(nodeName)
}

// HasNominatedPods reports whether any pod is nominated anywhere, so the
// scheduler can skip the nominated-pods pass of Filter in the common case.
func (q *Queue) HasNominatedPods() bool {
	q.nominator.mu.RLock()
	defer q.nominator.mu.RUnlock()
	return len(q.nominator.byPod) > 0
}

func (n *queueNominator) add(pi *framework.PodInfo, nodeName string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addLocked(pi, nodeName)
}

func (n *queueNominator) addLocked(pi *framework.PodInfo, nodeName string) {
	n.deleteLocked(pi.Pod.UID)
	if nodeName == "" {
		nodeName = pi.Pod.Status.NominatedNodeName
	}
	if nodeName == "" {
		return
	}
	n.byPod[pi.Pod.UID] = nodeName
	list := n.byNode[nodeName]
	// Insert after every pod of equal or higher priority: the list stays
	// sorted and equal priorities keep their nomination order.
	p := queuePodPriority(pi.Pod)
	i := len(list)
	for i > 0 && queuePodPriority(list[i-1].Pod) < p {
		i--
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = pi
	n.byNode[nodeName] = list
}

func (n *queueNominator) delete(pod *corev1.Pod) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleteLocked(pod.UID)
}

func (n *queueNominator) deleteLocked(uid types.UID) {
	node, ok := n.byPod[uid]
	if !ok {
		return
	}
	delete(n.byPod, uid)
	list := n.byNode[node]
	for i, pi := range list {
		if pi.Pod.UID == uid {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(n.byNode, node)
	} else {
		n.byNode[node] = list
	}
}

// update refreshes the pod's PodInfo and follows a change of
// status.nominatedNodeName. When neither version carries a nomination in
// its status, a nomination made by AddNominatedPod is kept: the update
// is most likely one that raced with the scheduler's status patch.
func (n *queueNominator) update(oldPod *corev1.Pod, pi *framework.PodInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	node := ""
	if (oldPod == nil || oldPod.Status.NominatedNodeName == "") && pi.Pod.Status.NominatedNodeName == "" {
		node = n.byPod[pi.Pod.UID]
	}
	n.addLocked(pi, node)
}

func (n *queueNominator) forNode(nodeName string) []*framework.PodInfo {
	n.mu.RLock()
	defer n.mu.RUnlock()
	list := n.byNode[nodeName]
	if len(list) == 0 {
		return nil
	}
	out := make([]*framework.PodInfo, len(list))
	copy(out, list)
	return out
}
