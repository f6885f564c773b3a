package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

func TestAPIGracefulDeletion(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "graceful")
	pc := e.cs.CoreV1().Pods(ns)

	t.Run("pod never scheduled goes at once", func(t *testing.T) {
		if _, err := pc.Create(ctx, testPod("unscheduled", ""), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := pc.Delete(ctx, "unscheduled", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := pc.Get(ctx, "unscheduled", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound right after delete, got %v", err)
		}
	})

	t.Run("pod on a node waits out its grace period", func(t *testing.T) {
		cases := []struct {
			name      string
			podGrace  *int64 // spec.terminationGracePeriodSeconds
			wantGrace int64
		}{
			{"default grace", nil, 30},
			{"pod's own grace", new(int64(10)), 10},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				name := fmt.Sprintf("on-node-%d", tc.wantGrace)
				p := testPod(name, "node-a")
				p.Spec.TerminationGracePeriodSeconds = tc.podGrace
				if _, err := pc.Create(ctx, p, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				before := time.Now()
				if err := pc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				// The kubelet must confirm the stop: the pod stays, marked.
				got, err := pc.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("pod on a node must stay during its grace period: %v", err)
				}
				if got.DeletionTimestamp == nil || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != tc.wantGrace {
					t.Fatalf("deletionTimestamp %v grace %v, want grace %d", got.DeletionTimestamp, got.DeletionGracePeriodSeconds, tc.wantGrace)
				}
				// deletionTimestamp is when the grace period ends.
				deadline := before.Add(time.Duration(tc.wantGrace) * time.Second)
				if d := got.DeletionTimestamp.Sub(deadline); d < -2*time.Second || d > 2*time.Second {
					t.Errorf("deletionTimestamp %v, want about %v", got.DeletionTimestamp.Time, deadline)
				}
				// A shorter grace period shortens it; a longer one does not extend it.
				for _, g := range []int64{tc.wantGrace + 100, 5} {
					if err := pc.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &g}); err != nil {
						t.Fatal(err)
					}
				}
				if got, err = pc.Get(ctx, name, metav1.GetOptions{}); err != nil || *got.DeletionGracePeriodSeconds != 5 {
					t.Fatalf("after shortening: %v %v, want grace 5", got.DeletionGracePeriodSeconds, err)
				}
				// Grace 0 is the node's confirmation (or a force delete).
				if err := pc.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
					t.Fatal(err)
				}
				if _, err := pc.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Fatalf("want NotFound after grace 0, got %v", err)
				}
			})
		}
	})

	t.Run("finalizers keep an object until removed", func(t *testing.T) {
		cmc := e.cs.CoreV1().ConfigMaps(ns)
		cm := testConfigMap("held", nil)
		cm.Finalizers = []string{"e2e.example.com/hold"}
		if _, err := cmc.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cmc.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := cmc.Get(ctx, "held", metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Fatalf("object with a finalizer must stay, marked: %v %v", got, err)
		}
		// No new finalizers on an object being deleted (upstream's rule).
		more := got.DeepCopy()
		more.Finalizers = append(more.Finalizers, "e2e.example.com/late")
		_, err = cmc.Update(ctx, more, metav1.UpdateOptions{})
		wantStatus(t, err, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)

		got.Finalizers = nil
		if _, err := cmc.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cmc.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound once the last finalizer is gone, got %v", err)
		}
	})

	t.Run("propagation policy", func(t *testing.T) {
		cases := []struct {
			policy        metav1.DeletionPropagation
			wantFinalizer string // "" = deleted at once
		}{
			{metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
			{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
			{metav1.DeletePropagationBackground, ""},
		}
		dc := e.cs.AppsV1().Deployments(ns)
		for _, tc := range cases {
			t.Run(string(tc.policy), func(t *testing.T) {
				name := "prop-" + strings.ToLower(string(tc.policy))
				if _, err := dc.Create(ctx, testDeployment(name, 1), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				policy := tc.policy
				if err := dc.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
					t.Fatal(err)
				}
				got, err := dc.Get(ctx, name, metav1.GetOptions{})
				if tc.wantFinalizer == "" {
					if !apierrors.IsNotFound(err) {
						t.Fatalf("background delete: want NotFound, got %v", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("the garbage collector's finalizer must keep the object: %v", err)
				}
				if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, tc.wantFinalizer) {
					t.Fatalf("deletionTimestamp %v finalizers %v, want %s", got.DeletionTimestamp, got.Finalizers, tc.wantFinalizer)
				}
			})
		}
	})

	t.Run("namespace deletion leaves it terminating", func(t *testing.T) {
		doomed := e.namespace(t, "doomed")
		if err := e.cs.CoreV1().Namespaces().Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err := e.cs.CoreV1().Namespaces().Get(ctx, doomed, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("a namespace with the kubernetes finalizer must stay until its content is gone: %v", err)
		}
		if got.Status.Phase != corev1.NamespaceTerminating || got.DeletionTimestamp == nil {
			t.Fatalf("phase %q deletionTimestamp %v, want Terminating and set", got.Status.Phase, got.DeletionTimestamp)
		}
		_, err = e.cs.CoreV1().ConfigMaps(doomed).Create(ctx, testConfigMap("late", nil), metav1.CreateOptions{})
		st := wantStatus(t, err, http.StatusForbidden, metav1.StatusReasonForbidden)
		want := fmt.Sprintf("configmaps %q is forbidden: unable to create new content in namespace %s because it is being terminated", "late", doomed)
		if st.Message != want {
			t.Errorf("message\n got %q\nwant %q", st.Message, want)
		}
	})
}

// TestAPIConcurrentUpdates: compare-and-swap on resourceVersion means
// concurrent read-modify-write loops that retry on 409 lose no update.
func TestAPIConcurrentUpdates(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "race")
	cmc := e.cs.CoreV1().ConfigMaps(ns)
	if _, err := cmc.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "counter"}, Data: map[string]string{"n": "0"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const workers, increments = 20, 10
	// client-go's default retry gives up after 5 tries; 20 writers on one
	// object need more. No Cap: reaching it ends the retries.
	backoff := wait.Backoff{Steps: 1000, Duration: 2 * time.Millisecond, Factor: 1, Jitter: 2}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		errs      []error
		conflicts int
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range increments {
				err := retry.RetryOnConflict(backoff, func() error {
					cm, err := cmc.Get(ctx, "counter", metav1.GetOptions{})
					if err != nil {
						return err
					}
					n, err := strconv.Atoi(cm.Data["n"])
					if err != nil {
						return err
					}
					cm.Data["n"] = strconv.Itoa(n + 1)
					_, err = cmc.Update(ctx, cm, metav1.UpdateOptions{})
					if apierrors.IsConflict(err) {
						mu.Lock()
						conflicts++
						mu.Unlock()
					}
					return err
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d workers failed, first: %v", len(errs), errs[0])
	}
	got, err := cmc.Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["n"] != strconv.Itoa(workers*increments) {
		t.Fatalf("counter %s, want %d: updates were lost", got.Data["n"], workers*increments)
	}
	t.Logf("%d conflicts retried", conflicts)
}

// A second delete that drops the garbage collector's finalizers lets the
// object go at once, as upstream, instead of leaving it marked forever.
func TestAPIDeleteDroppingPropagationFinalizer(t *testing.T) {
	e := newAPIEnv(t, Config{Controllers: []string{"-*"}, DisableScheduler: true})
	ctx := context.Background()
	ns := e.namespace(t, "refinalize")
	cms := e.cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	got, err := cms.Get(ctx, "c", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, metav1.FinalizerOrphanDependents) {
		t.Fatalf("after an orphan delete want the orphan finalizer, got %v, %v", got, err)
	}
	if err := cms.Delete(ctx, "c", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "c", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound after the background delete, got %v", err)
	}
}
