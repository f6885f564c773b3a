package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// testdata/newgroups_tables.golden holds `kubectl get` of the kinds added
// for issue 17 (VolumeAttributesClasses, ServiceCIDRs, IPAddresses, DRA,
// flow control), with upstream's columns. Rewrite it with
//
//	go test ./internal/apiserver/registry -run TestNewGroupsTables -update
//
// and review the diff.
func newGroupsTableCases(now time.Time) []tableCase {
	meta := func(name, ns string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(now.Add(-age))}
	}
	deleted := meta("old", "default", time.Hour)
	deleted.DeletionTimestamp = &metav1.Time{Time: now}
	alloc := &resourcev1.AllocationResult{}
	user := resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "web", UID: "1"}
	dangling := flowSchema("orphan", "gone", 700, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, nil)
	dangling.ObjectMeta = meta("orphan", "", time.Minute)
	dangling.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue}}
	exemptFS := flowSchema("exempt", "exempt", 1, "", nil)
	exemptFS.ObjectMeta = meta("exempt", "", 48*time.Hour)
	exemptPL, globalPL, catchAll := flowExemptLevel(), flowLimitedLevel("global-default", 20, 50, flowQueuing(128, 6)), flowLimitedLevel("catch-all", 5, 0, nil)
	exemptPL.ObjectMeta, globalPL.ObjectMeta, catchAll.ObjectMeta = meta("exempt", "", time.Hour), meta("global-default", "", time.Hour), meta("catch-all", "", time.Hour)
	return []tableCase{
		{"storage.k8s.io", "volumeattributesclasses", []runtime.Object{
			&storagev1.VolumeAttributesClass{ObjectMeta: meta("gold", "", 3*time.Hour), DriverName: "ebs.csi.aws.com", Parameters: map[string]string{"iops": "3000"}},
		}},
		{"networking.k8s.io", "servicecidrs", []runtime.Object{
			&networkingv1.ServiceCIDR{ObjectMeta: meta("kubernetes", "", 24*time.Hour), Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12", "fd00::/108"}}},
		}},
		{"networking.k8s.io", "ipaddresses", []runtime.Object{
			&networkingv1.IPAddress{ObjectMeta: meta("10.96.0.10", "", time.Hour),
				Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "kube-system", Name: "kube-dns"}}},
			&networkingv1.IPAddress{ObjectMeta: meta("10.96.0.20", "", time.Hour),
				Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Group: "gateway.networking.k8s.io", Resource: "gateways", Name: "gw"}}},
		}},
		{"resource.k8s.io", "deviceclasses", []runtime.Object{&resourcev1.DeviceClass{ObjectMeta: meta("gpu.example.com", "", time.Hour)}}},
		{"resource.k8s.io", "resourceclaims", []runtime.Object{
			&resourcev1.ResourceClaim{ObjectMeta: meta("pending", "default", time.Minute)},
			&resourcev1.ResourceClaim{ObjectMeta: meta("allocated", "default", time.Minute), Status: resourcev1.ResourceClaimStatus{Allocation: alloc}},
			&resourcev1.ResourceClaim{ObjectMeta: meta("in-use", "default", time.Minute), Status: resourcev1.ResourceClaimStatus{Allocation: alloc,
				ReservedFor: []resourcev1.ResourceClaimConsumerReference{user}}},
			&resourcev1.ResourceClaim{ObjectMeta: deleted, Status: resourcev1.ResourceClaimStatus{Allocation: alloc}},
		}},
		{"resource.k8s.io", "resourceclaimtemplates", []runtime.Object{&resourcev1.ResourceClaimTemplate{ObjectMeta: meta("gpu", "default", time.Hour)}}},
		{"resource.k8s.io", "resourceslices", []runtime.Object{
			&resourcev1.ResourceSlice{ObjectMeta: meta("node-1-gpu-x7k2p", "", time.Hour), Spec: resourcev1.ResourceSliceSpec{
				Driver: "gpu.example.com", NodeName: new("node-1"), Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1}}},
			&resourcev1.ResourceSlice{ObjectMeta: meta("network-x9", "", time.Hour), Spec: resourcev1.ResourceSliceSpec{
				Driver: "net.example.com", AllNodes: new(true), Pool: resourcev1.ResourcePool{Name: "fabric", ResourceSliceCount: 1}}},
		}},
		{"flowcontrol.apiserver.k8s.io", "flowschemas", []runtime.Object{exemptFS, dangling}},
		{"flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations", []runtime.Object{exemptPL, catchAll, globalPL}},
		{"", "componentstatuses", []runtime.Object{
			&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "controller-manager"},
				Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse,
					Error: `Get "https://127.0.0.1:10257/healthz": dial tcp 127.0.0.1:10257: connect: connection refused`}}},
			&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "etcd-0"},
				Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}}},
			&corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "scheduler"}},
		}},
	}
}

func TestNewGroupsTables(t *testing.T) {
	var got strings.Builder
	for _, tc := range newGroupsTableCases(time.Now()) {
		r := mustResource(t, tc.group, tc.resource)
		if r.Table == nil {
			t.Fatalf("%s has no table", tc.resource)
		}
		t.Run(tc.resource, func(t *testing.T) { groupsCheckCells(t, r.Table, tc.objects) })
		fmt.Fprintf(&got, "$ kubectl get %s.%s\n%s\n", tc.resource, tc.group, renderTable(t, r.Table, tc.objects, false))
	}
	path := filepath.Join("testdata", "newgroups_tables.golden")
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
