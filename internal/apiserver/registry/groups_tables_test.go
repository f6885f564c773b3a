package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The golden file testdata/groups_tables.golden holds `kubectl get` as it
// renders the tables of policy, scheduling, storage, node and networking
// resources. Rewrite it with
//
//	go test ./internal/apiserver/registry -run TestGroupsTables -update
//
// and review the diff.

func groupsTableCases(now time.Time) []tableCase {
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	om := func(name string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age)}
	}
	cluster := func(name string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, CreationTimestamp: ago(age)}
	}
	prefix := networkingv1.PathTypePrefix
	backend := networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}
	rule := func(host string) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: backend}}}}}
	}
	defaultSC := cluster("standard", 30*24*time.Hour)
	defaultSC.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}

	return []tableCase{
		{"policy", "poddisruptionbudgets", []runtime.Object{
			&policyv1.PodDisruptionBudget{ObjectMeta: om("web", 2*time.Hour), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(2))},
				Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
			&policyv1.PodDisruptionBudget{ObjectMeta: om("db", 5*time.Minute), Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: new(intstr.FromString("25%"))}},
		}},
		{"scheduling.k8s.io", "priorityclasses", []runtime.Object{
			&schedulingv1.PriorityClass{ObjectMeta: cluster("system-node-critical", 40*24*time.Hour), Value: 2000001000,
				PreemptionPolicy: new(corev1.PreemptLowerPriority)},
			&schedulingv1.PriorityClass{ObjectMeta: cluster("batch", time.Hour), Value: -10, GlobalDefault: true, PreemptionPolicy: new(corev1.PreemptNever)},
			&schedulingv1.PriorityClass{ObjectMeta: cluster("legacy", time.Hour), Value: 5},
		}},
		{"storage.k8s.io", "storageclasses", []runtime.Object{
			&storagev1.StorageClass{ObjectMeta: defaultSC, Provisioner: "rancher.io/local-path",
				ReclaimPolicy: new(corev1.PersistentVolumeReclaimDelete), VolumeBindingMode: new(storagev1.VolumeBindingWaitForFirstConsumer)},
			&storagev1.StorageClass{ObjectMeta: cluster("fast", 3*time.Hour), Provisioner: "ebs.csi.aws.com",
				ReclaimPolicy: new(corev1.PersistentVolumeReclaimRetain), AllowVolumeExpansion: new(true)},
		}},
		{"storage.k8s.io", "csidrivers", []runtime.Object{
			&storagev1.CSIDriver{ObjectMeta: cluster("ebs.csi.aws.com", 10*24*time.Hour), Spec: storagev1.CSIDriverSpec{
				AttachRequired: new(true), PodInfoOnMount: new(false), StorageCapacity: new(true),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Persistent", "Ephemeral"}}},
			&storagev1.CSIDriver{ObjectMeta: cluster("secrets-store.csi.k8s.io", time.Hour), Spec: storagev1.CSIDriverSpec{
				AttachRequired: new(false), PodInfoOnMount: new(true), RequiresRepublish: new(true),
				TokenRequests: []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "aws"}}}},
		}},
		{"storage.k8s.io", "csinodes", []runtime.Object{
			&storagev1.CSINode{ObjectMeta: cluster("node-1", 10*24*time.Hour), Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
				{Name: "ebs.csi.aws.com", NodeID: "i-0123"}, {Name: "efs.csi.aws.com", NodeID: "i-0123"}}}},
		}},
		{"storage.k8s.io", "csistoragecapacities", []runtime.Object{
			&storagev1.CSIStorageCapacity{ObjectMeta: om("csisc-8m2xt", time.Hour), StorageClassName: "fast", Capacity: new(resource.MustParse("100Gi"))},
			&storagev1.CSIStorageCapacity{ObjectMeta: om("csisc-x7b4k", time.Hour), StorageClassName: "fast"},
		}},
		{"storage.k8s.io", "volumeattachments", []runtime.Object{
			&storagev1.VolumeAttachment{ObjectMeta: cluster("csi-4c1d9e", 20*time.Minute), Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: new("pvc-0a1b")}},
				Status: storagev1.VolumeAttachmentStatus{Attached: true}},
			&storagev1.VolumeAttachment{ObjectMeta: cluster("csi-77aa01", time.Minute), Spec: storagev1.VolumeAttachmentSpec{
				Attacher: "ebs.csi.aws.com", NodeName: "node-2", Source: storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}}}},
		}},
		{"node.k8s.io", "runtimeclasses", []runtime.Object{
			&nodev1.RuntimeClass{ObjectMeta: cluster("gvisor", 6*time.Hour), Handler: "runsc"},
		}},
		{"networking.k8s.io", "ingresses", []runtime.Object{
			&networkingv1.Ingress{ObjectMeta: om("web", 3*time.Hour), Spec: networkingv1.IngressSpec{IngressClassName: new("nginx"),
				Rules: []networkingv1.IngressRule{rule("example.com"), rule("www.example.com")},
				TLS:   []networkingv1.IngressTLS{{Hosts: []string{"example.com"}, SecretName: "web-tls"}}},
				Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{
					{IP: "203.0.113.10"}, {IP: "192.0.2.7"}, {Hostname: "lb-1234567890.elb.example.com"}}}}},
			&networkingv1.Ingress{ObjectMeta: om("catch-all", time.Minute), Spec: networkingv1.IngressSpec{DefaultBackend: &backend}},
			&networkingv1.Ingress{ObjectMeta: om("many", time.Minute), Spec: networkingv1.IngressSpec{
				Rules: []networkingv1.IngressRule{rule("a.example.com"), rule(""), rule("b.example.com"), rule("c.example.com"), rule("d.example.com")}}},
		}},
		{"networking.k8s.io", "ingressclasses", []runtime.Object{
			&networkingv1.IngressClass{ObjectMeta: cluster("nginx", 2*24*time.Hour), Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}},
			&networkingv1.IngressClass{ObjectMeta: cluster("external", time.Hour), Spec: networkingv1.IngressClassSpec{Controller: "example.com/lb",
				Parameters: &networkingv1.IngressClassParametersReference{APIGroup: new("k8s.example.com"), Kind: "IngressParameters", Name: "external"}}},
		}},
		{"networking.k8s.io", "networkpolicies", []runtime.Object{
			&networkingv1.NetworkPolicy{ObjectMeta: om("allow-web", time.Hour), Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
			&networkingv1.NetworkPolicy{ObjectMeta: om("default-deny", 4*24*time.Hour)},
		}},
	}
}

func TestGroupsTables(t *testing.T) {
	var got strings.Builder
	for _, tc := range groupsTableCases(time.Now()) {
		r := mustResource(t, tc.group, tc.resource)
		if r.Table == nil {
			t.Fatalf("%s has no table", tc.resource)
		}
		t.Run(tc.resource, func(t *testing.T) {
			groupsCheckCells(t, r.Table, tc.objects)
		})
		fmt.Fprintf(&got, "$ kubectl get %s.%s\n%s\n", tc.resource, tc.group, renderTable(t, r.Table, tc.objects, false))
	}

	path := filepath.Join("testdata", "groups_tables.golden")
	if updateGolden() {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("tables differ from %s (run with -update and review the diff):\n%s", path, lineDiff(string(want), got.String()))
	}
}

// groupsCheckCells holds each cell to its column's type: kubectl prints a
// boolean cell as true/false and an integer cell as a number, so a cell of
// another Go type would print differently from upstream.
func groupsCheckCells(t *testing.T, tbl *Table, objects []runtime.Object) {
	t.Helper()
	if tbl.Columns[0].Name != "Name" || tbl.Columns[0].Format != "name" {
		t.Errorf("first column is %+v, want the name column", tbl.Columns[0])
	}
	for _, obj := range objects {
		cells := tbl.Row(obj)
		if len(cells) != len(tbl.Columns) {
			t.Fatalf("%d cells for %d columns", len(cells), len(tbl.Columns))
		}
		for i, cell := range cells {
			c := tbl.Columns[i]
			var ok bool
			switch c.Type {
			case "integer":
				_, ok = cell.(int64)
			case "boolean":
				_, ok = cell.(bool)
			default:
				// AllowVolumeExpansion is declared a string column upstream
				// but filled with a bool; kubectl prints it either way.
				_, ok = cell.(string)
				if _, isBool := cell.(bool); isBool {
					ok = true
				}
			}
			if !ok {
				t.Errorf("column %s (%s): cell %v of type %T", c.Name, c.Type, cell, cell)
			}
		}
	}
}
