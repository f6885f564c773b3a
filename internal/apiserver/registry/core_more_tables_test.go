package registry

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The tables of replication controllers, volumes, claims, limit ranges,
// quotas and pod templates, rendered as `kubectl get` and `kubectl get -o
// wide` print them into testdata/core_more_tables.golden. Rewrite it with
//
//	go test ./internal/apiserver/registry -run TestCoreMoreTables -update
//
// and review the diff. TestCoreTables leaves these resources to this test.

// coreMoreTableResources are the core resources whose tables this test
// renders, in the order of the golden file.
var coreMoreTableResources = []string{"replicationcontrollers", "persistentvolumes", "persistentvolumeclaims", "limitranges", "resourcequotas", "podtemplates"}

// coreMoreTable reports whether TestCoreMoreTables renders the resource.
func coreMoreTable(resource string) bool {
	return slices.Contains(coreMoreTableResources, resource)
}

func coreMoreTableCases(now time.Time) map[string][]runtime.Object {
	om := func(name string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-age))}
	}
	cluster := func(name string, age time.Duration) metav1.ObjectMeta {
		m := om(name, age)
		m.Namespace = ""
		return m
	}
	deleting := cluster("pv-old", 30*24*time.Hour)
	deleting.DeletionTimestamp = &metav1.Time{Time: now}
	two := []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}, {Name: "log", Image: "busybox:1.36"}}
	modes := func(m ...corev1.PersistentVolumeAccessMode) []corev1.PersistentVolumeAccessMode { return m }
	block := corev1.PersistentVolumeBlock
	fs := corev1.PersistentVolumeFilesystem
	beta := cluster("pv-beta", 2*time.Hour)
	beta.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "legacy"}

	return map[string][]runtime.Object{
		"replicationcontrollers": {
			&corev1.ReplicationController{ObjectMeta: om("web", 3*time.Hour), Spec: corev1.ReplicationControllerSpec{
				Replicas: new(int32(3)), Selector: map[string]string{"app": "web", "tier": "fe"},
				Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: two}}},
				Status: corev1.ReplicationControllerStatus{Replicas: 3, ReadyReplicas: 2}},
			&corev1.ReplicationController{ObjectMeta: om("bare", 5*time.Minute), Spec: corev1.ReplicationControllerSpec{Replicas: new(int32(0))}},
		},
		"persistentvolumes": {
			&corev1.PersistentVolume{ObjectMeta: cluster("pv-nfs", 26*time.Hour), Spec: corev1.PersistentVolumeSpec{
				Capacity: coreRL("storage", "10Gi"), AccessModes: modes(corev1.ReadWriteMany, corev1.ReadOnlyMany, corev1.ReadWriteMany),
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "standard", VolumeMode: &fs,
				ClaimRef: &corev1.ObjectReference{Namespace: "default", Name: "data"}},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}},
			&corev1.PersistentVolume{ObjectMeta: cluster("pv-csi", 45*time.Minute), Spec: corev1.PersistentVolumeSpec{
				Capacity: coreRL("storage", "1500Mi"), AccessModes: modes(corev1.ReadWriteOncePod),
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete, VolumeMode: &block, VolumeAttributesClassName: new("gold")},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeAvailable}},
			&corev1.PersistentVolume{ObjectMeta: beta, Spec: corev1.PersistentVolumeSpec{StorageClassName: "ignored",
				Capacity: coreRL("storage", "1Gi"), AccessModes: modes(corev1.ReadWriteOnce)},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeFailed, Reason: "RecyclerFailed"}},
			&corev1.PersistentVolume{ObjectMeta: deleting, Spec: corev1.PersistentVolumeSpec{Capacity: coreRL("storage", "5Gi")},
				Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeReleased}},
		},
		"persistentvolumeclaims": {
			&corev1.PersistentVolumeClaim{ObjectMeta: om("data", 26*time.Hour), Spec: corev1.PersistentVolumeClaimSpec{
				VolumeName: "pv-nfs", StorageClassName: new("standard"), VolumeMode: &fs, AccessModes: modes(corev1.ReadWriteMany),
				Resources: corev1.VolumeResourceRequirements{Requests: coreRL("storage", "8Gi")}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: coreRL("storage", "10Gi"),
					AccessModes: modes(corev1.ReadOnlyMany, corev1.ReadWriteMany)}},
			&corev1.PersistentVolumeClaim{ObjectMeta: om("scratch", 10*time.Minute), Spec: corev1.PersistentVolumeClaimSpec{
				VolumeMode: &block, VolumeAttributesClassName: new("gold"), AccessModes: modes(corev1.ReadWriteOnce),
				Resources: corev1.VolumeResourceRequirements{Requests: coreRL("storage", "1Gi")}},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}},
		},
		"limitranges": {
			&corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: "default",
				CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600)))}},
		},
		"resourcequotas": {
			&corev1.ResourceQuota{ObjectMeta: om("compute", 4*24*time.Hour), Status: corev1.ResourceQuotaStatus{
				Hard: coreRL("requests.cpu", "1", "requests.memory", "1Gi", "limits.cpu", "2", "limits.memory", "2Gi", "pods", "10"),
				Used: coreRL("requests.cpu", "500m", "requests.memory", "256Mi", "limits.cpu", "1", "pods", "3")}},
			&corev1.ResourceQuota{ObjectMeta: om("not-counted-yet", time.Minute), Spec: corev1.ResourceQuotaSpec{Hard: coreRL("pods", "5")}},
		},
		"podtemplates": {
			&corev1.PodTemplate{ObjectMeta: om("web", time.Hour), Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "fe", "app": "web"}}, Spec: corev1.PodSpec{Containers: two}}},
			&corev1.PodTemplate{ObjectMeta: om("plain", time.Hour), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: two[:1]}}},
		},
	}
}

func TestCoreMoreTables(t *testing.T) {
	cases := coreMoreTableCases(time.Now())
	var got strings.Builder
	for _, resource := range coreMoreTableResources {
		r := mustResource(t, "", resource)
		if r.Table == nil {
			t.Fatalf("%s has no table", resource)
		}
		objs := cases[resource]
		t.Run(resource, func(t *testing.T) {
			if len(objs) == 0 {
				t.Fatalf("no table cases")
			}
			checkColumnTypes(t, r.Table, objs)
		})
		for _, wide := range []bool{false, true} {
			cmd := "kubectl get " + resource
			if wide {
				cmd += " -o wide"
			}
			fmt.Fprintf(&got, "$ %s\n%s\n", cmd, renderTable(t, r.Table, objs, wide))
		}
	}
	path := filepath.Join("testdata", "core_more_tables.golden")
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
