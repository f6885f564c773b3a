package quota

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// rl parses "cpu=100m,memory=64Mi".
func rl(s string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if s == "" {
		return out
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// show prints a list sorted, values canonical: "cpu=100m memory=64Mi".
func show(l corev1.ResourceList) string {
	var parts []string
	for _, n := range Names(l) {
		q := l[n]
		parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
	}
	return strings.Join(parts, " ")
}

func ctr(name, requests, limits string) corev1.Container {
	c := corev1.Container{Name: name, Image: "img"}
	if requests != "" {
		c.Resources.Requests = rl(requests)
	}
	if limits != "" {
		c.Resources.Limits = rl(limits)
	}
	return c
}

func pod(containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: containers},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func with(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }

func TestPodUsage(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	grace := int64(30)
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		want  string
		until time.Time
	}{
		{name: "requests and limits under every name",
			pod:  pod(ctr("a", "cpu=100m,memory=64Mi", "cpu=200m,memory=128Mi")),
			want: "count/pods=1 cpu=100m limits.cpu=200m limits.memory=128Mi memory=64Mi pods=1 requests.cpu=100m requests.memory=64Mi"},
		{name: "best effort counts the pod only",
			pod:  pod(ctr("a", "", "")),
			want: "count/pods=1 pods=1"},
		{name: "containers add up",
			pod:  pod(ctr("a", "cpu=100m", ""), ctr("b", "cpu=250m", "")),
			want: "count/pods=1 cpu=350m pods=1 requests.cpu=350m"},
		{name: "a larger init container sets the peak",
			pod: with(pod(ctr("a", "cpu=100m", ""), ctr("b", "cpu=100m", "")), func(p *corev1.Pod) {
				p.Spec.InitContainers = []corev1.Container{ctr("init", "cpu=500m,memory=1Gi", "")}
			}),
			want: "count/pods=1 cpu=500m memory=1Gi pods=1 requests.cpu=500m requests.memory=1Gi"},
		{name: "sidecars run beside the app and the later init containers",
			pod: with(pod(ctr("a", "cpu=100m", "")), func(p *corev1.Pod) {
				side := ctr("side", "cpu=50m", "")
				side.RestartPolicy = &always
				p.Spec.InitContainers = []corev1.Container{side, ctr("init", "cpu=200m", "")}
			}),
			// max(100m + 50m, 200m + 50m)
			want: "count/pods=1 cpu=250m pods=1 requests.cpu=250m"},
		{name: "overhead adds to requests, and to limits that are set",
			pod: with(pod(ctr("a", "cpu=100m,memory=64Mi", "cpu=1")), func(p *corev1.Pod) {
				p.Spec.Overhead = rl("cpu=10m,memory=10Mi")
			}),
			want: "count/pods=1 cpu=110m limits.cpu=1010m memory=74Mi pods=1 requests.cpu=110m requests.memory=74Mi"},
		{name: "pod-level resources replace the containers'",
			pod: with(pod(ctr("a", "cpu=100m", ""), ctr("b", "cpu=100m,memory=1Gi", "")), func(p *corev1.Pod) {
				p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu=1"), Limits: rl("cpu=2")}
			}),
			want: "count/pods=1 cpu=1 limits.cpu=2 memory=1Gi pods=1 requests.cpu=1 requests.memory=1Gi"},
		{name: "ephemeral storage",
			pod:  pod(ctr("a", "ephemeral-storage=1Gi", "ephemeral-storage=2Gi")),
			want: "count/pods=1 ephemeral-storage=1Gi limits.ephemeral-storage=2Gi pods=1 requests.ephemeral-storage=1Gi"},
		{name: "extended resources only as requests.<name>",
			pod:  pod(ctr("a", "example.com/gpu=2", "example.com/gpu=2")),
			want: "count/pods=1 pods=1 requests.example.com/gpu=2"},
		{name: "hugepages under both names",
			pod:  pod(ctr("a", "hugepages-2Mi=4Mi,memory=1Gi", "hugepages-2Mi=4Mi,memory=1Gi")),
			want: "count/pods=1 hugepages-2Mi=4Mi limits.memory=1Gi memory=1Gi pods=1 requests.hugepages-2Mi=4Mi requests.memory=1Gi"},
		{name: "a resize in progress counts the larger",
			pod: with(pod(ctr("a", "cpu=100m", "cpu=100m")), func(p *corev1.Pod) {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "a",
					Resources: &corev1.ResourceRequirements{Requests: rl("cpu=300m"), Limits: rl("cpu=300m")}}}
			}),
			want: "count/pods=1 cpu=300m limits.cpu=300m pods=1 requests.cpu=300m"},
		{name: "succeeded is only an object",
			pod:  with(pod(ctr("a", "cpu=1", "")), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			want: "count/pods=1"},
		{name: "failed is only an object",
			pod:  with(pod(ctr("a", "cpu=1", "")), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
			want: "count/pods=1"},
		{name: "terminating within its grace still counts, until deletionTimestamp+grace",
			pod: with(pod(ctr("a", "cpu=1", "")), func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: t0.Add(10 * time.Second)}
				p.DeletionGracePeriodSeconds = &grace
			}),
			want:  "count/pods=1 cpu=1 pods=1 requests.cpu=1",
			until: t0.Add(40 * time.Second)},
		{name: "terminating past deletionTimestamp+grace stops counting",
			pod: with(pod(ctr("a", "cpu=1", "")), func(p *corev1.Pod) {
				p.DeletionTimestamp = &metav1.Time{Time: t0.Add(-31 * time.Second)}
				p.DeletionGracePeriodSeconds = &grace
			}),
			want: "count/pods=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, until := PodUsage(tc.pod, t0)
			if show(got) != tc.want {
				t.Errorf("usage\n got %s\nwant %s", show(got), tc.want)
			}
			if !until.Equal(tc.until) {
				t.Errorf("until = %v, want %v", until, tc.until)
			}
		})
	}
}

func TestPodMatchesScope(t *testing.T) {
	deadline := int64(60)
	exists := func(s corev1.ResourceQuotaScope) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists}
	}
	prio := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	bestEffort := pod(ctr("a", "", ""))
	burstable := pod(ctr("a", "cpu=100m", ""))
	onlyLimitsZero := pod(ctr("a", "cpu=0", ""))
	recordedBurstable := with(pod(ctr("a", "", "")), func(p *corev1.Pod) { p.Status.QOSClass = corev1.PodQOSBurstable })
	withDeadline := with(pod(ctr("a", "", "")), func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = &deadline })
	high := with(pod(ctr("a", "", "")), func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })
	crossNS := with(pod(ctr("a", "", "")), func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
				PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone", NamespaceSelector: &metav1.LabelSelector{}}}},
		}}
	})
	sameNS := with(pod(ctr("a", "", "")), func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}},
		}}
	})
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		req  corev1.ScopedResourceSelectorRequirement
		want bool
	}{
		{"best effort is BestEffort", bestEffort, exists(corev1.ResourceQuotaScopeBestEffort), true},
		{"best effort is not NotBestEffort", bestEffort, exists(corev1.ResourceQuotaScopeNotBestEffort), false},
		{"a cpu request is NotBestEffort", burstable, exists(corev1.ResourceQuotaScopeNotBestEffort), true},
		{"a cpu request is not BestEffort", burstable, exists(corev1.ResourceQuotaScopeBestEffort), false},
		{"a zero request is still best effort", onlyLimitsZero, exists(corev1.ResourceQuotaScopeBestEffort), true},
		{"the recorded QoS class wins", recordedBurstable, exists(corev1.ResourceQuotaScopeBestEffort), false},
		{"a deadline is Terminating", withDeadline, exists(corev1.ResourceQuotaScopeTerminating), true},
		{"a deadline is not NotTerminating", withDeadline, exists(corev1.ResourceQuotaScopeNotTerminating), false},
		{"no deadline is NotTerminating", bestEffort, exists(corev1.ResourceQuotaScopeNotTerminating), true},
		{"no deadline is not Terminating", bestEffort, exists(corev1.ResourceQuotaScopeTerminating), false},
		{"priority class exists", high, prio(corev1.ScopeSelectorOpExists), true},
		{"no priority class does not exist", bestEffort, prio(corev1.ScopeSelectorOpExists), false},
		{"priority class in", high, prio(corev1.ScopeSelectorOpIn, "high", "medium"), true},
		{"priority class not in", high, prio(corev1.ScopeSelectorOpIn, "low"), false},
		{"NotIn excludes it", high, prio(corev1.ScopeSelectorOpNotIn, "high"), false},
		{"NotIn takes pods without a class", bestEffort, prio(corev1.ScopeSelectorOpNotIn, "high"), true},
		{"DoesNotExist takes pods without a class", bestEffort, prio(corev1.ScopeSelectorOpDoesNotExist), true},
		{"DoesNotExist excludes pods with one", high, prio(corev1.ScopeSelectorOpDoesNotExist), false},
		{"a namespace selector in anti-affinity is cross-namespace", crossNS, exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), true},
		{"plain affinity is not", sameNS, exists(corev1.ResourceQuotaScopeCrossNamespacePodAffinity), false},
		{"pods are never in the volume attributes class scope", bestEffort, exists(corev1.ResourceQuotaScopeVolumeAttributesClass), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podMatchesScope(tc.pod, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodMatching(t *testing.T) {
	in := []corev1.ResourceName{"pods", "count/pods", "requests.cpu", "limits.memory", "cpu", "hugepages-1Gi", "requests.hugepages-2Mi",
		"requests.example.com/gpu", "requests.storage", "services", "configmaps", "count/deployments.apps", "gold.storageclass.storage.k8s.io/requests.storage",
		"requests.kubernetes.io/whatever"}
	got := podMatching(in)
	slices.Sort(got)
	want := []corev1.ResourceName{"count/pods", "cpu", "hugepages-1Gi", "limits.memory", "pods", "requests.cpu", "requests.example.com/gpu", "requests.hugepages-2Mi"}
	if !slices.Equal(got, want) {
		t.Errorf("podMatching = %v\nwant %v", got, want)
	}
}
