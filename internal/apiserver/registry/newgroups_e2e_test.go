package registry_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	resourcev1 "k8s.io/api/resource/v1"
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
	t.Run("dra", func(t *testing.T) { checkDRA(ctx, t, cs) })
	t.Run("flowcontrol", func(t *testing.T) { checkFlowControl(ctx, t, cs) })
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
	{"deviceclasses", "NAME AGE", []string{"gpu.example.com"}},
	{"resourceclaims", "NAME STATE AGE", []string{"gpu allocated,reserved", "spare pending"}},
	{"resourceclaimtemplates", "NAME AGE", []string{"gpu"}},
	{"resourceslices", "NAME NODE DRIVER POOL AGE", []string{"node-1-gpu node-1 gpu.example.com node-1"}},
	{"flowschemas", "NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL",
		[]string{"exempt exempt 1 <none>", "probes exempt 2 <none>", "team-a workload-low 500 ByUser"}},
	{"prioritylevelconfigurations", "NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE QUEUELENGTHLIMIT AGE",
		[]string{"exempt Exempt <none> <none> <none> <none>", "catch-all Limited 5 <none> <none> <none>", "global-default Limited 20 128 6 50"}},
}

var newGroupsAPIResources = []string{
	"volumeattributesclasses vac storage.k8s.io/v1 false VolumeAttributesClass",
	"servicecidrs networking.k8s.io/v1 false ServiceCIDR",
	"ipaddresses ip networking.k8s.io/v1 false IPAddress",
	"deviceclasses resource.k8s.io/v1 false DeviceClass",
	"resourceclaims resource.k8s.io/v1 true ResourceClaim",
	"resourceclaimtemplates resource.k8s.io/v1 true ResourceClaimTemplate",
	"resourceslices resource.k8s.io/v1 false ResourceSlice",
	"flowschemas flowcontrol.apiserver.k8s.io/v1 false FlowSchema",
	"prioritylevelconfigurations flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration",
}

func checkDRA(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	rs := cs.ResourceV1()
	sel := func(expr string) []resourcev1.DeviceSelector {
		return []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}}
	}
	class, err := rs.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com"},
		Spec: resourcev1.DeviceClassSpec{Selectors: sel(`device.driver == "gpu.example.com"`)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if class.Generation != 1 {
		t.Errorf("generation %d", class.Generation)
	}
	_, err = rs.DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
		Spec: resourcev1.DeviceClassSpec{Selectors: sel(`device.driver ==`)}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec.selectors[0].cel.expression")

	slice, err := rs.ResourceSlices().Create(ctx, &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: "node-1-gpu"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "gpu.example.com", NodeName: new("node-1"),
			Pool:    resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0"}, {Name: "gpu-1"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slice.Spec.NodeName = new("node-2")
	_, err = rs.ResourceSlices().Update(ctx, slice, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.nodeName")
	bySel, err := rs.ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=node-1"})
	if err != nil || len(bySel.Items) != 1 {
		t.Fatalf("slices of node-1: %v %v", bySel, err)
	}

	claims := rs.ResourceClaims("default")
	spec := resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu",
		Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}
	claim, err := claims.Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := claim.Spec.Devices.Requests[0].Exactly; e.Count != 1 || e.AllocationMode != resourcev1.DeviceAllocationModeExactCount {
		t.Errorf("defaults: %+v", e)
	}
	if _, err := claims.Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "spare"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler's write: allocation and the pod reserving the claim.
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: "gpu.example.com", Pool: "node-1", Device: "gpu-0"}}}}
	claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "web", UID: "0b5a"}}
	if claim, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation.Devices.Results[0].Device = "gpu-1"
	_, err = claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	wantInvalid(t, err, "status.allocation")
	claim, err = claims.Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Spec.Devices.Requests[0].Exactly.Count = 2
	_, err = claims.Update(ctx, claim, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec")

	tmpls := rs.ResourceClaimTemplates("default")
	if _, err := tmpls.Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: spec}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tmpls.Delete(ctx, "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tmpls.Create(ctx, &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: spec}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := claims.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("claims: %v %v", list, err)
	}
}

func checkFlowControl(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	fc := cs.FlowcontrolV1()
	// The server's bootstrap: mandatory and suggested objects.
	fsList, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plList, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fsList.Items) != 13 || len(plList.Items) != 8 {
		t.Errorf("bootstrap: %d flow schemas, %d priority levels; want 13 and 8", len(fsList.Items), len(plList.Items))
	}
	exempt, err := fc.FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{})
	if err != nil || exempt.Spec.MatchingPrecedence != 1 || exempt.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
		t.Errorf("exempt: %+v %v", exempt, err)
	}

	pl, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *pl.Spec.Limited.NominalConcurrencyShares != 30 {
		t.Errorf("defaults: %+v", pl.Spec.Limited)
	}
	pl.Status.Conditions = []flowcontrolv1.PriorityLevelConfigurationCondition{{Type: "Seen", Status: flowcontrolv1.ConditionTrue}}
	if _, err := fc.PriorityLevelConfigurations().UpdateStatus(ctx, pl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fs, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			MatchingPrecedence: 500, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "team-a"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"team-a"}}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs.Spec.MatchingPrecedence = 20000
	_, err = fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec.matchingPrecedence")
	if err := fc.PriorityLevelConfigurations().Delete(ctx, "team-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
