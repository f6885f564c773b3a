package endpointslice_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// waitRunning waits until n pods of ns are Running with an IP.
func waitRunning(t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		list, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
				running++
			}
		}
		return running == n, fmt.Sprintf("%d of %d pods running", running, n)
	})
}
