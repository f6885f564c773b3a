package daemonset

import (
	"strconv"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// discardLog is the logger component-helpers asks for: it logs only for
// the comparison toleration operators, which are off (an alpha feature).
var discardLog = logr.Discard()

// Which nodes a DaemonSet's pods belong on, and the pods it makes for
// them. Pure: nodes and sets in, answers out.

// templateGenerationLabel carries the template generation on daemon pods,
// as upstream's pods do (older clients compare it).
const templateGenerationLabel = "pod-template-generation"

var dsKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

// daemonTolerations are added to every daemon pod, so that a node's
// conditions (reported as taints) neither keep it from getting its
// daemon pod nor evict it: NotReady and Unreachable nodes keep their pods
// for good (no tolerationSeconds), and pressure and cordoning do not
// stop new ones. hostNetwork pods need no pod network, so they also
// tolerate network-unavailable.
func daemonTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

// addDaemonTolerations adds the daemon tolerations to spec, replacing a
// toleration of the same key, operator, value and effect (one with a
// tolerationSeconds would evict the pod).
func addDaemonTolerations(spec *corev1.PodSpec) {
	for _, want := range daemonTolerations(spec.HostNetwork) {
		replaced := false
		for i, t := range spec.Tolerations {
			if t.Key == want.Key && t.Operator == want.Operator && t.Value == want.Value && t.Effect == want.Effect {
				spec.Tolerations[i] = want
				replaced = true
				break
			}
		}
		if !replaced {
			spec.Tolerations = append(spec.Tolerations, want)
		}
	}
}

// podTemplate is ds's template as its pods get it: the daemon
// tolerations, the revision's hash label and the template generation.
func podTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	addDaemonTolerations(&t.Spec)
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	if hash != "" {
		t.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	}
	if g, ok := templateGeneration(ds); ok {
		t.Labels[templateGenerationLabel] = strconv.FormatInt(g, 10)
	}
	return t
}

// templateGeneration is the generation the API server counts template
// changes with, in the deprecated.daemonset.template.generation
// annotation.
func templateGeneration(ds *appsv1.DaemonSet) (int64, bool) {
	s, ok := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if !ok {
		return 0, false
	}
	g, err := strconv.ParseInt(s, 10, 64)
	return g, err == nil
}

// podForNode is the pod ds makes for node: the template, named
// "<ds>-xxxxx", controlled by ds, and pinned to the node by a required
// node affinity on its name, so the scheduler binds it there (and
// preempts for it) as for any pod.
func podForNode(ds *appsv1.DaemonSet, t *corev1.PodTemplateSpec, node string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    ds.Name + "-",
			Namespace:       ds.Namespace,
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if len(t.Finalizers) > 0 {
		pod.Finalizers = append([]string(nil), t.Finalizers...)
	}
	pinToNode(&pod.Spec, node)
	return pod
}

// pinToNode replaces the required node affinity terms with one matching
// the node's name. The node was already checked against the template's
// own terms, so nothing is lost.
func pinToNode(spec *corev1.PodSpec, node string) {
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node},
	}}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{term},
	}
}

// targetNode is the node a daemon pod is for: where it is bound, or,
// while it waits for the scheduler, the node its affinity names.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// shouldRun answers, as the scheduler would, whether ds's pod belongs on
// node: shouldRun, a new pod may be placed there; shouldContinue, a pod
// already there may stay. They differ for a node with a NoSchedule taint
// the pod does not tolerate: nothing new goes there, but what runs stays
// (only NoExecute evicts).
func shouldRun(node *corev1.Node, ds *appsv1.DaemonSet) (run, cont bool) {
	spec := &ds.Spec.Template.Spec
	if spec.NodeName != "" && spec.NodeName != node.Name {
		return false, false
	}
	if !nodeMatches(spec, node) {
		return false, false
	}
	tolerations := append(append([]corev1.Toleration(nil), spec.Tolerations...), daemonTolerations(spec.HostNetwork)...)
	run, cont = true, true
	for i := range node.Spec.Taints {
		taint := &node.Spec.Taints[i]
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if corev1helpers.TolerationsTolerateTaint(discardLog, tolerations, taint, false) {
			continue
		}
		run = false
		if taint.Effect == corev1.TaintEffectNoExecute {
			cont = false
		}
	}
	return run, cont
}

// nodeMatches applies the pod's nodeSelector and required node affinity
// to node, as the scheduler's NodeAffinity filter does (both through
// component-helpers): the selector's labels must all match; of the
// required terms one must. A term that cannot be parsed, or has neither
// expressions nor fields, matches nothing.
func nodeMatches(spec *corev1.PodSpec, node *corev1.Node) bool {
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: spec.NodeSelector, Affinity: spec.Affinity}}
	ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return ok
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
