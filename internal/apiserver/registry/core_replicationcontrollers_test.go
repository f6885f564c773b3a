package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rcValid() *corev1.ReplicationController {
	tmpl := podTemplateWith(map[string]string{"app": "web"}, "")
	return &corev1.ReplicationController{ObjectMeta: objMeta("web"),
		Spec: corev1.ReplicationControllerSpec{Template: &tmpl}}
}

func TestRCDefaults(t *testing.T) {
	r := mustResource(t, "", "replicationcontrollers")
	t.Run("selector and labels from template", func(t *testing.T) {
		rc := rcValid()
		if errs := runCreate(r, rc); len(errs) != 0 {
			t.Fatalf("defaulted rc does not validate: %v", errs.ToAggregate())
		}
		if rc.Spec.Selector["app"] != "web" || len(rc.Spec.Selector) != 1 {
			t.Errorf("selector = %v, want app=web", rc.Spec.Selector)
		}
		if rc.Labels["app"] != "web" {
			t.Errorf("labels = %v, want app=web", rc.Labels)
		}
		if *rc.Spec.Replicas != 1 {
			t.Errorf("replicas = %d, want 1", *rc.Spec.Replicas)
		}
		spec := rc.Spec.Template.Spec
		if spec.RestartPolicy != corev1.RestartPolicyAlways || spec.DNSPolicy != corev1.DNSClusterFirst ||
			spec.Containers[0].TerminationMessagePath != corev1.TerminationMessagePathDefault {
			t.Errorf("template spec not defaulted: %+v", spec)
		}
		// The selector is a copy: changing the template later must not move it.
		rc.Spec.Template.Labels["app"] = "other"
		if rc.Spec.Selector["app"] != "web" {
			t.Errorf("selector aliases the template labels")
		}
	})
	t.Run("explicit selector and labels kept", func(t *testing.T) {
		rc := rcValid()
		rc.Labels = map[string]string{"team": "a"}
		rc.Spec.Selector = map[string]string{"app": "web"}
		rc.Spec.Template.Labels["tier"] = "fe"
		rc.Spec.Replicas = new(int32(0))
		runCreate(r, rc)
		if len(rc.Spec.Selector) != 1 || rc.Labels["team"] != "a" || len(rc.Labels) != 1 || *rc.Spec.Replicas != 0 {
			t.Errorf("explicit values changed: selector %v labels %v replicas %d", rc.Spec.Selector, rc.Labels, *rc.Spec.Replicas)
		}
	})
	t.Run("status cleared on create", func(t *testing.T) {
		rc := rcValid()
		rc.Status.Replicas = 5
		runCreate(r, rc)
		if rc.Status.Replicas != 0 {
			t.Errorf("status kept on create: %+v", rc.Status)
		}
	})
}

func TestRCValidate(t *testing.T) {
	r := mustResource(t, "", "replicationcontrollers")
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.ReplicationController)
		want   []string
	}{
		{"valid", func(*corev1.ReplicationController) {}, nil},
		{"bad name", func(rc *corev1.ReplicationController) { rc.Name = "Web" }, []string{"metadata.name: Invalid value"}},
		{"no template", func(rc *corev1.ReplicationController) { rc.Spec.Template = nil },
			[]string{"spec.selector: Required value", "spec.template: Required value"}},
		{"template without labels", func(rc *corev1.ReplicationController) { rc.Spec.Template.Labels = nil },
			[]string{"spec.selector: Required value"}},
		{"negative replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = new(int32(-1)) },
			[]string{"spec.replicas: Invalid value"}},
		{"negative minReadySeconds", func(rc *corev1.ReplicationController) { rc.Spec.MinReadySeconds = -1 },
			[]string{"spec.minReadySeconds: Invalid value"}},
		{"selector does not match", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			[]string{"spec.template.metadata.labels: Invalid value"}},
		{"restartPolicy not Always", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}, []string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"activeDeadlineSeconds", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(30)) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden"}},
		{"bad template label", func(rc *corev1.ReplicationController) {
			rc.Spec.Selector = map[string]string{"app": "web"}
			rc.Spec.Template.Labels["bad key"] = "x"
			// The controller's labels are defaulted from the template's.
		}, []string{"spec.template.labels: Invalid value", "metadata.labels: Invalid value"}},
		{"template container without image", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.Containers[0].Image = "" },
			[]string{"spec.template.spec.containers[0].image: Required value"}},
		{"ephemeral containers", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"}}}
		}, []string{"spec.template.spec.ephemeralContainers: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := rcValid()
			tc.mutate(rc)
			expectErrs(t, runCreate(r, rc), tc.want...)
		})
	}
	t.Run("messages", func(t *testing.T) {
		rc := rcValid()
		rc.Spec.Template.Spec.ActiveDeadlineSeconds = new(int64(30))
		rc.Spec.Selector = map[string]string{"app": "db"}
		errs := runCreate(r, rc)
		expectErrWith(t, errs, "spec.template.spec.activeDeadlineSeconds: Forbidden", "activeDeadlineSeconds in ReplicationController is not Supported")
		expectErrWith(t, errs, "spec.template.metadata.labels: Invalid value", "`selector` does not match template `labels`")
	})
}

func TestRCUpdate(t *testing.T) {
	r := mustResource(t, "", "replicationcontrollers")
	stored := func() *corev1.ReplicationController {
		rc := rcValid()
		runCreate(r, rc)
		markStored(&rc.ObjectMeta)
		return rc
	}
	t.Run("selector may change", func(t *testing.T) {
		old, rc := stored(), stored()
		rc.Spec.Selector = map[string]string{"app": "web", "v": "2"}
		rc.Spec.Template.Labels["v"] = "2"
		expectErrs(t, runUpdate(r, rc, old))
	})
	t.Run("invalid spec reported once", func(t *testing.T) {
		old, rc := stored(), stored()
		rc.Spec.Replicas = new(int32(-2))
		rc.Labels["bad key"] = "x"
		expectErrs(t, runUpdate(r, rc, old), "spec.replicas: Invalid value", "metadata.labels: Invalid value")
	})
	t.Run("name is immutable", func(t *testing.T) {
		old, rc := stored(), stored()
		rc.Name = "other"
		expectErrs(t, runUpdate(r, rc, old), "metadata.name: Invalid value")
	})
}

func TestRCStatusUpdate(t *testing.T) {
	r := mustResource(t, "", "replicationcontrollers")
	for _, tc := range []struct {
		name   string
		status corev1.ReplicationControllerStatus
		want   []string
	}{
		{"valid", corev1.ReplicationControllerStatus{Replicas: 3, FullyLabeledReplicas: 3, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1}, nil},
		{"negative", corev1.ReplicationControllerStatus{Replicas: -1},
			// Zero counts then exceed the total, as upstream reports too.
			[]string{"status.replicas: Invalid value", "status.fullyLabeledReplicas: Invalid value",
				"status.readyReplicas: Invalid value", "status.availableReplicas: Invalid value"}},
		{"ready above replicas", corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 2},
			[]string{"status.readyReplicas: Invalid value"}},
		{"available above ready", corev1.ReplicationControllerStatus{Replicas: 3, ReadyReplicas: 1, AvailableReplicas: 2},
			[]string{"status.availableReplicas: Invalid value"}},
		{"fully labeled above replicas", corev1.ReplicationControllerStatus{Replicas: 1, FullyLabeledReplicas: 2},
			[]string{"status.fullyLabeledReplicas: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := rcValid()
			rc.Status = tc.status
			expectErrs(t, r.ValidateStatusUpdate(rc, rcValid()), tc.want...)
		})
	}
}

func TestRCScaleAndFields(t *testing.T) {
	r := mustResource(t, "", "replicationcontrollers")
	rc := rcValid()
	rc.Spec.Selector = map[string]string{"app": "web", "tier": "fe"}
	rc.Spec.Template.Labels["tier"] = "fe"
	runCreate(r, rc)
	rc.Status.Replicas = 1
	spec, status, sel := r.Scale.Get(rc)
	if spec != 1 || status != 1 || sel != "app=web,tier=fe" {
		t.Errorf("scale = %d/%d %q, want 1/1 \"app=web,tier=fe\"", spec, status, sel)
	}
	r.Scale.Set(rc, 4)
	if *rc.Spec.Replicas != 4 {
		t.Errorf("replicas after Set(4) = %d", *rc.Spec.Replicas)
	}
	if got := r.Fields(rc)["status.replicas"]; got != "1" {
		t.Errorf("status.replicas field = %q, want 1", got)
	}
	noTemplate := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	if cells := r.Table.Row(noTemplate); cells[5] != "" || cells[7] != "<none>" {
		t.Errorf("row without template: %v", cells)
	}
}
