package registry

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The golden file holds `kubectl get` and `kubectl get -o wide` as they
// render this package's tables. Rewrite it with
//
//	go test ./internal/apiserver/registry -run TestTables -update
//
// and review the diff: it is the change kubectl users will see.

// tableCase is one resource and the objects a `kubectl get` lists.
type tableCase struct {
	group, resource string
	objects         []runtime.Object
}

func tableCases(now time.Time) []tableCase {
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	at := func(d time.Duration) *metav1.Time { t := ago(d); return &t }
	om := func(name string, age time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: ago(age)}
	}
	two := []corev1.Container{{Name: "nginx", Image: "nginx:1.27"}, {Name: "log", Image: "busybox:1.36"}}
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: two}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cond := func(t batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
	}
	jobSpec := batchv1.JobSpec{Completions: new(int32(1)), Parallelism: new(int32(1)), Template: tmpl,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "0c4d"}}}
	deleting := om("deleting", time.Minute)
	deleting.DeletionTimestamp = at(0)

	return []tableCase{
		{"apps", "deployments", []runtime.Object{
			&appsv1.Deployment{ObjectMeta: om("web", 3*time.Hour), Spec: appsv1.DeploymentSpec{Replicas: new(int32(3)), Selector: sel, Template: tmpl},
				Status: appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}},
			&appsv1.Deployment{ObjectMeta: om("idle", 26*time.Hour), Spec: appsv1.DeploymentSpec{Replicas: new(int32(0)), Selector: &metav1.LabelSelector{}, Template: tmpl}},
		}},
		{"apps", "replicasets", []runtime.Object{
			&appsv1.ReplicaSet{ObjectMeta: om("web-5d4f8c", 3*time.Hour), Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(3)), Selector: sel, Template: tmpl},
				Status: appsv1.ReplicaSetStatus{Replicas: 3, ReadyReplicas: 2}},
		}},
		{"apps", "statefulsets", []runtime.Object{
			&appsv1.StatefulSet{ObjectMeta: om("db", 45*time.Minute), Spec: appsv1.StatefulSetSpec{Replicas: new(int32(3)), Selector: sel, Template: tmpl},
				Status: appsv1.StatefulSetStatus{ReadyReplicas: 1}},
		}},
		{"apps", "daemonsets", []runtime.Object{
			&appsv1.DaemonSet{ObjectMeta: om("agent", 10*24*time.Hour), Spec: appsv1.DaemonSetSpec{Selector: sel, Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: two[:1], NodeSelector: map[string]string{"kubernetes.io/os": "linux"}}}},
				Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, CurrentNumberScheduled: 4, NumberReady: 3, UpdatedNumberScheduled: 4, NumberAvailable: 3}},
			&appsv1.DaemonSet{ObjectMeta: om("nothing", time.Hour), Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}},
		}},
		{"apps", "controllerrevisions", []runtime.Object{
			&appsv1.ControllerRevision{ObjectMeta: func() metav1.ObjectMeta {
				m := om("agent-6d5f9", 10*24*time.Hour)
				m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", Controller: new(true)}}
				return m
			}(), Revision: 2},
			&appsv1.ControllerRevision{ObjectMeta: om("orphan-1", time.Hour), Revision: 1},
		}},
		{"batch", "jobs", []runtime.Object{
			&batchv1.Job{ObjectMeta: om("pi", 10*time.Minute), Spec: jobSpec,
				Status: batchv1.JobStatus{Succeeded: 1, StartTime: at(10 * time.Minute), CompletionTime: at(10*time.Minute - 125*time.Second), Conditions: append(cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)...)}},
			&batchv1.Job{ObjectMeta: om("queue", 2*time.Minute), Spec: batchv1.JobSpec{Parallelism: new(int32(3)), Template: tmpl, Selector: jobSpec.Selector},
				Status: batchv1.JobStatus{Active: 3, StartTime: at(90 * time.Second)}},
			&batchv1.Job{ObjectMeta: om("single", 2*time.Minute), Spec: batchv1.JobSpec{Parallelism: new(int32(1)), Template: tmpl, Selector: jobSpec.Selector}},
			&batchv1.Job{ObjectMeta: om("broken", time.Hour), Spec: jobSpec, Status: batchv1.JobStatus{Failed: 7, StartTime: at(time.Hour), Conditions: cond(batchv1.JobFailed)}},
			&batchv1.Job{ObjectMeta: om("held", time.Hour), Spec: jobSpec, Status: batchv1.JobStatus{Conditions: cond(batchv1.JobSuspended)}},
			&batchv1.Job{ObjectMeta: om("doomed", time.Hour), Spec: jobSpec, Status: batchv1.JobStatus{Conditions: cond(batchv1.JobFailureTarget)}},
			&batchv1.Job{ObjectMeta: om("succeeding", time.Hour), Spec: jobSpec, Status: batchv1.JobStatus{Conditions: cond(batchv1.JobSuccessCriteriaMet)}},
			&batchv1.Job{ObjectMeta: deleting, Spec: jobSpec},
		}},
		{"batch", "cronjobs", []runtime.Object{
			&batchv1.CronJob{ObjectMeta: om("nightly", 30*24*time.Hour), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", Suspend: new(false),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
				Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "nightly-29512345"}}, LastScheduleTime: at(5 * time.Minute)}},
			&batchv1.CronJob{ObjectMeta: om("berlin", time.Hour), Spec: batchv1.CronJobSpec{Schedule: "@hourly", TimeZone: new("Europe/Berlin"), Suspend: new(true),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}},
		}},
		{"coordination.k8s.io", "leases", []runtime.Object{
			&coordinationv1.Lease{ObjectMeta: om("node-1", 2*time.Hour), Spec: coordinationv1.LeaseSpec{HolderIdentity: new("node-1")}},
			&coordinationv1.Lease{ObjectMeta: om("unheld", time.Hour)},
		}},
		{"discovery.k8s.io", "endpointslices", []runtime.Object{
			&discoveryv1.EndpointSlice{ObjectMeta: om("web-abc12", time.Hour), AddressType: discoveryv1.AddressTypeIPv4,
				Ports: []discoveryv1.EndpointPort{{Name: new("http"), Port: new(int32(80))}, {Name: new("metrics"), Port: new(int32(9090))}},
				Endpoints: []discoveryv1.Endpoint{
					{Addresses: []string{"10.244.0.5"}}, {Addresses: []string{"10.244.1.7", "10.244.1.8"}},
					{Addresses: []string{"10.244.2.9"}}, {Addresses: []string{"10.244.3.2"}},
				}},
			&discoveryv1.EndpointSlice{ObjectMeta: om("headless-x", time.Hour), AddressType: discoveryv1.AddressTypeFQDN,
				Ports: []discoveryv1.EndpointPort{{Name: new("dns")}, {}, {Port: new(int32(1)), Name: new("a")}, {Port: new(int32(2))}}},
		}},
		{"events.k8s.io", "events", []runtime.Object{
			&eventsv1.Event{ObjectMeta: om("web.17a2b", time.Hour), EventTime: metav1.NewMicroTime(now.Add(-time.Hour)),
				Series:              &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(now.Add(-10 * time.Minute))},
				ReportingController: "rudder.dev/deployment-controller", ReportingInstance: "server-1", Reason: "ScalingReplicaSet", Type: "Normal",
				Regarding: corev1.ObjectReference{Kind: "Deployment", Name: "web"}, Note: "Scaled up replica set web-5d4f8c to 3\n"},
			&eventsv1.Event{ObjectMeta: om("web-0.17a2c", time.Hour), Reason: "BackOff", Type: "Warning",
				Regarding:                corev1.ObjectReference{Kind: "Pod", Name: "web-0", FieldPath: "spec.containers{nginx}"},
				DeprecatedSource:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
				DeprecatedFirstTimestamp: ago(2 * time.Hour), DeprecatedLastTimestamp: ago(3 * time.Minute), DeprecatedCount: 12,
				Note: "Back-off restarting failed container"},
		}},
		{"rbac.authorization.k8s.io", "roles", []runtime.Object{
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600)))}},
		}},
		{"rbac.authorization.k8s.io", "clusterroles", []runtime.Object{
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:aggregate-to-view", CreationTimestamp: metav1.NewTime(time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC))}},
		}},
		{"rbac.authorization.k8s.io", "rolebindings", []runtime.Object{
			&rbacv1.RoleBinding{ObjectMeta: om("read-pods", 4*24*time.Hour), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: "User", Name: "jane"}, {Kind: "User", Name: "bob"}, {Kind: "Group", Name: "devs"}, {Kind: "ServiceAccount", Namespace: "ci", Name: "runner"}}},
		}},
		{"rbac.authorization.k8s.io", "clusterrolebindings", []runtime.Object{
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin", CreationTimestamp: ago(400 * 24 * time.Hour)},
				RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "system:masters"}}},
		}},
	}
}

// renderTable prints a table as kubectl does: upper-case headers, columns
// aligned by three spaces, wide columns only when asked for.
func renderTable(t *testing.T, tbl *Table, objects []runtime.Object, wide bool) string {
	t.Helper()
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 8, 3, ' ', 0)
	var keep []int
	var header []string
	for i, c := range tbl.Columns {
		if c.Priority == 0 || wide {
			keep = append(keep, i)
			header = append(header, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, obj := range objects {
		cells := tbl.Row(obj)
		if len(cells) != len(tbl.Columns) {
			t.Fatalf("%d cells for %d columns: %v", len(cells), len(tbl.Columns), cells)
		}
		var out []string
		for _, i := range keep {
			out = append(out, fmt.Sprint(cells[i]))
		}
		fmt.Fprintln(w, strings.Join(out, "\t"))
	}
	w.Flush()
	return buf.String()
}

func TestTables(t *testing.T) {
	var got strings.Builder
	for _, tc := range tableCases(time.Now()) {
		r := mustResource(t, tc.group, tc.resource)
		if r.Table == nil {
			t.Fatalf("%s has no table", tc.resource)
		}
		t.Run(tc.resource, func(t *testing.T) {
			checkColumnTypes(t, r.Table, tc.objects)
		})
		for _, wide := range []bool{false, true} {
			cmd := "kubectl get " + tc.resource
			if tc.group != "" {
				cmd += "." + tc.group
			}
			if wide {
				cmd += " -o wide"
			}
			fmt.Fprintf(&got, "$ %s\n%s\n", cmd, renderTable(t, r.Table, tc.objects, wide))
		}
	}

	path := filepath.Join("testdata", "tables.golden")
	if updateGolden() {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
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

// checkColumnTypes holds cells to the types the API server's table
// encoding and kubectl expect for each column type.
func checkColumnTypes(t *testing.T, tbl *Table, objects []runtime.Object) {
	if tbl.Columns[0].Format != "name" && tbl.Columns[len(tbl.Columns)-1].Format != "name" {
		t.Errorf("no name column")
	}
	for _, obj := range objects {
		for i, cell := range tbl.Row(obj) {
			c := tbl.Columns[i]
			switch cell.(type) {
			case string:
				if c.Type == "integer" {
					t.Errorf("column %s: string cell %q in an integer column", c.Name, cell)
				}
			case int64:
				if c.Type != "integer" && c.Type != "string" {
					t.Errorf("column %s (%s): integer cell", c.Name, c.Type)
				}
			default:
				t.Errorf("column %s: cell %v of type %T; cells are strings or int64", c.Name, cell, cell)
			}
		}
	}
}
