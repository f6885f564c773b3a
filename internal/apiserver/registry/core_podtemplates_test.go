package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func podTemplateObject() *corev1.PodTemplate {
	return &corev1.PodTemplate{ObjectMeta: objMeta("tmpl"), Template: podTemplateWith(map[string]string{"app": "web"}, "")}
}

func TestPodTemplateDefaults(t *testing.T) {
	pt := podTemplateObject()
	if errs := runCreate(mustResource(t, "", "podtemplates"), pt); len(errs) != 0 {
		t.Fatalf("defaulted template does not validate: %v", errs.ToAggregate())
	}
	spec := pt.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyAlways || *spec.TerminationGracePeriodSeconds != 30 ||
		spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("template spec not defaulted: %+v", spec)
	}
	if spec.EnableServiceLinks != nil {
		t.Errorf("template got the pod-only enableServiceLinks default")
	}
}

func TestPodTemplateValidate(t *testing.T) {
	r := mustResource(t, "", "podtemplates")
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PodTemplate)
		want   []string
	}{
		{"valid", func(*corev1.PodTemplate) {}, nil},
		// Unlike a controller's template, any restart policy will do.
		{"restartPolicy Never", func(pt *corev1.PodTemplate) { pt.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, nil},
		{"bad name", func(pt *corev1.PodTemplate) { pt.Name = "Tmpl" }, []string{"metadata.name: Invalid value"}},
		{"no containers", func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers = nil },
			[]string{"template.spec.containers: Required value"}},
		{"container without image", func(pt *corev1.PodTemplate) { pt.Template.Spec.Containers[0].Image = "" },
			[]string{"template.spec.containers[0].image: Required value"}},
		{"bad template label", func(pt *corev1.PodTemplate) { pt.Template.Labels["bad key"] = "x" },
			[]string{"template.labels: Invalid value"}},
		{"bad restartPolicy", func(pt *corev1.PodTemplate) { pt.Template.Spec.RestartPolicy = "Sometimes" },
			[]string{"template.spec.restartPolicy: Unsupported value"}},
		{"ephemeral containers", func(pt *corev1.PodTemplate) {
			pt.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"}}}
		}, []string{"template.spec.ephemeralContainers: Forbidden"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pt := podTemplateObject()
			tc.mutate(pt)
			expectErrs(t, runCreate(r, pt), tc.want...)
		})
	}
	t.Run("update", func(t *testing.T) {
		old := podTemplateObject()
		runCreate(r, old)
		markStored(&old.ObjectMeta)
		pt := old.DeepCopy()
		pt.Template.Spec.Containers[0].Image = "nginx:1.28"
		expectErrs(t, runUpdate(r, pt, old))
		pt.Template.Spec.Containers[0].Name = "Bad_Name"
		expectErrs(t, runUpdate(r, pt, old), "template.spec.containers[0].name: Invalid value")
	})
}
