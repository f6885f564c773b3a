package registry_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestCoreMoreResourcesServed runs replication controllers, persistent
// volumes and claims, limit ranges, quotas and pod templates through a real
// API server with client-go and kubectl: defaults as read back, the
// spec/status split, the RC's /scale, field selectors, 422s naming the
// offending fields, and the columns `kubectl get` prints.
func TestCoreMoreResourcesServed(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	core := c.Client.CoreV1()
	const ns = "more"
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	gi := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(s)}
	}
	container := []corev1.Container{{Name: "app", Image: "nginx:1.27"}}

	t.Run("replicationcontroller", func(t *testing.T) {
		rcs := core.ReplicationControllers(ns)
		rc, err := rcs.Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{Containers: container}}},
			Status: corev1.ReplicationControllerStatus{Replicas: 9}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || *rc.Spec.Replicas != 1 || rc.Generation != 1 || rc.Status.Replicas != 0 {
			t.Errorf("created rc: selector %v labels %v replicas %d generation %d status %+v",
				rc.Spec.Selector, rc.Labels, *rc.Spec.Replicas, rc.Generation, rc.Status)
		}

		sc, err := rcs.GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Spec.Replicas != 1 || sc.Status.Selector != "app=web" {
			t.Errorf("scale = %+v", sc)
		}
		sc.Spec.Replicas = 3
		if sc, err = rcs.UpdateScale(ctx, "web", sc, metav1.UpdateOptions{}); err != nil || sc.Spec.Replicas != 3 {
			t.Fatalf("update scale: %v %+v", err, sc)
		}
		if rc, err = rcs.Get(ctx, "web", metav1.GetOptions{}); err != nil || *rc.Spec.Replicas != 3 || rc.Generation != 2 {
			t.Fatalf("after scale: %v replicas %d generation %d", err, *rc.Spec.Replicas, rc.Generation)
		}
		_, err = rcs.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: -1}}, metav1.UpdateOptions{})
		moreExpectInvalid(t, err, "spec.replicas")

		rc.Status = corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2}
		if rc, err = rcs.UpdateStatus(ctx, rc, metav1.UpdateOptions{}); err != nil || rc.Status.ReadyReplicas != 2 {
			t.Fatalf("status update: %v", err)
		}
		rc = moreFresh(t, rc, rcs.Get)
		rc.Status.ReadyReplicas = 5
		_, err = rcs.UpdateStatus(ctx, rc, metav1.UpdateOptions{})
		moreExpectInvalid(t, err, "status.readyReplicas")

		for sel, want := range map[string]int{"status.replicas=3": 1, "status.replicas=0": 0} {
			list, err := rcs.List(ctx, metav1.ListOptions{FieldSelector: sel})
			if err != nil || len(list.Items) != want {
				t.Errorf("list %s: %v, %d items, want %d", sel, err, len(list.Items), want)
			}
		}
		_, err = rcs.Create(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "broken"},
			Spec: corev1.ReplicationControllerSpec{Replicas: new(int32(-1))}}, metav1.CreateOptions{})
		moreExpectInvalid(t, err, "spec.selector", "spec.replicas", "spec.template")
	})

	t.Run("persistentvolume", func(t *testing.T) {
		pvs := core.PersistentVolumes()
		pv, err := pvs.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-more", Namespace: ns},
			Spec: corev1.PersistentVolumeSpec{Capacity: gi("5Gi"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/srv/pv"}}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pv.Namespace != "" || pv.Status.Phase != corev1.VolumePending || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain ||
			*pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || *pv.Spec.HostPath.Type != corev1.HostPathUnset {
			t.Errorf("created pv: %+v", pv)
		}
		pv.Status.Phase = corev1.VolumeAvailable
		if pv, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil || pv.Status.Phase != corev1.VolumeAvailable {
			t.Fatalf("status update: %v", err)
		}
		pv = moreFresh(t, pv, pvs.Get)
		pv.Status.Phase = corev1.VolumeFailed // ignored on the main resource
		pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: ns, Name: "claim"}
		if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil || pv.Status.Phase != corev1.VolumeAvailable || pv.Spec.ClaimRef == nil {
			t.Fatalf("update: %v %+v", err, pv)
		}
		pv.Spec.HostPath.Path = "/srv/other"
		_, err = pvs.Update(ctx, pv, metav1.UpdateOptions{})
		moreExpectInvalid(t, err, "spec.persistentvolumesource")

		_, err = pvs.Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-bad"}}, metav1.CreateOptions{})
		moreExpectInvalid(t, err, "spec.accessModes", "spec.capacity", "spec")
	})

	t.Run("persistentvolumeclaim", func(t *testing.T) {
		// A claim may grow only when its class allows expansion
		// (PersistentVolumeClaimResize admission), as on Kubernetes.
		expand := true
		if _, err := c.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "expandable"},
			Provisioner: "example.com/disk", AllowVolumeExpansion: &expand}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		class := "expandable"
		pvcs := core.PersistentVolumeClaims(ns)
		pvc, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class,
				Resources: corev1.VolumeResourceRequirements{Requests: gi("1Gi")}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pvc.Status.Phase != corev1.ClaimPending || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
			t.Errorf("created pvc: %+v", pvc)
		}
		grow := pvc.DeepCopy()
		grow.Spec.Resources.Requests = gi("2Gi")
		_, err = pvcs.Update(ctx, grow, metav1.UpdateOptions{})
		moreExpectInvalid(t, err, "spec") // not bound yet

		pvc.Spec.VolumeName = "pv-more" // the binder's one change
		if pvc, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: gi("5Gi"),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
		if _, err = pvcs.UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pvc = moreFresh(t, pvc, pvcs.Get)
		pvc.Spec.Resources.Requests = gi("8Gi")
		if pvc, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil || pvc.Spec.Resources.Requests.Storage().String() != "8Gi" {
			t.Fatalf("bound claim may grow: %v", err)
		}
		pvc.Spec.Resources.Requests = gi("4Gi")
		_, err = pvcs.Update(ctx, pvc, metav1.UpdateOptions{})
		moreExpectInvalid(t, err, "spec.resources.requests.storage")
	})

	t.Run("limitrange", func(t *testing.T) {
		lrs := core.LimitRanges(ns)
		lr, err := lrs.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d := lr.Spec.Limits[0]; d.Default.Cpu().String() != "2" || d.DefaultRequest.Cpu().String() != "2" {
			t.Errorf("limit range defaults: %+v", d)
		}
		_, err = lrs.Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypePod,
				Min: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}, metav1.CreateOptions{})
		moreExpectInvalid(t, err, "spec.limits[0].min[cpu]")
		if err != nil && !strings.Contains(err.Error(), "min value 2 is greater than max value 1") {
			t.Errorf("message: %v", err)
		}
	})

	t.Run("resourcequota", func(t *testing.T) {
		rqs := core.ResourceQuotas(ns)
		hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceLimitsCPU: resource.MustParse("4")}
		rq, err := rqs.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "quota"},
			Spec: corev1.ResourceQuotaSpec{Hard: hard}, Status: corev1.ResourceQuotaStatus{Used: hard}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rq.Status.Used != nil {
			t.Errorf("status kept on create: %+v", rq.Status)
		}
		rq.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3"), corev1.ResourceLimitsCPU: resource.MustParse("1")}}
		if rq, err = rqs.UpdateStatus(ctx, rq, metav1.UpdateOptions{}); err != nil || rq.Status.Used.Pods().String() != "3" {
			t.Fatalf("status update: %v", err)
		}
		rq = moreFresh(t, rq, rqs.Get)
		rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
		_, err = rqs.Update(ctx, rq, metav1.UpdateOptions{})
		moreExpectInvalid(t, err, "spec.scopes")
		_, err = rqs.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"gpus": resource.MustParse("1")}}}, metav1.CreateOptions{})
		moreExpectInvalid(t, err, "spec.hard[gpus]")
	})

	t.Run("podtemplate", func(t *testing.T) {
		pts := core.PodTemplates(ns)
		pt, err := pts.Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "tmpl"}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{Containers: container}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pt.Generation != 1 || pt.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("created template: generation %d restartPolicy %q", pt.Generation, pt.Template.Spec.RestartPolicy)
		}
		pt.Template.Spec.Containers[0].Image = "nginx:1.28"
		if pt, err = pts.Update(ctx, pt, metav1.UpdateOptions{}); err != nil || pt.Generation != 2 {
			t.Fatalf("update: %v generation %d", err, pt.Generation)
		}
		list, err := pts.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Fatalf("list: %v %d", err, len(list.Items))
		}
		_, err = pts.Create(ctx, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
		moreExpectInvalid(t, err, "template.spec.containers")
	})

	t.Run("kubectl get", func(t *testing.T) {
		out := moreKubectl(t, c.Server.Kubeconfig, "-n", ns, "get", "rc,pv,pvc,quota,limits,podtemplates")
		tables := moreKubectlTables(out)
		want := [][]string{
			{"NAME", "DESIRED", "CURRENT", "READY", "AGE"},
			{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"},
			{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"},
			{"NAME", "AGE", "REQUEST", "LIMIT"},
			{"NAME", "CREATED AT"},
			{"NAME", "CONTAINERS", "IMAGES", "POD LABELS"},
		}
		if len(tables) != len(want) {
			t.Fatalf("%d tables, want %d:\n%s", len(tables), len(want), out)
		}
		for i, w := range want {
			if !slices.Equal(tables[i][0], w) {
				t.Errorf("table %d header %q, want %q", i, tables[i][0], w)
			}
		}
		rows := map[string][]string{}
		for _, tbl := range tables {
			for _, row := range tbl[1:] {
				rows[row[0]] = row
			}
		}
		for name, prefix := range map[string][]string{
			"replicationcontroller/web":   {"3", "3", "2"},
			"persistentvolume/pv-more":    {"5Gi", "RWO", "Retain", "Available", "more/claim"},
			"persistentvolumeclaim/claim": {"Bound", "pv-more", "5Gi", "RWO"},
			"resourcequota/quota":         {},
			"limitrange/limits":           {},
			"podtemplate/tmpl":            {"app", "nginx:1.28", "app=web"},
		} {
			row, ok := rows[name]
			if !ok {
				t.Errorf("no row %s in:\n%s", name, out)
				continue
			}
			if len(row) < len(prefix)+1 || !slices.Equal(row[1:len(prefix)+1], prefix) {
				t.Errorf("row %q, want it to start %q", row, prefix)
			}
		}
		if q := rows["resourcequota/quota"]; len(q) < 4 || q[2] != "pods: 3/10" || q[3] != "limits.cpu: 1/4" {
			t.Errorf("quota row %q", q)
		}

		wide := moreKubectlTables(moreKubectl(t, c.Server.Kubeconfig, "-n", ns, "get", "rc", "-o", "wide"))
		if len(wide) != 1 || !slices.Equal(wide[0][0], []string{"NAME", "DESIRED", "CURRENT", "READY", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}) ||
			!slices.Equal(wide[0][1][5:], []string{"app", "nginx:1.27", "app=web"}) {
			t.Errorf("kubectl get rc -o wide: %q", wide)
		}
		if out := moreKubectl(t, c.Server.Kubeconfig, "-n", ns, "scale", "rc", "web", "--replicas=5"); !strings.Contains(out, "replicationcontroller/web scaled") {
			t.Errorf("kubectl scale: %q", out)
		}
		if rc, err := core.ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil || *rc.Spec.Replicas != 5 {
			t.Errorf("after kubectl scale: %v", err)
		}
	})
}

// moreFresh reads obj back. The object a /status write returns carries the
// resourceVersion from before the write (a server bug reported
// separately), so a follow-up update must start from a read.
func moreFresh[T metav1.Object](t *testing.T, obj T, get func(context.Context, string, metav1.GetOptions) (T, error)) T {
	t.Helper()
	out, err := get(context.Background(), obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// moreExpectInvalid checks that err is a 422 whose causes name exactly the
// given fields, each once.
func moreExpectInvalid(t *testing.T, err error, fields ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	var got []string
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		got = append(got, c.Field)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	want := slices.Sorted(slices.Values(fields))
	if !slices.Equal(got, want) {
		t.Errorf("cause fields %q, want %q (%v)", got, want, err)
	}
}

func moreKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "/usr/bin/kubectl"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no kubectl: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

var moreColumnGap = regexp.MustCompile(`\s{2,}`)

// moreKubectlTables splits kubectl's output into tables (blank-line
// separated), each a header and rows of cells. Cells are separated by two
// or more spaces, so an empty cell disappears: tests check leading cells.
func moreKubectlTables(out string) [][][]string {
	var tables [][][]string
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var tbl [][]string
		for _, line := range strings.Split(block, "\n") {
			tbl = append(tbl, moreColumnGap.Split(strings.TrimSpace(line), -1))
		}
		tables = append(tables, tbl)
	}
	return tables
}
