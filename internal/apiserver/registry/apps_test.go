package registry

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var webLabels = map[string]string{"app": "web"}

func deployment(mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: objMeta("web"), Spec: appsv1.DeploymentSpec{
		Selector: matchLabels(webLabels),
		Template: podTemplateWith(webLabels, ""),
	}}
	if mutate != nil {
		mutate(d)
	}
	return d
}

func TestDeploymentDefaults(t *testing.T) {
	r := mustResource(t, "apps", "deployments")
	t.Run("empty spec", func(t *testing.T) {
		d := deployment(nil)
		r.Default(d)
		want := appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Strategy: appsv1.DeploymentStrategy{
				Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxUnavailable: new(intstr.FromString("25%")),
					MaxSurge:       new(intstr.FromString("25%")),
				},
			},
			RevisionHistoryLimit:    new(int32(10)),
			ProgressDeadlineSeconds: new(int32(600)),
		}
		got := d.Spec
		got.Selector, got.Template = nil, corev1.PodTemplateSpec{}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("got %+v\nwant %+v", got, want)
		}
		if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("pod template not defaulted: restartPolicy %q", d.Spec.Template.Spec.RestartPolicy)
		}
	})
	t.Run("recreate gets no rolling update", func(t *testing.T) {
		d := deployment(func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType })
		r.Default(d)
		if d.Spec.Strategy.RollingUpdate != nil {
			t.Errorf("rollingUpdate = %+v, want nil", d.Spec.Strategy.RollingUpdate)
		}
	})
	t.Run("set values kept", func(t *testing.T) {
		d := deployment(func(d *appsv1.Deployment) {
			d.Spec.Replicas = new(int32(0))
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: new(intstr.FromInt32(2))}
		})
		r.Default(d)
		if *d.Spec.Replicas != 0 || d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue() != 2 || d.Spec.Strategy.RollingUpdate.MaxUnavailable.StrVal != "25%" {
			t.Errorf("spec = %+v", d.Spec)
		}
	})
}

func TestDeploymentValidate(t *testing.T) {
	r := mustResource(t, "apps", "deployments")
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1.Deployment)
		want   []string
	}{
		{name: "valid"},
		{name: "bad name", mutate: func(d *appsv1.Deployment) { d.Name = "Web_1" }, want: []string{"metadata.name: Invalid value"}},
		{name: "no selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			want: []string{"spec.selector: Required value", "spec.template.metadata.labels: Invalid value"}},
		{name: "empty selector", mutate: func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			want: []string{"spec.selector: Invalid value"}},
		{name: "negative replicas", mutate: func(d *appsv1.Deployment) { d.Spec.Replicas = new(int32(-1)) },
			want: []string{"spec.replicas: Invalid value"}},
		{name: "restart never", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			want: []string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{name: "deadline", mutate: func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(5)) },
			want: []string{"spec.template.spec.activeDeadlineSeconds: Forbidden"}},
		{name: "surge and unavailable zero", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: new(intstr.FromInt32(0)), MaxUnavailable: new(intstr.FromString("0%"))}
		}, want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{name: "unavailable over 100%", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: new(intstr.FromString("150%"))}
		}, want: []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value"}},
		{name: "surge not a percent", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: new(intstr.FromString("lots"))}
		}, want: []string{"spec.strategy.rollingUpdate.maxSurge: Invalid value"}},
		{name: "unknown strategy", mutate: func(d *appsv1.Deployment) { d.Spec.Strategy.Type = "BlueGreen" },
			want: []string{"spec.strategy: Unsupported value"}},
		{name: "recreate with rolling update", mutate: func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{}}
		}, want: []string{"spec.strategy.rollingUpdate: Forbidden"}},
		{name: "deadline within min ready", mutate: func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 700
		}, want: []string{"spec.progressDeadlineSeconds: Invalid value"}},
		{name: "bad template label", mutate: func(d *appsv1.Deployment) {
			d.Spec.Template.Labels = map[string]string{"app": "web", "bad key!": "x"}
		}, want: []string{"spec.template.labels: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, deployment(tc.mutate)), tc.want...)
		})
	}

	t.Run("mismatch message", func(t *testing.T) {
		d := deployment(func(d *appsv1.Deployment) { d.Spec.Selector = matchLabels(map[string]string{"app": "db"}) })
		errs := runCreate(r, d)
		// apimachinery 0.36 prints maps as JSON, as Kubernetes 1.36 does.
		want := "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"
		if len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("got %v\nwant %s", errs, want)
		}
	})
}

func TestDeploymentUpdate(t *testing.T) {
	r := mustResource(t, "apps", "deployments")
	old := deployment(nil)
	r.Default(old)
	markStored(&old.ObjectMeta)

	t.Run("selector is immutable", func(t *testing.T) {
		d := old.DeepCopy()
		d.Spec.Selector = matchLabels(map[string]string{"app": "web", "tier": "front"})
		d.Spec.Template.Labels = map[string]string{"app": "web", "tier": "front"}
		expectErrs(t, runUpdate(r, d, old), "spec.selector: Invalid value")
	})
	t.Run("scale and image change allowed", func(t *testing.T) {
		d := old.DeepCopy()
		d.Spec.Replicas = new(int32(5))
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		expectErrs(t, runUpdate(r, d, old))
	})
	t.Run("annotation change bumps generation", func(t *testing.T) {
		d := old.DeepCopy()
		d.Annotations = map[string]string{"kubernetes.io/change-cause": "manual"}
		expectErrs(t, runUpdate(r, d, old))
		if d.Generation != 2 {
			t.Errorf("generation = %d, want 2", d.Generation)
		}
	})
	t.Run("status counts", func(t *testing.T) {
		d := old.DeepCopy()
		d.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 3, AvailableReplicas: 1}
		expectErrs(t, r.ValidateStatusUpdate(d, old), "status.readyReplicas: Invalid value")
	})
	t.Run("collision count decrement", func(t *testing.T) {
		o := old.DeepCopy()
		o.Status.CollisionCount = new(int32(2))
		d := o.DeepCopy()
		d.Status.CollisionCount = new(int32(1))
		expectErrs(t, r.ValidateStatusUpdate(d, o), "status.collisionCount: Invalid value")
	})
}

func TestCreateResetsStatus(t *testing.T) {
	for _, tc := range []struct {
		resource string
		obj      runtime.Object
		status   func(runtime.Object) any
	}{
		{"deployments", &appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 3}}, func(o runtime.Object) any { return o.(*appsv1.Deployment).Status }},
		{"replicasets", &appsv1.ReplicaSet{Status: appsv1.ReplicaSetStatus{Replicas: 3}}, func(o runtime.Object) any { return o.(*appsv1.ReplicaSet).Status }},
		{"statefulsets", &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{Replicas: 3}}, func(o runtime.Object) any { return o.(*appsv1.StatefulSet).Status }},
		{"daemonsets", &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{NumberReady: 3}}, func(o runtime.Object) any { return o.(*appsv1.DaemonSet).Status }},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			mustResource(t, "apps", tc.resource).PrepareForCreate(tc.obj)
			if s := tc.status(tc.obj); !equality.Semantic.DeepEqual(s, zeroStatusOf(s)) {
				t.Errorf("status not reset: %+v", s)
			}
		})
	}
}

// equalZero returns the zero value of v's type.
func zeroStatusOf(v any) any {
	switch v.(type) {
	case appsv1.DeploymentStatus:
		return appsv1.DeploymentStatus{}
	case appsv1.ReplicaSetStatus:
		return appsv1.ReplicaSetStatus{}
	case appsv1.StatefulSetStatus:
		return appsv1.StatefulSetStatus{}
	case appsv1.DaemonSetStatus:
		return appsv1.DaemonSetStatus{}
	}
	return nil
}

func TestReplicaSet(t *testing.T) {
	r := mustResource(t, "apps", "replicasets")
	rs := &appsv1.ReplicaSet{ObjectMeta: objMeta("web-5d4f"), Spec: appsv1.ReplicaSetSpec{Selector: matchLabels(webLabels), Template: podTemplateWith(webLabels, "")}}
	expectErrs(t, runCreate(r, rs))
	if *rs.Spec.Replicas != 1 {
		t.Errorf("replicas = %d, want 1", *rs.Spec.Replicas)
	}

	bad := rs.DeepCopy()
	bad.Spec.Selector = &metav1.LabelSelector{}
	errs := r.Validate(bad)
	expectErrs(t, errs, "spec.selector: Invalid value")
	if !strings.Contains(errs[0].Detail, "empty selector is invalid for deployment") {
		t.Errorf("detail = %q", errs[0].Detail)
	}

	rs.Status.Replicas = 4
	if got := r.Fields(rs)["status.replicas"]; got != "4" {
		t.Errorf("status.replicas field = %q", got)
	}

	spec, status, sel := r.Scale.Get(rs)
	if spec != 1 || status != 4 || sel != "app=web" {
		t.Errorf("scale = %d %d %q", spec, status, sel)
	}
	r.Scale.Set(rs, 7)
	if *rs.Spec.Replicas != 7 {
		t.Errorf("replicas after scale = %d", *rs.Spec.Replicas)
	}
}

func statefulSet(mutate func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: objMeta("db"), Spec: appsv1.StatefulSetSpec{
		Selector:    matchLabels(map[string]string{"app": "db"}),
		Template:    podTemplateWith(map[string]string{"app": "db"}, ""),
		ServiceName: "db",
	}}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestStatefulSetDefaults(t *testing.T) {
	s := statefulSet(func(s *appsv1.StatefulSet) {
		s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
	})
	mustResource(t, "apps", "statefulsets").Default(s)
	spec := s.Spec
	switch {
	case *spec.Replicas != 1, *spec.RevisionHistoryLimit != 10:
		t.Errorf("replicas %d revisionHistoryLimit %d", *spec.Replicas, *spec.RevisionHistoryLimit)
	case spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement:
		t.Errorf("podManagementPolicy %q", spec.PodManagementPolicy)
	case spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType || *spec.UpdateStrategy.RollingUpdate.Partition != 0:
		t.Errorf("updateStrategy %+v", spec.UpdateStrategy)
	case *spec.PersistentVolumeClaimRetentionPolicy != appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Retain", WhenScaled: "Retain"}:
		t.Errorf("retention %+v", spec.PersistentVolumeClaimRetentionPolicy)
	}
	claim := spec.VolumeClaimTemplates[0]
	if claim.Spec.VolumeMode == nil || *claim.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || claim.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim template %+v", claim)
	}

	t.Run("on delete keeps no rolling update", func(t *testing.T) {
		s := statefulSet(func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType })
		mustResource(t, "apps", "statefulsets").Default(s)
		if s.Spec.UpdateStrategy.RollingUpdate != nil {
			t.Errorf("rollingUpdate %+v", s.Spec.UpdateStrategy.RollingUpdate)
		}
	})
}

func TestStatefulSetValidate(t *testing.T) {
	r := mustResource(t, "apps", "statefulsets")
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   []string
	}{
		{name: "valid"},
		{name: "mounts a claim template", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
			s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/db"}}
		}},
		{name: "subdomain name", mutate: func(s *appsv1.StatefulSet) { s.Name = "db.example" }, want: []string{"metadata.name: Invalid value"}},
		{name: "pod management", mutate: func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" },
			want: []string{"spec.podManagementPolicy: Invalid value"}},
		{name: "empty selector", mutate: func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			want: []string{"spec.selector: Invalid value"}},
		{name: "retention", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: "Keep", WhenScaled: "Delete"}
		}, want: []string{"spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value"}},
		{name: "on delete with rolling update", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{}}
		}, want: []string{"spec.updateStrategy.rollingUpdate: Invalid value"}},
		{name: "negative partition", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: new(int32(-1))}
		}, want: []string{"spec.updateStrategy.rollingUpdate.partition: Invalid value"}},
		{name: "ordinals", mutate: func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -2} },
			want: []string{"spec.ordinals.start: Invalid value"}},
		{name: "restart on failure", mutate: func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			want: []string{"spec.template.spec.restartPolicy: Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, statefulSet(tc.mutate)), tc.want...)
		})
	}

	t.Run("dangling mount still caught", func(t *testing.T) {
		s := statefulSet(func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "nope", MountPath: "/x"}}
		})
		errs := runCreate(r, s)
		for _, e := range errs {
			if strings.HasPrefix(e.Field, "spec.template.spec.containers[0].volumeMounts[0]") {
				return
			}
		}
		t.Errorf("no error for a mount of no volume: %v", errs)
	})

	t.Run("maxUnavailable dropped", func(t *testing.T) {
		s := statefulSet(func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: new(intstr.FromInt32(2))}
		})
		expectErrs(t, runCreate(r, s))
		if s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
			t.Errorf("maxUnavailable kept: %v", s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable)
		}
	})
}

func TestStatefulSetUpdate(t *testing.T) {
	r := mustResource(t, "apps", "statefulsets")
	old := statefulSet(nil)
	r.Default(old)
	markStored(&old.ObjectMeta)
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		want   []string
	}{
		{name: "replicas and image", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.Replicas = new(int32(3))
			s.Spec.Template.Spec.Containers[0].Image = "postgres:17"
		}},
		{name: "update strategy", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}},
		{name: "service name", mutate: func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "other" }, want: []string{"spec: Forbidden"}},
		{name: "claim templates", mutate: func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data"}}}
		}, want: []string{"spec: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := old.DeepCopy()
			tc.mutate(s)
			expectErrs(t, runUpdate(r, s, old), tc.want...)
		})
	}
}

func daemonSet(mutate func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	l := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: objMeta("agent"), Spec: appsv1.DaemonSetSpec{Selector: matchLabels(l), Template: podTemplateWith(l, "")}}
	if mutate != nil {
		mutate(ds)
	}
	return ds
}

func TestDaemonSet(t *testing.T) {
	r := mustResource(t, "apps", "daemonsets")
	t.Run("defaults", func(t *testing.T) {
		ds := daemonSet(nil)
		r.Default(ds)
		ru := ds.Spec.UpdateStrategy.RollingUpdate
		if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.IntValue() != 1 || ru.MaxSurge.IntValue() != 0 || ru.MaxSurge.Type != intstr.Int {
			t.Errorf("updateStrategy %+v %+v", ds.Spec.UpdateStrategy, ru)
		}
		if *ds.Spec.RevisionHistoryLimit != 10 {
			t.Errorf("revisionHistoryLimit %d", *ds.Spec.RevisionHistoryLimit)
		}
	})
	for _, tc := range []struct {
		name   string
		mutate func(*appsv1.DaemonSet)
		want   []string
	}{
		{name: "valid"},
		{name: "no selector", mutate: func(ds *appsv1.DaemonSet) { ds.Spec.Selector = nil }, want: []string{"spec.template.metadata.labels: Invalid value"}},
		{name: "surge and unavailable", mutate: func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: new(intstr.FromInt32(1)), MaxUnavailable: new(intstr.FromInt32(1))}
		}, want: []string{"spec.updateStrategy.rollingUpdate.maxSurge: Invalid value"}},
		{name: "neither surge nor unavailable", mutate: func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxSurge: new(intstr.FromString("0%")), MaxUnavailable: new(intstr.FromInt32(0))}
		}, want: []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value"}},
		{name: "unknown strategy", mutate: func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = "Surge" },
			want: []string{"spec.updateStrategy: Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, daemonSet(tc.mutate)), tc.want...)
		})
	}

	t.Run("template generation", func(t *testing.T) {
		ds := daemonSet(func(ds *appsv1.DaemonSet) {
			ds.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "9"}
		})
		expectErrs(t, runCreate(r, ds))
		markStored(&ds.ObjectMeta)
		gen := func(ds *appsv1.DaemonSet) string { return ds.Annotations[appsv1.DeprecatedTemplateGeneration] }
		// A client-supplied value on create is taken as a floor, as
		// upstream does with its internal field.
		if gen(ds) != "9" {
			t.Fatalf("generation after create = %q", gen(ds))
		}
		fresh := daemonSet(nil)
		expectErrs(t, runCreate(r, fresh))
		if gen(fresh) != "1" {
			t.Fatalf("generation of a fresh daemonset = %q, want 1", gen(fresh))
		}

		same := ds.DeepCopy()
		same.Annotations[appsv1.DeprecatedTemplateGeneration] = "100"
		expectErrs(t, runUpdate(r, same, ds))
		if gen(same) != "9" {
			t.Errorf("client changed the generation: %q", gen(same))
		}
		changed := ds.DeepCopy()
		changed.Spec.Template.Spec.Containers[0].Image = "agent:2"
		expectErrs(t, runUpdate(r, changed, ds))
		if gen(changed) != "10" {
			t.Errorf("generation after template change = %q, want 10", gen(changed))
		}
		moved := ds.DeepCopy()
		moved.Spec.Selector = matchLabels(map[string]string{"app": "agent", "v": "2"})
		moved.Spec.Template.Labels = map[string]string{"app": "agent", "v": "2"}
		expectErrs(t, runUpdate(r, moved, ds), "spec.selector: Invalid value")
	})
}

func TestControllerRevision(t *testing.T) {
	r := mustResource(t, "apps", "controllerrevisions")
	cr := &appsv1.ControllerRevision{ObjectMeta: objMeta("agent-6d5f9"), Revision: 1}
	expectErrs(t, runCreate(r, cr), "data: Required value")
	cr.Data = runtime.RawExtension{Raw: []byte(`{"spec":{}}`)}
	expectErrs(t, runCreate(r, cr))
	markStored(&cr.ObjectMeta)
	changed := cr.DeepCopy()
	changed.Data.Raw = []byte(`{"spec":{"x":1}}`)
	expectErrs(t, r.ValidateUpdate(changed, cr), "data: Invalid value")
}

func TestScaleSelectors(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}}
	d := deployment(func(d *appsv1.Deployment) {
		d.Spec.Selector = sel
		d.Spec.Replicas = new(int32(3))
		d.Status.Replicas = 2
	})
	s := statefulSet(func(s *appsv1.StatefulSet) { s.Spec.Selector = sel; s.Spec.Replicas = new(int32(4)) })
	for _, tc := range []struct {
		resource     string
		obj          runtime.Object
		spec, status int32
	}{
		{"deployments", d, 3, 2},
		{"statefulsets", s, 4, 0},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			sc := mustResource(t, "apps", tc.resource).Scale
			spec, status, selector := sc.Get(tc.obj)
			if spec != tc.spec || status != tc.status || selector != metav1.FormatLabelSelector(sel) || selector != "app=web,tier in (a,b)" {
				t.Errorf("Get = %d %d %q", spec, status, selector)
			}
			sc.Set(tc.obj, 9)
			if spec, _, _ := sc.Get(tc.obj); spec != 9 {
				t.Errorf("after Set(9): %d", spec)
			}
		})
	}
}
