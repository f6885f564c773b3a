package registry_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestNewAPIGroupsEndToEnd serves the kinds added for Kubernetes 1.36
// users and upstream components (issue 17 items 7 and 14):
// VolumeAttributesClasses, ServiceCIDRs and IPAddresses, Dynamic Resource
// Allocation (resource.k8s.io) and API Priority and Fairness objects
// (flowcontrol.apiserver.k8s.io), through client-go and kubectl.
func TestNewAPIGroupsEndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := c.Client

	t.Run("volumeattributesclasses", func(t *testing.T) { checkVolumeAttributesClasses(ctx, t, cs) })
	t.Run("servicecidrs", func(t *testing.T) { checkServiceCIDRs(ctx, t, cs) })
	t.Run("kubectl", func(t *testing.T) { checkNewGroupsKubectl(t, c.Server.Kubeconfig) })
}

func checkVolumeAttributesClasses(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	vacs := cs.StorageV1().VolumeAttributesClasses()
	vac, err := vacs.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"},
		DriverName: "ebs.csi.aws.com", Parameters: map[string]string{"iops": "3000"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vac.Labels = map[string]string{"tier": "gold"}
	if vac, err = vacs.Update(ctx, vac, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	vac.Parameters["iops"] = "6000"
	vac.DriverName = "other.example.com"
	_, err = vacs.Update(ctx, vac, metav1.UpdateOptions{})
	wantInvalid(t, err, "driverName", "parameters")
	_, err = vacs.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, DriverName: "ebs.csi.aws.com"},
		metav1.CreateOptions{})
	wantInvalid(t, err, "parameters")
	list, err := vacs.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"})
	if err != nil || len(list.Items) != 1 || list.Items[0].Parameters["iops"] != "3000" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := vacs.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "doomed"},
		DriverName: "ebs.csi.aws.com", Parameters: map[string]string{"iops": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vacs.Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func checkServiceCIDRs(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	nw := cs.NetworkingV1()
	cidr, err := nw.ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.200.0.0/16"}},
		// A client cannot set the status on create.
		Status: networkingv1.ServiceCIDRStatus{Conditions: []metav1.Condition{{Type: "Ready", Status: "True", Reason: "x", LastTransitionTime: metav1.Now()}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cidr.Status.Conditions) != 0 {
		t.Errorf("status set on create: %+v", cidr.Status)
	}
	cidr.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Ready", LastTransitionTime: metav1.Now()}}
	if cidr, err = nw.ServiceCIDRs().UpdateStatus(ctx, cidr, metav1.UpdateOptions{}); err != nil || len(cidr.Status.Conditions) != 1 {
		t.Fatalf("status: %+v %v", cidr, err)
	}
	cidr.Spec.CIDRs = []string{"10.201.0.0/16"}
	_, err = nw.ServiceCIDRs().Update(ctx, cidr, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.cidrs[0]")
	cidr.Spec.CIDRs = []string{"10.200.0.0/16", "fd00:10:200::/112"}
	if _, err = nw.ServiceCIDRs().Update(ctx, cidr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("to dual stack: %v", err)
	}
	_, err = nw.ServiceCIDRs().Create(ctx, &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.0.0.1/8"}}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.cidrs[0]")

	ips := nw.IPAddresses()
	if _, err := ips.Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.200.0.7"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = ips.Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Name: "web"}}}, metav1.CreateOptions{})
	wantInvalid(t, err, "metadata.name")
	ip, err := ips.Get(ctx, "10.200.0.7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ip.Spec.ParentRef.Name = "db"
	_, err = ips.Update(ctx, ip, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.parentRef")
	if err := nw.ServiceCIDRs().Delete(ctx, "extra", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkNewGroupsKubectl checks the tables kubectl prints for the objects
// the other subtests left, and api-resources.
func checkNewGroupsKubectl(t *testing.T, kubeconfig string) {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found: set $KUBECTL or put kubectl on PATH")
		}
	}
	kubectl := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return string(out)
	}
	for _, tc := range newGroupsKubectlGets {
		out := kubectl("get", tc.resource)
		if !groupsHasLine(out, tc.header, false) {
			t.Errorf("kubectl get %s: no header %q in:\n%s", tc.resource, tc.header, out)
		}
		for _, row := range tc.rows {
			if !groupsHasLine(out, row, true) {
				t.Errorf("kubectl get %s: no row starting %q in:\n%s", tc.resource, row, out)
			}
		}
	}
	out := kubectl("api-resources")
	for _, want := range newGroupsAPIResources {
		if !groupsHasLine(out, want, false) {
			t.Errorf("api-resources lacks %q:\n%s", want, out)
		}
	}
}

// newGroupsKubectlGets: per resource, the header `kubectl get` prints
// and the start of rows (the cells before AGE, which varies).
var newGroupsKubectlGets = []struct {
	resource, header string
	rows             []string
}{
	{"volumeattributesclasses", "NAME DRIVERNAME AGE", []string{"gold ebs.csi.aws.com"}},
	{"servicecidrs", "NAME CIDRS AGE", nil},
	{"ipaddresses", "NAME PARENTREF AGE", []string{"10.200.0.7 services/default/web"}},
}

var newGroupsAPIResources = []string{
	"volumeattributesclasses vac storage.k8s.io/v1 false VolumeAttributesClass",
	"servicecidrs networking.k8s.io/v1 false ServiceCIDR",
	"ipaddresses ip networking.k8s.io/v1 false IPAddress",
}
