package bench

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Labels and annotations the benchmark puts on its pods.
const (
	labelApp   = "app.kubernetes.io/name"
	labelGroup = "bench.rudder.dev/group" // g00..g99: what the CRUD stage's LIST selects
	annSeq     = "bench.rudder.dev/seq"   // the watch stage's event number
	annSent    = "bench.rudder.dev/sent"  // wall clock (Unix ns) just before the write was sent
	annUpdated = "bench.rudder.dev/updated"

	// groups is how many values labelGroup takes: a CRUD LIST returns 1/groups
	// of the namespace.
	groups = 100

	// noScheduler is the pods' schedulerName. No scheduler claims it, so on a
	// real cluster the pods stay Pending and no node runs them: the benchmark
	// loads the API server, not the nodes.
	noScheduler = "rudder-bench-unscheduled"
)

// podFactory builds the benchmark's pods: a small but realistic web-app pod
// (one container with ports, env, resources, probes and a restricted
// security context): about 830 bytes in protobuf and 1.7 KB in JSON once
// the server has defaulted it. Every varying field derives from the seed and the pod's name, so two
// runs with the same flags send the same bytes.
type podFactory struct {
	seed      uint64
	namespace string
}

var images = []string{
	"registry.k8s.io/pause:3.10",
	"registry.k8s.io/e2e-test-images/agnhost:2.52",
	"docker.io/library/nginx:1.27-alpine",
	"ghcr.io/example/web:v1.4.2",
}

// podName is the name of item i of a set of pods.
func podName(prefix string, i int) string { return fmt.Sprintf("%s-%06d", prefix, i) }

func (f podFactory) pod(prefix string, i int) *corev1.Pod {
	name := podName(prefix, i)
	rng := rand.New(rand.NewPCG(f.seed, hashName(name)))
	cpu := []string{"50m", "100m", "250m"}[rng.IntN(3)]
	mem := []string{"64Mi", "128Mi", "256Mi"}[rng.IntN(3)]
	port := int32(8000 + rng.IntN(1000))
	app := fmt.Sprintf("web-%02d", rng.IntN(20))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: f.namespace,
			Labels: map[string]string{
				labelApp:                      app,
				"app.kubernetes.io/component": "frontend",
				"pod-template-hash":           fmt.Sprintf("%08x", rng.Uint32()),
				labelGroup:                    fmt.Sprintf("g%02d", i%groups),
			},
			Annotations: map[string]string{
				"prometheus.io/scrape": "true",
				"prometheus.io/port":   fmt.Sprint(port),
			},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                noScheduler,
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To(int64(10001)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: images[rng.IntN(len(images))],
				Args:  []string{"--listen", fmt.Sprintf(":%d", port), "--log-level=info"},
				Ports: []corev1.ContainerPort{
					{Name: "http", ContainerPort: port, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP},
				},
				Env: []corev1.EnvVar{
					{Name: "APP_NAME", Value: app},
					{Name: "APP_REGION", Value: []string{"eu-west-1", "us-east-2", "ap-south-1"}[rng.IntN(3)]},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					PeriodSeconds: 10,
				},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// hashName is FNV-1a: a stable per-pod stream for the seeded generator.
func hashName(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
