package admission

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestEnabledPlugins(t *testing.T) {
	cases := []struct {
		name            string
		enable, disable []string
		// has and lacks are checked on the result; order is checked on
		// the implemented plugins; err is the exact message.
		has, lacks []string
		order      string
		err        string
	}{
		{name: "defaults, in upstream's order",
			has:   []string{"ResourceQuota", "MutatingAdmissionWebhook"},
			lacks: []string{"AlwaysAdmit", "NodeRestriction", "AlwaysPullImages"},
			order: "NamespaceLifecycle LimitRanger ServiceAccount TaintNodesByCondition PodSecurity Priority DefaultTolerationSeconds DefaultStorageClass StorageObjectInUseProtection PersistentVolumeClaimResize RuntimeClass CertificateApproval CertificateSigning CertificateSubjectRestriction DefaultIngressClass PodTopologyLabels MutatingAdmissionWebhook ValidatingAdmissionPolicy ValidatingAdmissionWebhook ResourceQuota"},
		{name: "disable removes a default",
			disable: []string{"ServiceAccount", "Priority"},
			order:   "NamespaceLifecycle LimitRanger TaintNodesByCondition PodSecurity DefaultTolerationSeconds DefaultStorageClass StorageObjectInUseProtection PersistentVolumeClaimResize RuntimeClass CertificateApproval CertificateSigning CertificateSubjectRestriction DefaultIngressClass PodTopologyLabels MutatingAdmissionWebhook ValidatingAdmissionPolicy ValidatingAdmissionWebhook ResourceQuota"},
		{name: "enable adds, in its place whatever the flag order",
			enable: []string{"AlwaysPullImages", "NodeRestriction"},
			has:    []string{"NodeRestriction", "AlwaysPullImages"},
			order:  "NamespaceLifecycle LimitRanger ServiceAccount NodeRestriction TaintNodesByCondition PodSecurity Priority DefaultTolerationSeconds DefaultStorageClass StorageObjectInUseProtection PersistentVolumeClaimResize RuntimeClass CertificateApproval CertificateSigning CertificateSubjectRestriction DefaultIngressClass PodTopologyLabels MutatingAdmissionWebhook ValidatingAdmissionPolicy ValidatingAdmissionWebhook ResourceQuota"},
		{name: "enabling a default changes nothing", enable: []string{"Priority"},
			order: "NamespaceLifecycle LimitRanger ServiceAccount TaintNodesByCondition PodSecurity Priority DefaultTolerationSeconds DefaultStorageClass StorageObjectInUseProtection PersistentVolumeClaimResize RuntimeClass CertificateApproval CertificateSigning CertificateSubjectRestriction DefaultIngressClass PodTopologyLabels MutatingAdmissionWebhook ValidatingAdmissionPolicy ValidatingAdmissionWebhook ResourceQuota"},
		{name: "unknown names are refused", enable: []string{"Nope"},
			err: `enable-admission-plugins plugin "Nope" is unknown`},
		{name: "unknown disabled names too", disable: []string{"Nope", "Priority"},
			err: `disable-admission-plugins plugin "Nope" is unknown`},
		{name: "a name in both lists is refused", enable: []string{"Priority", "LimitRanger"}, disable: []string{"Priority", "LimitRanger"},
			err: `[LimitRanger Priority] in enable-admission-plugins and disable-admission-plugins overlapped`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EnabledPlugins(tc.enable, tc.disable)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			set := map[string]bool{}
			var implemented []string
			for _, n := range got {
				set[n] = true
				if Implemented(n) {
					implemented = append(implemented, n)
				}
			}
			for _, n := range tc.has {
				if !set[n] {
					t.Errorf("%s missing from %v", n, got)
				}
			}
			for _, n := range tc.lacks {
				if set[n] {
					t.Errorf("%s should be off: %v", n, got)
				}
			}
			if s := strings.Join(implemented, " "); s != tc.order {
				t.Errorf("implemented plugins %q, want %q", s, tc.order)
			}
		})
	}
}

func TestBuildRunsPluginsInUpstreamOrder(t *testing.T) {
	names, err := EnabledPlugins([]string{"NodeRestriction"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	chain := Build(names, []string{"NodeRestriction"}, Deps{Namespaces: namespaces{}, Objects: &objectSet{}, Escalation: &recordingChecker{}})
	// Without an authorizer CertificateApproval and CertificateSigning are
	// left out, and StorageObjectInUseProtection without its controllers.
	want := "[NamespaceLifecycle RBACEscalation LimitRanger ServiceAccount NodeRestriction TaintNodesByCondition PodSecurity Priority DefaultTolerationSeconds " +
		"DefaultStorageClass PersistentVolumeClaimResize RuntimeClass CertificateSubjectRestriction DefaultIngressClass PodTopologyLabels MutatingAdmissionWebhook ValidatingAdmissionPolicy ValidatingAdmissionWebhook]"
	if got := fmt.Sprint(chain.Names()); got != want {
		t.Fatalf("chain %s, want %s", got, want)
	}
	t.Run("ResourceQuota runs last when the server can store quota usage", func(t *testing.T) {
		chain := Build(names, nil, Deps{Namespaces: namespaces{}, Objects: &objectSet{}, Status: rqNoStatus{}})
		if got := chain.Names(); got[len(got)-1] != "ResourceQuota" {
			t.Fatalf("chain %v", got)
		}
	})
	t.Run("without NamespaceLifecycle RBACEscalation still runs", func(t *testing.T) {
		names, _ := EnabledPlugins(nil, []string{"NamespaceLifecycle"})
		chain := Build(names, nil, Deps{Objects: &objectSet{}, Escalation: &recordingChecker{}})
		if got := chain.Names(); len(got) == 0 || got[0] != "RBACEscalation" {
			t.Fatalf("chain %v", got)
		}
	})
}

// TestChainShapesAPod runs a pod through the default chain: the plugins'
// mutations compose (LimitRanger before ServiceAccount before Priority
// before DefaultTolerationSeconds) and every validator passes the result.
func TestChainShapesAPod(t *testing.T) {
	names, err := EnabledPlugins(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := &objectSet{items: []runtime.Object{
		saAccount("default"),
		lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: lrList("cpu", "1"), DefaultRequest: lrList("cpu", "250m")}),
		prioClass("high", 1000, false, ""),
	}}
	ns := namespaces{"ns": {ObjectMeta: metav1.ObjectMeta{Name: "ns"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}}
	chain := Build(names, nil, Deps{Namespaces: ns, Objects: objs})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{PriorityClassName: "high", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	attrs := &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: pod}
	if err := chain.Admit(context.Background(), attrs); err != nil {
		t.Fatal(err)
	}
	if err := chain.Validate(context.Background(), attrs); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	got := fmt.Sprintf("sa=%s mounts=%d volumes=%d priority=%d tolerations=%d cpu=%s/%s",
		pod.Spec.ServiceAccountName, len(c.VolumeMounts), len(pod.Spec.Volumes), *pod.Spec.Priority, len(pod.Spec.Tolerations),
		c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu())
	if want := "sa=default mounts=1 volumes=1 priority=1000 tolerations=2 cpu=250m/1"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// rqNoStatus is a StatusWriter that is never called here.
type rqNoStatus struct{}

func (rqNoStatus) UpdateObjectStatus(context.Context, schema.GroupVersionResource, runtime.Object) (runtime.Object, error) {
	return nil, nil
}
