package registry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestAPIGroupsEndToEnd serves the policy, scheduling, storage, node and
// networking groups from a real API server and talks to it as users do:
// client-go for writes, reads and status updates, discovery for what is
// served, and the kubectl binary for the tables it prints.
func TestAPIGroupsEndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := c.Client

	t.Run("discovery", func(t *testing.T) { checkGroupsDiscovery(ctx, t, cs) })
	t.Run("poddisruptionbudgets", func(t *testing.T) { checkPDBs(ctx, t, cs) })
	t.Run("priorityclasses", func(t *testing.T) { checkPriorityClasses(ctx, t, cs) })
	t.Run("storage", func(t *testing.T) { checkStorage(ctx, t, cs) })
	t.Run("runtimeclasses", func(t *testing.T) { checkRuntimeClasses(ctx, t, cs) })
	t.Run("networking", func(t *testing.T) { checkNetworking(ctx, t, cs) })
	t.Run("kubectl", func(t *testing.T) { checkGroupsKubectl(t, c.Server.Kubeconfig) })
}

// groupsServed lists each group with the resources it must serve, their
// scope and short names, and which have a status subresource.
var groupsServed = map[string][]struct {
	resource   string
	namespaced bool
	short      string
	status     bool
}{
	"policy":            {{"poddisruptionbudgets", true, "pdb", true}},
	"scheduling.k8s.io": {{"priorityclasses", false, "pc", false}},
	"storage.k8s.io": {
		{"csidrivers", false, "", false}, {"csinodes", false, "", false}, {"csistoragecapacities", true, "", false},
		{"storageclasses", false, "sc", false}, {"volumeattachments", false, "", true},
	},
	"node.k8s.io": {{"runtimeclasses", false, "", false}},
	"networking.k8s.io": {
		{"ingressclasses", false, "", false}, {"ingresses", true, "ing", true}, {"networkpolicies", true, "netpol", false},
	},
}

func checkGroupsDiscovery(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	groups, err := cs.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for name := range groupsServed {
		i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == name })
		if i < 0 {
			t.Errorf("/apis does not list %s", name)
			continue
		}
		if pv := groups.Groups[i].PreferredVersion; pv.GroupVersion != name+"/v1" || pv.Version != "v1" {
			t.Errorf("%s: preferred version %+v, want %s/v1", name, pv, name)
		}
		list, err := cs.Discovery().ServerResourcesForGroupVersion(name + "/v1")
		if err != nil {
			t.Fatalf("%s/v1: %v", name, err)
		}
		for _, want := range groupsServed[name] {
			j := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want.resource })
			if j < 0 {
				t.Errorf("%s/v1 does not list %s", name, want.resource)
				continue
			}
			r := list.APIResources[j]
			if r.Namespaced != want.namespaced || (want.short != "" && !slices.Contains(r.ShortNames, want.short)) {
				t.Errorf("%s: namespaced %v short names %v, want %v %q", want.resource, r.Namespaced, r.ShortNames, want.namespaced, want.short)
			}
			hasStatus := slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == want.resource+"/status" })
			if hasStatus != want.status {
				t.Errorf("%s/status listed: %v, want %v", want.resource, hasStatus, want.status)
			}
		}
	}

	// Aggregated discovery, which kubectl reads first.
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/apis").
		SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(raw, &agg); err != nil {
		t.Fatal(err)
	}
	for name, wants := range groupsServed {
		i := slices.IndexFunc(agg.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == name })
		if i < 0 || len(agg.Items[i].Versions) == 0 || agg.Items[i].Versions[0].Version != "v1" {
			t.Errorf("aggregated discovery: %s missing or not preferring v1", name)
			continue
		}
		resources := agg.Items[i].Versions[0].Resources
		for _, want := range wants {
			j := slices.IndexFunc(resources, func(r apidiscoveryv2.APIResourceDiscovery) bool { return r.Resource == want.resource })
			if j < 0 {
				t.Errorf("aggregated discovery: %s/v1 lacks %s", name, want.resource)
				continue
			}
			scope := apidiscoveryv2.ScopeCluster
			if want.namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			if resources[j].Scope != scope {
				t.Errorf("aggregated discovery: %s scope %s, want %s", want.resource, resources[j].Scope, scope)
			}
		}
	}
}

// wantInvalid fails unless err is a 422 whose causes name exactly fields.
func wantInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 422 || se.ErrStatus.Details == nil {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var got []string
	for _, c := range se.ErrStatus.Details.Causes {
		got = append(got, c.Field)
	}
	slices.Sort(got)
	slices.Sort(fields)
	if !slices.Equal(got, fields) {
		t.Errorf("causes %q, want %q (%v)", got, fields, err)
	}
}

func checkPDBs(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	pdbs := cs.PolicyV1().PodDisruptionBudgets("default")
	in := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(2)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 7}}
	created, err := pdbs.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Status.DisruptionsAllowed != 0 || created.Generation != 1 {
		t.Errorf("created: status %+v generation %d", created.Status, created.Generation)
	}

	created.Status.DisruptionsAllowed, created.Status.ExpectedPods = 1, 3
	// The answer to a status write carries the new resourceVersion, so a
	// controller can write the spec next without a conflict.
	withStatus, err := pdbs.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withStatus.Spec.MinAvailable = new(intstr.FromString("50%"))
	withStatus.Status.DisruptionsAllowed = 9 // ignored: not a status write
	updated, err := pdbs.Update(ctx, withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Status.DisruptionsAllowed != 1 || updated.Generation != 2 || updated.Spec.MinAvailable.String() != "50%" {
		t.Errorf("after update: status %+v generation %d spec %+v", updated.Status, updated.Generation, updated.Spec)
	}

	bad := in.DeepCopy()
	bad.Name = "both"
	bad.Spec.MaxUnavailable = new(intstr.FromInt32(1))
	_, err = pdbs.Create(ctx, bad, metav1.CreateOptions{})
	wantInvalid(t, err, "spec")

	list, err := pdbs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("list: %v %v", list, err)
	}
}

func checkPriorityClasses(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	pcs := cs.SchedulingV1().PriorityClasses()
	// The server's bootstrap may create them already; either way both must
	// be accepted and exist afterwards.
	for _, pc := range registry.SystemPriorityClasses() {
		if _, err := pcs.Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("%s: %v", pc.Name, err)
		}
		got, err := pcs.Get(ctx, pc.Name, metav1.GetOptions{})
		if err != nil || got.Value != pc.Value {
			t.Fatalf("%s: %+v %v", pc.Name, got, err)
		}
	}
	high, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000,
		Description: "web tier"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if high.PreemptionPolicy == nil || *high.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v, want the default", high.PreemptionPolicy)
	}
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 2_000_000_000}, metav1.CreateOptions{})
	wantInvalid(t, err, "value")
	_, err = pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 1}, metav1.CreateOptions{})
	wantInvalid(t, err, "metadata.name")

	high.Value = 2000
	_, err = pcs.Update(ctx, high, metav1.UpdateOptions{})
	wantInvalid(t, err, "value")
}

func checkStorage(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	st := cs.StorageV1()
	sc, err := st.StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast",
		Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "ebs.csi.aws.com", Parameters: map[string]string{"type": "gp3"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("defaults: reclaim %v binding %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
	sc.Provisioner = "other.example.com"
	sc.Parameters = map[string]string{"type": "io2"}
	_, err = st.StorageClasses().Update(ctx, sc, metav1.UpdateOptions{})
	wantInvalid(t, err, "parameters", "provisioner")
	_, err = st.StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "none"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "provisioner")

	driver, err := st.CSIDrivers().Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "ebs.csi.aws.com"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if driver.Spec.AttachRequired == nil || !*driver.Spec.AttachRequired || driver.Generation != 1 {
		t.Errorf("csidriver: %+v generation %d", driver.Spec, driver.Generation)
	}
	if _, err := st.CSINodes().Create(ctx, &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "ebs.csi.aws.com", NodeID: "i-0123"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CSIStorageCapacities("default").Create(ctx, &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "csisc-1"},
		StorageClassName: "fast", Capacity: new(resource.MustParse("100Gi"))}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	vas := st.VolumeAttachments()
	va, err := vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-0a1b"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: new("pv-1")}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	va.Status.Attached = true
	if va, err = vas.UpdateStatus(ctx, va, metav1.UpdateOptions{}); err != nil || !va.Status.Attached {
		t.Fatalf("status update: %+v %v", va, err)
	}
	va.Spec.NodeName = "node-2"
	_, err = vas.Update(ctx, va, metav1.UpdateOptions{})
	wantInvalid(t, err, "spec")

	caps, err := st.CSIStorageCapacities("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(caps.Items) != 1 || caps.Items[0].Capacity.String() != "100Gi" {
		t.Fatalf("capacities: %v %v", caps, err)
	}
}

func checkRuntimeClasses(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	rcs := cs.NodeV1().RuntimeClasses()
	rc, err := rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Handler = "kata"
	_, err = rcs.Update(ctx, rc, metav1.UpdateOptions{})
	wantInvalid(t, err, "handler")
	_, err = rcs.Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Handler: "run.sc"}, metav1.CreateOptions{})
	wantInvalid(t, err, "handler")
}

func checkNetworking(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	nw := cs.NetworkingV1()
	if _, err := nw.IngressClasses().Create(ctx, &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
		Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	prefix := networkingv1.PathTypePrefix
	ing, err := nw.Ingresses("default").Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.IngressSpec{IngressClassName: new("nginx"), Rules: []networkingv1.IngressRule{{Host: "example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "192.0.2.10"}}
	if ing, err = nw.Ingresses("default").UpdateStatus(ctx, ing, metav1.UpdateOptions{}); err != nil || len(ing.Status.LoadBalancer.Ingress) != 1 {
		t.Fatalf("status update: %+v %v", ing, err)
	}
	_, err = nw.Ingresses("default").Create(ctx, &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
	wantInvalid(t, err, "spec")

	np, err := nw.NetworkPolicies("default").Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: new(intstr.FromInt32(80))}}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || *np.Spec.Ingress[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("defaults: %+v", np.Spec)
	}
}

// checkGroupsKubectl runs the kubectl binary against the objects the other
// subtests created and checks the columns and cells it prints.
func checkGroupsKubectl(t *testing.T, kubeconfig string) {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found: set $KUBECTL or put kubectl on PATH")
		}
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	run := func(args ...string) (stdout, stderr string, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err = cmd.Run()
		return out.String(), errOut.String(), err
	}
	kubectl := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, errOut)
		}
		return out
	}

	// A rejected write prints upstream's message, field path first.
	_, errOut, err := run("create", "priorityclass", "too-high", "--value=2000000000")
	const wantErr = `PriorityClass.scheduling.k8s.io "too-high" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000`
	if err == nil || !strings.Contains(errOut, wantErr) {
		t.Errorf("kubectl create priorityclass too-high: err %v, stderr %q, want it to contain %q", err, errOut, wantErr)
	}

	out := kubectl("-n", "default", "get", "pdb,priorityclasses,storageclasses,ingress,networkpolicies,runtimeclasses")
	// Each kind prints its own table; a row is its name followed by the
	// cells before AGE (ages vary).
	for _, want := range []struct{ header, row string }{
		{"NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE", "poddisruptionbudget.policy/web 50% N/A 1"},
		{"NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY", "priorityclass.scheduling.k8s.io/high 1000 false"},
		{"NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE", "storageclass.storage.k8s.io/fast (default) ebs.csi.aws.com Delete Immediate false"},
		{"NAME CLASS HOSTS ADDRESS PORTS AGE", "ingress.networking.k8s.io/web nginx example.com 192.0.2.10 80"},
		{"NAME POD-SELECTOR AGE", "networkpolicy.networking.k8s.io/allow-web app=web"},
		{"NAME HANDLER AGE", "runtimeclass.node.k8s.io/gvisor runsc"},
	} {
		if !groupsHasLine(out, want.header, false) {
			t.Errorf("no header %q in:\n%s", want.header, out)
		}
		if !groupsHasLine(out, want.row, true) {
			t.Errorf("no row starting %q in:\n%s", want.row, out)
		}
	}
	if !groupsHasLine(out, "priorityclass.scheduling.k8s.io/system-node-critical 2000001000 false", true) {
		t.Errorf("system-node-critical missing:\n%s", out)
	}

	out = kubectl("get", "csidrivers,csinodes,volumeattachments")
	for _, want := range []string{
		"NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE",
		"NAME DRIVERS AGE",
		"NAME ATTACHER PV NODE ATTACHED AGE",
	} {
		if !groupsHasLine(out, want, false) {
			t.Errorf("no header %q in:\n%s", want, out)
		}
	}
	if !groupsHasLine(out, "volumeattachment.storage.k8s.io/csi-0a1b ebs.csi.aws.com pv-1 node-1 true", true) {
		t.Errorf("volumeattachment row missing:\n%s", out)
	}

	out = kubectl("api-resources")
	for _, want := range []string{
		"poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget",
		"priorityclasses pc scheduling.k8s.io/v1 false PriorityClass",
		"storageclasses sc storage.k8s.io/v1 false StorageClass",
		"csidrivers storage.k8s.io/v1 false CSIDriver",
		"csinodes storage.k8s.io/v1 false CSINode",
		"csistoragecapacities storage.k8s.io/v1 true CSIStorageCapacity",
		"volumeattachments storage.k8s.io/v1 false VolumeAttachment",
		"runtimeclasses node.k8s.io/v1 false RuntimeClass",
		"ingresses ing networking.k8s.io/v1 true Ingress",
		"ingressclasses networking.k8s.io/v1 false IngressClass",
		"networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy",
	} {
		if !groupsHasLine(out, want, false) {
			t.Errorf("api-resources lacks %q:\n%s", want, out)
		}
	}
}

// groupsHasLine reports whether out has a line whose words are want's
// words (or start with them, if prefix).
func groupsHasLine(out, want string, prefix bool) bool {
	w := strings.Fields(want)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if slices.Equal(f, w) || (prefix && len(f) >= len(w) && slices.Equal(f[:len(w)], w)) {
			return true
		}
	}
	return false
}
