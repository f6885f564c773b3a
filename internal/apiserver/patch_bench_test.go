package apiserver

// Patch and field-management benchmarks, over a real embedded etcd:
//
//	go test -run '^$' -bench 'BenchmarkPatch100Containers|BenchmarkManagedFieldsOverhead' -benchmem ./internal/apiserver/

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// benchPod is a pod with n containers, in the shape a client sends it.
func benchPod(name string, n int, label string) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "bench", "rev": label}},
	}
	for i := 0; i < n; i++ {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{
			Name:  "c" + strconv.Itoa(i),
			Image: "registry.example/app:" + strconv.Itoa(i),
			Args:  []string{"--port", strconv.Itoa(8000 + i)},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(8000 + i)}},
			Env:   []corev1.EnvVar{{Name: "INDEX", Value: strconv.Itoa(i)}},
		})
	}
	return pod
}

// reportCPU adds cpu-ns/op to a benchmark: the process's CPU time (user
// and system, embedded etcd and GC included) per operation. On a machine
// shared with other work it is steadier than ns/op, which counts waiting
// for a CPU too. Call it before the loop and run what it returns after.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPatch100Containers measures one PATCH of a 100-container pod
// through ServeHTTP, each changing a label: a strategic merge patch and a
// server-side apply of the whole manifest, stored and as a dry run (the
// dry run leaves out etcd's write).
func BenchmarkPatch100Containers(b *testing.B) {
	s := newApplyServer(b)
	const path = "/api/v1/namespaces/default/pods/"
	for _, name := range []string{"smp", "apply"} {
		body, _ := json.Marshal(benchPod(name, 100, "0"))
		w := call{method: "PATCH", path: path + name + "?fieldManager=bench", media: mediaApplyPatchYAML, body: string(body)}.do(b, s)
		if w.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", w.Code, w.Body.String())
		}
	}
	manifests := [2]string{}
	for i := range manifests {
		body, _ := json.Marshal(benchPod("apply", 100, strconv.Itoa(i+1)))
		manifests[i] = string(body)
	}
	for _, dry := range []bool{false, true} {
		query := "?fieldManager=bench"
		suffix := ""
		if dry {
			query += "&dryRun=All"
			suffix = "/dryRun"
		}
		b.Run("strategic"+suffix, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for i := 0; i < b.N; i++ {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"rev":"%d"}},"spec":{"containers":[{"name":"c7","image":"registry.example/app:%d"}]}}`, i, i)
				w := call{method: "PATCH", path: path + "smp" + query, media: mediaStrategicPatch, body: patch}.do(b, s)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body.String())
				}
			}
		})
		b.Run("apply"+suffix, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for i := 0; i < b.N; i++ {
				w := call{method: "PATCH", path: path + "apply" + query, media: mediaApplyPatchYAML, body: manifests[i%2]}.do(b, s)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body.String())
				}
			}
		})
	}
}

// BenchmarkManagedFieldsOverhead measures what recording managedFields
// adds to a create and an update of a small pod: the same pipeline
// (defaults, admission, validation) with and without it, as dry runs so
// that etcd's time does not hide the difference.
func BenchmarkManagedFieldsOverhead(b *testing.B) {
	s := newApplyServer(b)
	h := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "pods"}]
	ctx := context.Background()
	small := benchPod("small", 1, "0")
	_, err := h.createTracked(ctx, small.DeepCopy(), createRequest{user: privileged, track: true, manager: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	for _, track := range []bool{false, true} {
		name := "without"
		if track {
			name = "with"
		}
		b.Run("create/"+name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for i := 0; i < b.N; i++ {
				pod := small.DeepCopy()
				pod.Name = "p" + strconv.Itoa(i)
				if _, err := h.createTracked(ctx, pod, createRequest{user: privileged, dryRun: true, track: track, manager: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("update/"+name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			for i := 0; i < b.N; i++ {
				req := updateRequest{namespace: "default", name: "small", user: privileged, dryRun: true, track: track, manager: "editor",
					mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
						pod := cur.(*corev1.Pod)
						pod.Labels["rev"] = strconv.Itoa(i + 1)
						pod.ResourceVersion = ""
						return pod, false, nil
					},
				}
				if _, _, err := h.guaranteedUpdate(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
