package bench

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Labels the scheduler scenarios put on their objects. The role label
// tells the OnAttempt hook and the bind watch which pods are measured.
const (
	schedLabelRole  = "bench.rudder.dev/role"
	schedLabelGroup = "bench.rudder.dev/anti-group"
	schedLabelNode  = "bench.rudder.dev/node" // on every node and class, for cleanup on a real cluster
	schedLabelZone  = "topology.kubernetes.io/zone"
	schedLabelHost  = "kubernetes.io/hostname"
	schedTaintChurn = "bench.rudder.dev/churn"

	schedRoleInit     = "init"     // bound from the start: the cluster's existing load
	schedRoleParked   = "parked"   // can never fit: waits in the unschedulable pool
	schedRoleMeasured = "measured" // the pods whose scheduling is timed

	// schedBenchSchedulerName is the profile of the in-process scheduler
	// on a cluster from --kubeconfig, so that cluster's own scheduler (if
	// any) leaves the benchmark's pods alone.
	schedBenchSchedulerName = "rudder-bench-scheduler"

	// Priorities of the preemption scenario. Pods name a PriorityClass and
	// state its value too: an API server with the Priority admission plugin
	// resolves the class (and accepts the matching value), one without it
	// takes the value as given, and the fake clientset has no admission.
	schedLowPriority  = 0
	schedHighPriority = 1000
	schedLowClass     = "rudder-bench-low"
	schedHighClass    = "rudder-bench-high"
)

// schedPriorityClasses are the classes the preemption scenario's pods name.
func schedPriorityClasses() []*schedulingv1.PriorityClass {
	return []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: schedLowClass, Labels: map[string]string{schedLabelNode: "true"}}, Value: schedLowPriority,
			Description: "rudder bench scheduler: pods to be preempted"},
		{ObjectMeta: metav1.ObjectMeta{Name: schedHighClass, Labels: map[string]string{schedLabelNode: "true"}}, Value: schedHighPriority,
			Description: "rudder bench scheduler: preemptors"},
	}
}

var schedZones = []string{"zone-a", "zone-b", "zone-c"}

// schedParams is one run's resolved sizes: a scenario at one node count.
type schedParams struct {
	scenario, mode string
	nodes          int
	initPods       int
	pods           int
	parked         int
	groups         int // antiaffinity: label groups
	apps           int // spread: app labels
	nodeCPU        string
	nodeMemory     string
	podCPU         string
	podMemory      string
	schedulerName  string
}

// schedWorkload is the objects of one run, generated from the seed alone:
// equal parameters give equal objects.
type schedWorkload struct {
	p        schedParams
	nodes    []*corev1.Node
	init     []*corev1.Pod // spec.nodeName set
	parked   []*corev1.Pod
	measured []*corev1.Pod
}

// schedNodeName is node i's name; churn nodes count on from nodes.
func schedNodeName(i int) string { return fmt.Sprintf("rudder-bench-node-%05d", i) }

// schedBuild generates the scenario's nodes and pods. withUIDs gives pods
// UIDs, which the API server would otherwise assign (the fake clientset
// does not, and the scheduler's cache keys pods by UID).
func schedBuild(p schedParams, seed uint64, namespace string, withUIDs bool) *schedWorkload {
	w := &schedWorkload{p: p}
	for i := range p.nodes {
		w.nodes = append(w.nodes, schedNode(p, i))
	}
	rng := rand.New(rand.NewPCG(seed, 0x5c4ed))
	mk := func(role string, i int) *corev1.Pod {
		pod := schedPod(p, namespace, role, i)
		if withUIDs {
			pod.UID = types.UID(fmt.Sprintf("%08x-%s-%06d", uint32(seed), role, i))
		}
		return pod
	}
	for i := range p.initPods {
		pod := mk(schedRoleInit, i)
		// Round-robin placement fills nodes evenly and, with fewer init
		// pods per anti-affinity group than nodes, never puts two of a
		// group on one node.
		pod.Spec.NodeName = schedNodeName(i % p.nodes)
		switch p.scenario {
		case SchedPreemption:
			pod.Spec.PriorityClassName, pod.Spec.Priority = schedLowClass, ptr.To(int32(schedLowPriority))
		case SchedAntiAffinity:
			schedAntiAffine(pod, i%p.groups)
		}
		w.init = append(w.init, pod)
	}
	for i := range p.parked {
		pod := mk(schedRoleParked, i)
		// Twice a node's CPU: no node, present or added later, fits it.
		q := resource.MustParse(p.nodeCPU)
		q.Add(q)
		pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = q
		w.parked = append(w.parked, pod)
	}
	for i := range p.pods {
		pod := mk(schedRoleMeasured, i)
		switch p.scenario {
		case SchedSpread:
			app := fmt.Sprintf("app-%02d", rng.IntN(p.apps))
			pod.Labels["app"] = app
			pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: schedLabelZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			}}
		case SchedAntiAffinity:
			schedAntiAffine(pod, (p.initPods+i)%p.groups)
		case SchedPreemption:
			pod.Spec.PriorityClassName, pod.Spec.Priority = schedHighClass, ptr.To(int32(schedHighPriority))
		}
		w.measured = append(w.measured, pod)
	}
	return w
}

// schedNode is a node as a kubelet would register it: Ready, with
// capacity, and the well-known topology labels.
func schedNode(p schedParams, i int) *corev1.Node {
	name := schedNodeName(i)
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse(p.nodeCPU),
		corev1.ResourceMemory:           resource.MustParse(p.nodeMemory),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			schedLabelHost: name, schedLabelZone: schedZones[i%len(schedZones)], "topology.kubernetes.io/region": "region-1",
			"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", schedLabelNode: "true",
		}},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res.DeepCopy(), Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
		},
	}
}

// schedChurnNode is churn node i: four times a node's CPU, more than a
// parked pod asks, and tainted NoSchedule.
func schedChurnNode(p schedParams, i int) *corev1.Node {
	n := schedNode(p, i)
	cpu := resource.MustParse(p.nodeCPU)
	cpu.SetMilli(cpu.MilliValue() * 4)
	n.Status.Capacity[corev1.ResourceCPU] = cpu
	n.Status.Allocatable[corev1.ResourceCPU] = cpu.DeepCopy()
	n.Spec.Taints = []corev1.Taint{{Key: schedTaintChurn, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	return n
}

// schedPod is a pause pod asking for the scenario's CPU and memory.
func schedPod(p schedParams, namespace, role string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%06d", role, i), Namespace: namespace,
			Labels: map[string]string{schedLabelRole: role},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 p.schedulerName,
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{
				Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(p.podCPU), corev1.ResourceMemory: resource.MustParse(p.podMemory),
				}},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// schedAntiAffine puts pod in group g, whose members repel each other
// per node.
func schedAntiAffine(pod *corev1.Pod, g int) {
	group := fmt.Sprintf("g%02d", g)
	pod.Labels[schedLabelGroup] = group
	pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   schedLabelHost,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{schedLabelGroup: group}},
		}},
	}}
}

// schedPlaced is a pod and the node it ended on ("" when unbound).
type schedPlaced struct {
	pod  *corev1.Pod
	node string
}

// schedVerify checks the final placement against what the scheduler
// promised: no node holds more than its allocatable CPU, memory and pod
// count; no two pods of an anti-affinity group share a node; every spread
// app's zone counts differ by at most its maxSkew. Pods on nodes that no
// longer exist (churn) are not judged. It returns the number of
// violations and the first few described.
func schedVerify(nodes []corev1.Node, placed []schedPlaced) (int, []string) {
	type usage struct {
		cpu, mem int64
		pods     int
		groups   map[string]bool
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	used := map[string]*usage{}
	spread := map[string]map[string]int{} // app → zone → pods
	n := 0
	var msgs []string
	violate := func(format string, args ...any) {
		n++
		if len(msgs) < 5 {
			msgs = append(msgs, fmt.Sprintf(format, args...))
		}
	}
	for _, pl := range placed {
		node := byName[pl.node]
		if node == nil {
			continue
		}
		u := used[pl.node]
		if u == nil {
			u = &usage{groups: map[string]bool{}}
			used[pl.node] = u
		}
		for _, c := range pl.pod.Spec.Containers {
			u.cpu += c.Resources.Requests.Cpu().MilliValue()
			u.mem += c.Resources.Requests.Memory().Value()
		}
		u.pods++
		if g := pl.pod.Labels[schedLabelGroup]; g != "" && pl.pod.Spec.Affinity != nil {
			if u.groups[g] {
				violate("anti-affinity group %s twice on node %s", g, pl.node)
			}
			u.groups[g] = true
		}
		if len(pl.pod.Spec.TopologySpreadConstraints) > 0 {
			app := pl.pod.Labels["app"]
			if spread[app] == nil {
				spread[app] = map[string]int{}
			}
			spread[app][node.Labels[schedLabelZone]]++
		}
	}
	for name, u := range used {
		a := byName[name].Status.Allocatable
		if u.cpu > a.Cpu().MilliValue() || u.mem > a.Memory().Value() || int64(u.pods) > a.Pods().Value() {
			violate("node %s overcommitted: %dm CPU, %d bytes, %d pods", name, u.cpu, u.mem, u.pods)
		}
	}
	for app, zones := range spread {
		lo, hi := -1, 0
		for _, z := range schedZones {
			c := zones[z]
			if lo < 0 || c < lo {
				lo = c
			}
			hi = max(hi, c)
		}
		if hi-lo > 1 {
			violate("app %s spread over zones %v: skew %d > 1", app, zones, hi-lo)
		}
	}
	return n, msgs
}
