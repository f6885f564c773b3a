package daemonset

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testDS(mutate ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", UID: "ds-uid", Generation: 2,
			Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "2"}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "agent:1"}}},
			},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{
					MaxUnavailable: ptr.To(intstr.FromInt(1)), MaxSurge: ptr.To(intstr.FromInt(0)),
				},
			},
		},
	}
	for _, m := range mutate {
		m(ds)
	}
	return ds
}

func rolling(unavailable, surge string) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.Parse(unavailable))
		ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.Parse(surge))
	}
}

func node(name string, mutate ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	for _, m := range mutate {
		m(n)
	}
	return n
}

func taint(key string, effect corev1.TaintEffect) func(*corev1.Node) {
	return func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: effect}) }
}

func label(k, v string) func(*corev1.Node) { return func(n *corev1.Node) { n.Labels[k] = v } }

func TestShouldRun(t *testing.T) {
	cases := []struct {
		name      string
		ds        *appsv1.DaemonSet
		node      *corev1.Node
		run, cont bool
	}{
		{"plain node", testDS(), node("a"), true, true},
		{"nodeSelector matches", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			node("a", label("disk", "ssd")), true, true},
		{"nodeSelector does not match", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"} }),
			node("a"), false, false},
		{"required affinity matches", testDS(affinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1", "z2"}})),
			node("a", label("zone", "z2")), true, true},
		{"required affinity does not match", testDS(affinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"z2"}})),
			node("a", label("zone", "z2")), false, false},
		{"affinity Gt", testDS(affinity(corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"8"}})),
			node("a", label("cores", "16")), true, true},
		{"template nodeName elsewhere", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeName = "b" }), node("a"), false, false},
		{"NoSchedule taint: nothing new, the old one stays", testDS(), node("a", taint("dedicated", corev1.TaintEffectNoSchedule)), false, true},
		{"NoExecute taint: the pod goes", testDS(), node("a", taint("dedicated", corev1.TaintEffectNoExecute)), false, false},
		{"PreferNoSchedule is no bar", testDS(), node("a", taint("dedicated", corev1.TaintEffectPreferNoSchedule)), true, true},
		{"tolerated taint", testDS(func(ds *appsv1.DaemonSet) {
			ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}), node("a", taint("dedicated", corev1.TaintEffectNoExecute)), true, true},
		{"not-ready is tolerated by every daemon", testDS(), node("a", taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)), true, true},
		{"unreachable is tolerated", testDS(), node("a", taint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)), true, true},
		{"cordoned nodes still get daemons", testDS(), node("a", taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)), true, true},
		{"memory pressure is tolerated", testDS(), node("a", taint(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)), true, true},
		{"network-unavailable stops pod-network daemons", testDS(), node("a", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), false, true},
		{"network-unavailable is fine for hostNetwork", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = true }),
			node("a", taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)), true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run, cont := shouldRun(c.node, c.ds)
			if run != c.run || cont != c.cont {
				t.Fatalf("shouldRun = %v, %v; want %v, %v", run, cont, c.run, c.cont)
			}
		})
	}
}

func affinity(reqs ...corev1.NodeSelectorRequirement) func(*appsv1.DaemonSet) {
	return func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}},
			},
		}}
	}
}

func TestPodForNode(t *testing.T) {
	ds := testDS(affinity(corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpExists}), func(ds *appsv1.DaemonSet) {
		ds.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)}}
	})
	pod := podForNode(ds, podTemplate(ds, "h1"), "node-7")
	if pod.GenerateName != "agent-" || pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "h1" || pod.Labels[templateGenerationLabel] != "2" || pod.Labels["app"] != "agent" {
		t.Fatalf("meta %+v", pod.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "DaemonSet" || ref.UID != "ds-uid" {
		t.Fatalf("owner %+v", pod.OwnerReferences)
	}
	if got := targetNode(pod); got != "node-7" || pod.Spec.NodeName != "" {
		t.Fatalf("target %q nodeName %q", got, pod.Spec.NodeName)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 || terms[0].MatchFields[0].Key != "metadata.name" || terms[0].MatchFields[0].Values[0] != "node-7" {
		t.Fatalf("affinity %+v", terms)
	}
	var keys []string
	for _, tol := range pod.Spec.Tolerations {
		keys = append(keys, fmt.Sprintf("%s:%s:%v", tol.Key, tol.Effect, tol.TolerationSeconds != nil))
	}
	want := []string{
		"node.kubernetes.io/not-ready:NoExecute:false", // the template's, without its tolerationSeconds
		"node.kubernetes.io/unreachable:NoExecute:false",
		"node.kubernetes.io/disk-pressure:NoSchedule:false",
		"node.kubernetes.io/memory-pressure:NoSchedule:false",
		"node.kubernetes.io/pid-pressure:NoSchedule:false",
		"node.kubernetes.io/unschedulable:NoSchedule:false",
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("tolerations\n got %v\nwant %v", keys, want)
	}
	// The set's own template is untouched.
	if len(ds.Spec.Template.Spec.Tolerations) != 1 || len(ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 1 {
		t.Fatal("podForNode changed the template")
	}
	if !nodeMatches(&pod.Spec, node("node-7")) || nodeMatches(&pod.Spec, node("node-8")) {
		t.Fatal("the pinned pod must match its node and only it")
	}
}

// testPod is a pod of ds for node at revision rev ("old"/"new") in state
// ready, pending, unready, terminating, failed or succeeded; age orders
// pods (higher is older).
func testPod(ds *appsv1.DaemonSet, nodeName, rev, state string, age int) *corev1.Pod {
	p := podForNode(ds, podTemplate(ds, rev), nodeName)
	if rev != "new" {
		p.Labels[templateGenerationLabel] = "1"
	}
	p.Name = fmt.Sprintf("agent-%s-%s-%d", nodeName, rev, age)
	p.UID = types.UID(p.Name)
	p.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(age) * time.Minute))
	p.Spec.NodeName = nodeName
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}
	switch state {
	case "ready":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready}}
	case "pending":
		p.Spec.NodeName = ""
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
	case "unready":
		ready.Status = corev1.ConditionFalse
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready}}
	case "terminating":
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{ready}}
		p.DeletionTimestamp = &metav1.Time{Time: now}
	case "failed":
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed}
	case "succeeded":
		p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded}
	}
	return p
}

// input builds a plan input from nodes and "node:rev:state[:age]" pod specs.
func input(ds *appsv1.DaemonSet, nodes []*corev1.Node, specs ...string) planInput {
	var pods []*corev1.Pod
	for _, s := range specs {
		parts := strings.Split(s, ":")
		age := 1
		if len(parts) > 3 {
			fmt.Sscan(parts[3], &age)
		}
		pods = append(pods, testPod(ds, parts[0], parts[1], parts[2], age))
	}
	return planInput{ds: ds, nodes: nodes, pods: byNode(pods), hash: "new", now: now}
}

func describe(p dsPlan) string {
	var parts []string
	for _, n := range p.create {
		parts = append(parts, "create on "+n)
	}
	for _, pod := range p.delete {
		parts = append(parts, "delete "+pod.Name)
	}
	for _, pod := range p.failed {
		parts = append(parts, "failed "+pod.Name)
	}
	return strings.Join(parts, ", ")
}

func threeNodes(mutate ...func(*corev1.Node)) []*corev1.Node {
	return []*corev1.Node{node("a"), node("b", mutate...), node("c")}
}

func TestPlanManage(t *testing.T) {
	cases := []struct {
		name  string
		ds    *appsv1.DaemonSet
		nodes []*corev1.Node
		pods  []string
		want  string
	}{
		{"one pod per node", testDS(), threeNodes(), nil, "create on a, create on b, create on c"},
		{"only the missing node", testDS(), threeNodes(), []string{"a:new:ready", "c:new:pending"}, "create on b"},
		{"a tainted node gets none", testDS(), threeNodes(taint("gpu", corev1.TaintEffectNoSchedule)), nil, "create on a, create on c"},
		{"but keeps the pod it has", testDS(), threeNodes(taint("gpu", corev1.TaintEffectNoSchedule)), []string{"a:new:ready", "b:new:ready", "c:new:ready"}, ""},
		{"NoExecute evicts", testDS(), threeNodes(taint("gpu", corev1.TaintEffectNoExecute)), []string{"a:new:ready", "b:new:ready", "c:new:ready"}, "delete agent-b-new-1"},
		{"relabelled node loses its pod", testDS(func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"} }),
			[]*corev1.Node{node("a", label("role", "edge")), node("b")}, []string{"a:new:ready", "b:new:ready"}, "delete agent-b-new-1"},
		{"the oldest of two stays", testDS(), threeNodes(), []string{"a:new:ready:5", "a:new:ready:2", "b:new:ready", "c:new:ready"}, "delete agent-a-new-2"},
		{"failed pods are killed (with back-off)", testDS(), threeNodes(), []string{"a:new:failed", "b:new:ready", "c:new:ready"}, "failed agent-a-new-1"},
		{"succeeded pods are deleted", testDS(), threeNodes(), []string{"a:new:succeeded", "b:new:ready", "c:new:ready"}, "delete agent-a-new-1"},
		{"no new pod while the old one terminates", testDS(), threeNodes(), []string{"a:old:terminating", "b:new:ready", "c:new:ready"}, ""},
		{"surge: a new pod beside the terminating one", testDS(rolling("0", "1")), threeNodes(), []string{"a:old:terminating", "b:new:ready", "c:new:ready"}, "create on a"},
		{"surge: old pod goes once the new one is available", testDS(rolling("0", "1")), threeNodes(), []string{"a:old:ready:5", "a:new:ready:1", "b:new:ready", "c:new:ready"}, "delete agent-a-old-5"},
		{"surge: old pod stays while the new one is unready", testDS(rolling("0", "1")), threeNodes(), []string{"a:old:ready:5", "a:new:unready:1", "b:new:ready", "c:new:ready"}, ""},
		{"a waiting pod for a deleted node", testDS(), []*corev1.Node{node("a")}, []string{"a:new:ready", "gone:new:pending"}, "delete agent-gone-new-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(planManage(input(c.ds, c.nodes, c.pods...))); got != c.want {
				t.Fatalf("plan %q, want %q", got, c.want)
			}
		})
	}
}

func TestPlanRollingUpdate(t *testing.T) {
	cases := []struct {
		name string
		ds   *appsv1.DaemonSet
		pods []string
		want string
	}{
		{"maxUnavailable 1: one node at a time", testDS(), []string{"a:old:ready", "b:old:ready", "c:old:ready"}, "delete agent-a-old-1"},
		{"waits while a node has no pod", testDS(), []string{"b:old:ready", "c:old:ready"}, ""},
		{"waits while a pod terminates", testDS(), []string{"a:old:terminating", "b:old:ready", "c:old:ready"}, ""},
		{"waits for the new pod to be available", testDS(), []string{"a:new:unready", "b:old:ready", "c:old:ready"}, ""},
		{"next node once it is", testDS(), []string{"a:new:ready", "b:old:ready", "c:old:ready"}, "delete agent-b-old-1"},
		{"an unavailable old pod is replaced at once", testDS(), []string{"a:new:unready", "b:old:unready", "c:old:ready"}, "delete agent-b-old-1"},
		{"maxUnavailable 2", testDS(rolling("2", "0")), []string{"a:old:ready", "b:old:ready", "c:old:ready"}, "delete agent-a-old-1, delete agent-b-old-1"},
		{"maxUnavailable 34% rounds up to 2", testDS(rolling("34%", "0")), []string{"a:old:ready", "b:old:ready", "c:old:ready"}, "delete agent-a-old-1, delete agent-b-old-1"},
		{"done", testDS(), []string{"a:new:ready", "b:new:ready", "c:new:ready"}, ""},
		{"surge 1: a new pod on one node", testDS(rolling("0", "1")), []string{"a:old:ready", "b:old:ready", "c:old:ready"}, "create on a"},
		{"surge: waits for it", testDS(rolling("0", "1")), []string{"a:old:ready:5", "a:new:unready", "b:old:ready", "c:old:ready"}, ""},
		{"surge: an unavailable old pod gets its new one at once", testDS(rolling("0", "1")), []string{"a:old:ready:5", "a:new:unready", "b:old:unready", "c:old:ready"}, "create on b"},
		{"surge: available new pod retires the old, the next node surges", testDS(rolling("0", "1")), []string{"a:old:ready:5", "a:new:ready", "b:old:ready", "c:old:ready"}, "create on b, delete agent-a-old-5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describe(planRollingUpdate(input(c.ds, threeNodes(), c.pods...))); got != c.want {
				t.Fatalf("plan %q, want %q", got, c.want)
			}
		})
	}
}

func TestCountStatus(t *testing.T) {
	ds := testDS(func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = 120 })
	nodes := []*corev1.Node{node("a"), node("b"), node("c"), node("d", taint("gpu", corev1.TaintEffectNoSchedule))}
	in := input(ds, nodes, "a:new:ready", "b:old:unready", "d:old:ready")
	// a's pod has been ready a minute; it is available in another.
	st, requeue := countStatus(in)
	want := appsv1.DaemonSetStatus{
		DesiredNumberScheduled: 3, CurrentNumberScheduled: 2, NumberMisscheduled: 1,
		NumberReady: 1, NumberAvailable: 0, NumberUnavailable: 3, UpdatedNumberScheduled: 1, ObservedGeneration: 2,
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("status\n got %+v\nwant %+v", st, want)
	}
	if requeue < 59*time.Second || requeue > 61*time.Second {
		t.Fatalf("requeue %v", requeue)
	}
	ds.Spec.MinReadySeconds = 0
	if st, _ = countStatus(in); st.NumberAvailable != 1 || st.NumberUnavailable != 2 {
		t.Fatalf("status %+v", st)
	}
}
