package plugins

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// ---- test objects shared by the volume plugin tests ----

func vbTNode(name string, lbls ...string) *corev1.Node {
	l := map[string]string{corev1.LabelHostname: name}
	for _, kv := range lbls {
		k, v, _ := strings.Cut(kv, "=")
		l[k] = v
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// vbTClaim is an unbound claim; class "" means no class.
func vbTClaim(name, class, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: modes,
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	if class != "" {
		c.Spec.StorageClassName = &class
	}
	return c
}

// vbTBound marks a claim bound to pv, as the PV controller leaves it.
func vbTBound(c *corev1.PersistentVolumeClaim, pv string) *corev1.PersistentVolumeClaim {
	c.Spec.VolumeName = pv
	c.Annotations = map[string]string{vbAnnBindCompleted: "yes"}
	c.Status.Phase = corev1.ClaimBound
	return c
}

func vbTPV(name, class, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: class,
			AccessModes:      modes,
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable},
	}
}

// vbTOnNodes pins a PV to nodes by hostname.
func vbTOnNodes(pv *corev1.PersistentVolume, key string, values ...string) *corev1.PersistentVolume {
	pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}},
	}}}}
	return pv
}

func vbTClass(name string, mode storagev1.VolumeBindingMode, provisioner string, zones ...string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: zones},
		}}}
	}
	return sc
}

func vbTPod(name string, claims ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c},
		}})
	}
	return p
}

// vbTRun runs PreFilter and Filter on every node, rendering outcomes like
// ipaTFilterAll ("prefilter: ..." when PreFilter stops the pod).
func vbTRun(t testing.TB, pre framework.PreFilterPlugin, f framework.FilterPlugin, snap *framework.Snapshot, cs *framework.CycleState, pod *corev1.Pod) []string {
	t.Helper()
	ctx := context.Background()
	_, st := pre.PreFilter(ctx, cs, pod, snap.NodeInfoList)
	if st.IsSkip() {
		return []string{"skip"}
	}
	if !st.IsSuccess() {
		return []string{"prefilter: " + st.String()}
	}
	var out []string
	for _, ni := range snap.NodeInfoList {
		s := "ok"
		if fs := f.Filter(ctx, cs, pod, ni); !fs.IsSuccess() {
			s = fs.String()
		}
		out = append(out, ni.Name()+": "+s)
	}
	return out
}

func vbTPlugin(t testing.TB, snap *framework.Snapshot, args runtime.Object, objs ...runtime.Object) (*VolumeBinding, *testHandle) {
	t.Helper()
	h := newTestHandle(snap, objs...)
	vbTVersionWrites(h)
	p, err := NewVolumeBinding(context.Background(), args, h)
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	pl := p.(*VolumeBinding)
	pl.recheck = 20 * time.Millisecond
	return pl, h
}

// vbTVersionWrites makes the fake API server give every write a new
// resourceVersion, as a real one does: PreBind tells its own writes from
// the informer's older copies by them.
func vbTVersionWrites(h *testHandle) {
	var mu sync.Mutex
	rv := 100
	h.client.(*fake.Clientset).PrependReactor("update", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		rv++
		if obj, err := meta.Accessor(a.(clienttesting.UpdateAction).GetObject()); err == nil {
			obj.SetResourceVersion(strconv.Itoa(rv))
		}
		return false, nil, nil
	})
}

const (
	vbTWFFC      = storagev1.VolumeBindingWaitForFirstConsumer
	vbTImmediate = storagev1.VolumeBindingImmediate
	vbTBind      = "UnschedulableAndUnresolvable: " + vbReasonBindConflict
	vbTAffinity  = "UnschedulableAndUnresolvable: " + vbReasonNodeConflict
)

func TestVolumeBindingFilter(t *testing.T) {
	nodes := []*corev1.Node{vbTNode("n1", "topology.kubernetes.io/zone=a"), vbTNode("n2", "topology.kubernetes.io/zone=b")}
	local := vbTClass("local", vbTWFFC, vbNoProvisioner)
	dynamic := vbTClass("fast", vbTWFFC, "csi.example.com")
	zonal := vbTClass("zonal", vbTWFFC, "csi.example.com", "a")
	immediate := vbTClass("std", vbTImmediate, "csi.example.com")
	lost := vbTClaim("data", "fast", "1Gi")
	lost.Status.Phase = corev1.ClaimLost
	lost.Spec.VolumeName = "gone"
	deleting := vbTClaim("data", "fast", "1Gi")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	deleting.Finalizers = []string{"kubernetes.io/pvc-protection"}
	annotated := vbTClaim("data", "fast", "1Gi")
	annotated.Annotations = map[string]string{vbAnnSelectedNode: "n2"}
	ephemeralPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-p"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}},
	}}
	foreign := vbTClaim("p-scratch", "fast", "1Gi")

	tests := []struct {
		name string
		objs []runtime.Object
		pod  *corev1.Pod
		want []string
	}{
		{"pod without claims skips", nil, vbTPod("p"), []string{"skip"}},
		{"missing claim", nil, vbTPod("p", "data"),
			[]string{`prefilter: UnschedulableAndUnresolvable: persistentvolumeclaim "data" not found`}},
		{"unbound claim of an immediate class", []runtime.Object{immediate, vbTClaim("data", "std", "1Gi")}, vbTPod("p", "data"),
			[]string{"prefilter: UnschedulableAndUnresolvable: " + vbReasonUnboundImmediate}},
		{"unbound claim without a class binds immediately", []runtime.Object{vbTClaim("data", "", "1Gi")}, vbTPod("p", "data"),
			[]string{"prefilter: UnschedulableAndUnresolvable: " + vbReasonUnboundImmediate}},
		{"lost claim", []runtime.Object{dynamic, lost}, vbTPod("p", "data"),
			[]string{`prefilter: UnschedulableAndUnresolvable: persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"`}},
		{"claim being deleted", []runtime.Object{dynamic, deleting}, vbTPod("p", "data"),
			[]string{`prefilter: UnschedulableAndUnresolvable: persistentvolumeclaim "data" is being deleted`}},
		{"ephemeral claim not created yet", []runtime.Object{dynamic}, ephemeralPod,
			[]string{`prefilter: UnschedulableAndUnresolvable: waiting for ephemeral volume controller to create the persistentvolumeclaim "p-scratch"`}},
		{"ephemeral claim of another owner", []runtime.Object{dynamic, foreign}, ephemeralPod,
			[]string{`prefilter: UnschedulableAndUnresolvable: PVC default/p-scratch was not created for pod default/p (pod is not owner)`}},
		{"bound claim whose PV allows one node", []runtime.Object{immediate, vbTBound(vbTClaim("data", "std", "1Gi"), "pv1"),
			vbTOnNodes(vbTPV("pv1", "std", "1Gi"), corev1.LabelHostname, "n1")}, vbTPod("p", "data"),
			[]string{"n1: ok", "n2: " + vbTAffinity}},
		{"bound claim whose PV is gone", []runtime.Object{immediate, vbTBound(vbTClaim("data", "std", "1Gi"), "pv1")}, vbTPod("p", "data"),
			[]string{"n1: UnschedulableAndUnresolvable: " + vbReasonPVNotExist, "n2: UnschedulableAndUnresolvable: " + vbReasonPVNotExist}},
		{"local PV on one node", []runtime.Object{local, vbTClaim("data", "local", "1Gi"),
			vbTOnNodes(vbTPV("pv1", "local", "2Gi"), corev1.LabelHostname, "n1")}, vbTPod("p", "data"),
			[]string{"n1: ok", "n2: " + vbTBind}},
		{"PV too small", []runtime.Object{local, vbTClaim("data", "local", "5Gi"), vbTPV("pv1", "local", "2Gi")}, vbTPod("p", "data"),
			[]string{"n1: " + vbTBind, "n2: " + vbTBind}},
		{"PV without the access mode", []runtime.Object{local, vbTClaim("data", "local", "1Gi", corev1.ReadWriteMany), vbTPV("pv1", "local", "2Gi")}, vbTPod("p", "data"),
			[]string{"n1: " + vbTBind, "n2: " + vbTBind}},
		{"PV of another class", []runtime.Object{local, vbTClaim("data", "local", "1Gi"), vbTPV("pv1", "other", "2Gi")}, vbTPod("p", "data"),
			[]string{"n1: " + vbTBind, "n2: " + vbTBind}},
		{"PV already claimed by another claim", []runtime.Object{local, vbTClaim("data", "local", "1Gi"), func() *corev1.PersistentVolume {
			pv := vbTPV("pv1", "local", "2Gi")
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "other"}
			return pv
		}()}, vbTPod("p", "data"),
			[]string{"n1: " + vbTBind, "n2: " + vbTBind}},
		{"two claims need two PVs", []runtime.Object{local, vbTClaim("a", "local", "1Gi"), vbTClaim("b", "local", "1Gi"),
			vbTPV("pv1", "local", "2Gi")}, vbTPod("p", "a", "b"),
			[]string{"n1: " + vbTBind, "n2: " + vbTBind}},
		{"class with a provisioner provisions anywhere", []runtime.Object{dynamic, vbTClaim("data", "fast", "1Gi")}, vbTPod("p", "data"),
			[]string{"n1: ok", "n2: ok"}},
		{"provisioning limited to allowed topologies", []runtime.Object{zonal, vbTClaim("data", "zonal", "1Gi")}, vbTPod("p", "data"),
			[]string{"n1: ok", "n2: " + vbTBind}},
		{"claim already handed to a node", []runtime.Object{dynamic, annotated}, vbTPod("p", "data"),
			[]string{"n1: " + vbTBind, "n2: ok"}},
		{"bound and unbound claims both failing", []runtime.Object{immediate, local,
			vbTBound(vbTClaim("a", "std", "1Gi"), "pv1"), vbTOnNodes(vbTPV("pv1", "std", "1Gi"), corev1.LabelHostname, "n1"),
			vbTClaim("b", "local", "1Gi"), vbTOnNodes(vbTPV("pv2", "local", "1Gi"), corev1.LabelHostname, "n1")}, vbTPod("p", "a", "b"),
			[]string{"n1: ok", "n2: UnschedulableAndUnresolvable: " + vbReasonNodeConflict + ", " + vbReasonBindConflict}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(nodes, nil)
			pl, _ := vbTPlugin(t, snap, nil, tc.objs...)
			got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), tc.pod)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Two pods in consecutive cycles must not take the same PV: Reserve
// assumes it until the API says otherwise, Unreserve gives it back.
func TestVolumeBindingReserveAssumesPV(t *testing.T) {
	nodes := []*corev1.Node{vbTNode("n1")}
	snap := ipaTSnapshot(nodes, nil)
	pl, _ := vbTPlugin(t, snap, nil, vbTClass("local", vbTWFFC, vbNoProvisioner),
		vbTClaim("a", "local", "1Gi"), vbTClaim("b", "local", "1Gi"), vbTPV("pv1", "local", "1Gi"))
	ctx := context.Background()
	podA, podB := vbTPod("pa", "a"), vbTPod("pb", "b")

	csA := framework.NewCycleState()
	if got := vbTRun(t, pl, pl, snap, csA, podA); got[0] != "n1: ok" {
		t.Fatalf("pod a: %v", got)
	}
	if st := pl.Reserve(ctx, csA, podA, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	if got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), podB); got[0] != "n1: "+vbTBind {
		t.Fatalf("pod b while pv1 is assumed for a: %v", got)
	}
	pl.Unreserve(ctx, csA, podA, "n1")
	if got := vbTRun(t, pl, pl, snap, framework.NewCycleState(), podB); got[0] != "n1: ok" {
		t.Fatalf("pod b after a's Unreserve: %v", got)
	}
}

// vbTController plays the PV controller / provisioner: it waits until
// ready(pvc) holds in the API, then applies finish.
func vbTController(t *testing.T, h *testHandle, claim string, ready func(*corev1.PersistentVolumeClaim) bool, finish func(*corev1.PersistentVolumeClaim)) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			pvc, err := h.client.CoreV1().PersistentVolumeClaims("default").Get(ctx, claim, metav1.GetOptions{})
			if err == nil && ready(pvc) {
				finish(pvc)
				if _, err := h.client.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
					t.Errorf("controller update: %v", err)
				}
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

func TestVolumeBindingPreBind(t *testing.T) {
	nodes := []*corev1.Node{vbTNode("n1")}
	bindOK := func(pvc *corev1.PersistentVolumeClaim) {
		if pvc.Spec.VolumeName == "" {
			pvc.Spec.VolumeName = "pvc-provisioned"
		}
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, vbAnnBindCompleted, "yes")
		pvc.Status.Phase = corev1.ClaimBound
	}
	tests := []struct {
		name    string
		args    runtime.Object
		objs    []runtime.Object
		ready   func(*corev1.PersistentVolumeClaim) bool
		finish  func(*corev1.PersistentVolumeClaim)
		wantErr string
		check   func(t *testing.T, h *testHandle)
	}{
		{
			name:   "static PV: claimRef and volumeName written, waits for Bound",
			objs:   []runtime.Object{vbTClass("local", vbTWFFC, vbNoProvisioner), vbTClaim("data", "local", "1Gi"), vbTPV("pv1", "local", "1Gi")},
			ready:  func(c *corev1.PersistentVolumeClaim) bool { return c.Spec.VolumeName == "pv1" },
			finish: bindOK,
			check: func(t *testing.T, h *testHandle) {
				pv, _ := h.client.CoreV1().PersistentVolumes().Get(context.Background(), "pv1", metav1.GetOptions{})
				if ref := pv.Spec.ClaimRef; ref == nil || ref.Name != "data" || ref.Namespace != "default" || ref.UID != "uid-data" {
					t.Errorf("pv1 claimRef = %+v", pv.Spec.ClaimRef)
				}
				if pv.Annotations[vbAnnBoundByController] != "yes" {
					t.Errorf("pv1 annotations = %v", pv.Annotations)
				}
			},
		},
		{
			name: "provisioning: selected-node annotation written, waits for Bound",
			// The provisioner's PV; another class keeps it out of matching.
			objs:   []runtime.Object{vbTClass("fast", vbTWFFC, "csi.example.com"), vbTClaim("data", "fast", "1Gi"), vbTPV("pvc-provisioned", "provisioned", "1Gi")},
			ready:  func(c *corev1.PersistentVolumeClaim) bool { return c.Annotations[vbAnnSelectedNode] == "n1" },
			finish: bindOK,
		},
		{
			name:  "provisioner gives the claim back",
			objs:  []runtime.Object{vbTClass("fast", vbTWFFC, "csi.example.com"), vbTClaim("data", "fast", "1Gi")},
			ready: func(c *corev1.PersistentVolumeClaim) bool { return c.Annotations[vbAnnSelectedNode] == "n1" },
			finish: func(c *corev1.PersistentVolumeClaim) {
				delete(c.Annotations, vbAnnSelectedNode)
			},
			wantErr: `binding volumes: provisioning failed for PVC "data"`,
		},
		{
			name:    "nobody binds: times out",
			args:    &configv1.VolumeBindingArgs{BindTimeoutSeconds: ipaTPtr(int64(1))},
			objs:    []runtime.Object{vbTClass("fast", vbTWFFC, "csi.example.com"), vbTClaim("data", "fast", "1Gi")},
			wantErr: "binding volumes: context deadline exceeded",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := ipaTSnapshot(nodes, nil)
			pl, h := vbTPlugin(t, snap, tc.args, tc.objs...)
			ctx := context.Background()
			pod := vbTPod("p", "data")
			cs := framework.NewCycleState()
			if got := vbTRun(t, pl, pl, snap, cs, pod); got[0] != "n1: ok" {
				t.Fatalf("filter: %v", got)
			}
			if st := pl.Reserve(ctx, cs, pod, "n1"); !st.IsSuccess() {
				t.Fatal(st)
			}
			if tc.ready != nil {
				vbTController(t, h, "data", tc.ready, tc.finish)
			}
			start := time.Now()
			st := pl.PreBind(ctx, cs, pod, "n1")
			if tc.wantErr != "" {
				if st.Code() != framework.Error || st.Message() != tc.wantErr {
					t.Fatalf("PreBind = %v, want Error %q", st, tc.wantErr)
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("PreBind = %v", st)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("PreBind took %v", d)
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

func TestVolumeBindingAllBoundSkipsPreBind(t *testing.T) {
	snap := ipaTSnapshot([]*corev1.Node{vbTNode("n1")}, nil)
	pl, _ := vbTPlugin(t, snap, nil, vbTClass("std", vbTImmediate, "csi.example.com"),
		vbTBound(vbTClaim("data", "std", "1Gi"), "pv1"), vbTPV("pv1", "std", "1Gi"))
	ctx := context.Background()
	pod := vbTPod("p", "data")
	cs := framework.NewCycleState()
	if got := vbTRun(t, pl, pl, snap, cs, pod); got[0] != "n1: ok" {
		t.Fatalf("filter: %v", got)
	}
	if st := pl.Reserve(ctx, cs, pod, "n1"); !st.IsSuccess() {
		t.Fatal(st)
	}
	// No API client activity expected: PreBind returns at once.
	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if st := pl.PreBind(ctx, cs, pod, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind = %v", st)
	}
}

func TestVolumeBindingArgs(t *testing.T) {
	h := newTestHandle(framework.NewEmptySnapshot())
	for _, tc := range []struct {
		name    string
		args    runtime.Object
		want    time.Duration
		wantErr bool
	}{
		{"nil args default to 600s", nil, 600 * time.Second, false},
		{"explicit timeout", &configv1.VolumeBindingArgs{BindTimeoutSeconds: ipaTPtr(int64(30))}, 30 * time.Second, false},
		{"negative timeout", &configv1.VolumeBindingArgs{BindTimeoutSeconds: ipaTPtr(int64(-1))}, 0, true},
		{"wrong type", &configv1.InterPodAffinityArgs{}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewVolumeBinding(context.Background(), tc.args, h)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil && p.(*VolumeBinding).bindTimeout != tc.want {
				t.Errorf("timeout = %v, want %v", p.(*VolumeBinding).bindTimeout, tc.want)
			}
		})
	}
}

func TestVolumeBindingNodeSelector(t *testing.T) {
	node := vbTNode("n1", "zone=a", "gen=5")
	for _, tc := range []struct {
		name string
		sel  corev1.NodeSelector
		want bool
	}{
		{"no terms match nothing", corev1.NodeSelector{}, false},
		{"empty term matches nothing", corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}, false},
		{"In", corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}, true},
		{"terms are ORed", corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gen", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}}},
		}}, true},
		{"requirements are ANDed", corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}},
			{Key: "gen", Operator: corev1.NodeSelectorOpLt, Values: []string{"5"}},
		}}}}, false},
		{"DoesNotExist", corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "gpu", Operator: corev1.NodeSelectorOpDoesNotExist}}}}}, true},
		{"matchFields on the name", corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := vbMatchNodeSelector(&tc.sel, node); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
}
