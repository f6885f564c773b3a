package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// coreResource finds a core/v1 resource as the server would see it.
func coreResource(t *testing.T, plural string) *Resource {
	t.Helper()
	for _, r := range coreResources() {
		if r.Resource == plural {
			return r
		}
	}
	t.Fatalf("no core resource %q", plural)
	return nil
}

// create runs the write path the server runs on create, minus storage.
func coreCreate(plural string, obj runtime.Object) {
	var r *Resource
	for _, c := range coreResources() {
		if c.Resource == plural {
			r = c
		}
	}
	if r.Default != nil {
		r.Default(obj)
	}
	if r.PrepareForCreate != nil {
		r.PrepareForCreate(obj)
	}
}

func TestCoreDefaultMinimalPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "nginx",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Env: []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/tmp"}},
		}},
			Volumes: []corev1.Volume{
				{Name: "scratch"},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var"}}},
			},
		},
	}
	coreCreate("pods", pod)
	spec, c := pod.Spec, pod.Spec.Containers[0]

	checks := []struct {
		name      string
		got, want interface{}
	}{
		{"restartPolicy", spec.RestartPolicy, corev1.RestartPolicyAlways},
		{"dnsPolicy", spec.DNSPolicy, corev1.DNSClusterFirst},
		{"schedulerName", spec.SchedulerName, "default-scheduler"},
		{"terminationGracePeriodSeconds", *spec.TerminationGracePeriodSeconds, int64(30)},
		{"securityContext", *spec.SecurityContext, corev1.PodSecurityContext{}},
		{"enableServiceLinks", *spec.EnableServiceLinks, true},
		{"preemptionPolicy is left to Priority admission", spec.PreemptionPolicy, (*corev1.PreemptionPolicy)(nil)},
		{"priority", spec.Priority, (*int32)(nil)},
		{"terminationMessagePath", c.TerminationMessagePath, "/dev/termination-log"},
		{"terminationMessagePolicy", c.TerminationMessagePolicy, corev1.TerminationMessageReadFile},
		{"imagePullPolicy", c.ImagePullPolicy, corev1.PullAlways},
		{"port protocol", c.Ports[0].Protocol, corev1.ProtocolTCP},
		{"fieldRef apiVersion", c.Env[0].ValueFrom.FieldRef.APIVersion, "v1"},
		{"probe timeoutSeconds", c.LivenessProbe.TimeoutSeconds, int32(1)},
		{"probe periodSeconds", c.LivenessProbe.PeriodSeconds, int32(10)},
		{"probe successThreshold", c.LivenessProbe.SuccessThreshold, int32(1)},
		{"probe failureThreshold", c.LivenessProbe.FailureThreshold, int32(3)},
		{"httpGet scheme", c.LivenessProbe.HTTPGet.Scheme, corev1.URISchemeHTTP},
		{"httpGet path", c.LivenessProbe.HTTPGet.Path, "/"},
		{"cpu request from limit", c.Resources.Requests.Cpu().String(), "500m"},
		{"memory request from limit", c.Resources.Requests.Memory().String(), "64Mi"},
		{"emptyDir", *spec.Volumes[0].EmptyDir, corev1.EmptyDirVolumeSource{}},
		{"configMap defaultMode", *spec.Volumes[1].ConfigMap.DefaultMode, int32(420)},
		{"secret defaultMode", *spec.Volumes[2].Secret.DefaultMode, int32(420)},
		{"hostPath type", *spec.Volumes[3].HostPath.Type, corev1.HostPathUnset},
		{"status phase", pod.Status.Phase, corev1.PodPending},
		{"status qosClass", pod.Status.QOSClass, corev1.PodQOSGuaranteed},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !equality.Semantic.DeepEqual(c.got, c.want) {
				t.Errorf("got %#v, want %#v", c.got, c.want)
			}
		})
	}
	if errs := coreResource(t, "pods").Validate(pod); len(errs) != 0 {
		t.Errorf("defaulted pod does not validate: %v", errs.ToAggregate())
	}
}

func TestCoreDefaultPodSpecLeavesPodOnlyFields(t *testing.T) {
	// A Deployment template must read back without pod-only defaults.
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	DefaultPodSpec(&spec)
	if spec.EnableServiceLinks != nil || spec.PreemptionPolicy != nil {
		t.Errorf("template got pod-only defaults: enableServiceLinks=%v preemptionPolicy=%v", spec.EnableServiceLinks, spec.PreemptionPolicy)
	}
	if spec.Containers[0].Resources.Requests != nil {
		t.Errorf("template requests defaulted from limits: %v", spec.Containers[0].Resources.Requests)
	}
	if spec.Containers[0].ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("imagePullPolicy = %q, want IfNotPresent", spec.Containers[0].ImagePullPolicy)
	}
	again := *spec.DeepCopy()
	DefaultPodSpec(&again)
	if !equality.Semantic.DeepEqual(spec, again) {
		t.Errorf("DefaultPodSpec is not idempotent")
	}
}

func TestCoreImagePullPolicy(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  corev1.PullPolicy
	}{
		{"nginx", corev1.PullAlways},
		{"nginx:latest", corev1.PullAlways},
		{"nginx:1.27", corev1.PullIfNotPresent},
		{"registry.example.com:5000/team/app", corev1.PullAlways},
		{"registry.example.com:5000/team/app:v2", corev1.PullIfNotPresent},
		{"localhost/app:latest", corev1.PullAlways},
		{"nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullIfNotPresent},
		{"nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", corev1.PullAlways},
		{"Nginx", corev1.PullIfNotPresent}, // does not parse
		{"", corev1.PullIfNotPresent},
	} {
		t.Run(tc.image, func(t *testing.T) {
			c := corev1.Container{Image: tc.image}
			defaultContainer(&c)
			if c.ImagePullPolicy != tc.want {
				t.Errorf("got %q, want %q", c.ImagePullPolicy, tc.want)
			}
		})
	}
}

func TestCorePodQOSClass(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		l := corev1.ResourceList{}
		if cpu != "" {
			l[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	for _, tc := range []struct {
		name       string
		containers []corev1.ResourceRequirements
		want       corev1.PodQOSClass
	}{
		{"nothing set", []corev1.ResourceRequirements{{}}, corev1.PodQOSBestEffort},
		{"requests equal limits", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSGuaranteed},
		{"only cpu limit", []corev1.ResourceRequirements{{Requests: rl("1", ""), Limits: rl("1", "")}}, corev1.PodQOSBurstable},
		{"requests below limits", []corev1.ResourceRequirements{{Requests: rl("500m", "1Gi"), Limits: rl("1", "1Gi")}}, corev1.PodQOSBurstable},
		{"one container without", []corev1.ResourceRequirements{{Requests: rl("1", "1Gi"), Limits: rl("1", "1Gi")}, {}}, corev1.PodQOSBurstable},
		{"zero requests ignored", []corev1.ResourceRequirements{{Requests: rl("0", "0")}}, corev1.PodQOSBestEffort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := corev1.PodSpec{}
			for i, r := range tc.containers {
				spec.Containers = append(spec.Containers, corev1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			if got := podQOSClass(&spec); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCoreDefaultOtherKinds(t *testing.T) {
	t.Run("service", func(t *testing.T) {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{{Port: 80}}}}
		coreCreate("services", svc)
		p := svc.Spec.Ports[0]
		if svc.Spec.SessionAffinity != corev1.ServiceAffinityNone || p.Protocol != corev1.ProtocolTCP ||
			p.TargetPort != intstr.FromInt32(80) || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster ||
			svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
			t.Errorf("unexpected defaults: %+v", svc.Spec)
		}
		plain := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}
		coreCreate("services", plain)
		if plain.Spec.Type != corev1.ServiceTypeClusterIP || plain.Spec.ExternalTrafficPolicy != "" || plain.Spec.Ports[0].TargetPort != intstr.FromString("http") {
			t.Errorf("unexpected ClusterIP defaults: %+v", plain.Spec)
		}
	})
	t.Run("namespace", func(t *testing.T) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
		coreCreate("namespaces", ns)
		if ns.Status.Phase != corev1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Spec.Finalizers[0] != corev1.FinalizerKubernetes ||
			ns.Labels[corev1.LabelMetadataName] != "team-a" {
			t.Errorf("unexpected namespace: %+v", ns)
		}
	})
	t.Run("secret", func(t *testing.T) {
		s := &corev1.Secret{StringData: map[string]string{"password": "hunter2"}}
		coreCreate("secrets", s)
		if s.Type != corev1.SecretTypeOpaque || string(s.Data["password"]) != "hunter2" || s.StringData != nil {
			t.Errorf("unexpected secret: %+v", s)
		}
	})
	t.Run("node", func(t *testing.T) {
		n := &corev1.Node{Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24"},
			Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}}}
		coreCreate("nodes", n)
		if len(n.Spec.PodCIDRs) != 1 || n.Status.Allocatable.Pods().Value() != 110 {
			t.Errorf("unexpected node: %+v", n)
		}
	})
}
