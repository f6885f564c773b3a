package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// TestEphemeralContainers: `kubectl debug` adds an ephemeral container
// to a pod of a simulated node (which will not run it), and the
// subresource refuses what upstream refuses.
func TestEphemeralContainers(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 1})
	cs := c.Client
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := controllertest.CreateNamespace(t, cs, "debug")
	controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "web", "sim-0", 8080))

	out := controllertest.KubectlOutput(t, c.Server.Kubeconfig, "debug", "-n", ns, "web", "--image=busybox:1.36", "-c", "debugger", "--target=app", "--", "sleep", "3600")
	if strings.Contains(out, "error") {
		t.Errorf("kubectl debug printed %q", out)
	}
	pod := subGetPod(ctx, t, cs, ns, "web")
	if len(pod.Spec.EphemeralContainers) != 1 {
		t.Fatalf("ephemeral containers after kubectl debug: %+v", pod.Spec.EphemeralContainers)
	}
	ec := pod.Spec.EphemeralContainers[0]
	if ec.Name != "debugger" || ec.Image != "busybox:1.36" || ec.TargetContainerName != "app" || ec.TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("ephemeral container = %+v", ec)
	}

	update := func(mut func(p *corev1.Pod)) error {
		p := subGetPod(ctx, t, cs, ns, "web")
		mut(p)
		_, err := cs.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, "web", p, metav1.UpdateOptions{})
		return err
	}
	debug := func(name string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1.36",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}}
	}
	for _, tc := range []struct {
		name string
		mut  func(p *corev1.Pod)
		want string
	}{
		{"ports", func(p *corev1.Pod) {
			ec := debug("with-port")
			ec.Ports = []corev1.ContainerPort{{ContainerPort: 9000}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container"},
		{"probe", func(p *corev1.Pod) {
			ec := debug("with-probe")
			ec.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, "spec.ephemeralContainers[1].readinessProbe: Forbidden: cannot be set for an Ephemeral Container"},
		{"name of a regular container", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debug("app"))
		}, `spec.ephemeralContainers[1].name: Duplicate value: "app"`},
		{"unknown target", func(p *corev1.Pod) {
			ec := debug("targeted")
			ec.TargetContainerName = "nope"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		}, `spec.ephemeralContainers[1].targetContainerName: Not found: "nope"`},
		{"removal", func(p *corev1.Pod) { p.Spec.EphemeralContainers = nil },
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed`},
		{"change", func(p *corev1.Pod) { p.Spec.EphemeralContainers[0].Image = "busybox:1.37" },
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be changed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := update(tc.mut)
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want 422 with %q", err, tc.want)
			}
		})
	}

	t.Run("only ephemeral containers change", func(t *testing.T) {
		if err := update(func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = "other:2"
			p.Labels["extra"] = "yes"
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, debug("second"))
		}); err != nil {
			t.Fatal(err)
		}
		p := subGetPod(ctx, t, cs, ns, "web")
		if p.Spec.Containers[0].Image != "registry.example/app:1" || p.Labels["extra"] != "" || len(p.Spec.EphemeralContainers) != 2 {
			t.Errorf("after the update: image %q, labels %v, %d ephemeral containers", p.Spec.Containers[0].Image, p.Labels, len(p.Spec.EphemeralContainers))
		}
	})

	t.Run("missing pod", func(t *testing.T) {
		_, err := cs.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, "nobody", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}}, metav1.UpdateOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("got %v, want 404", err)
		}
	})
}
