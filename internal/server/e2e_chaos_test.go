package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers"
)

// The controller manager is killed again and again during a 1,000-replica
// rollout. Controllers are level-based, so each new manager picks up where
// the last stopped: at no moment do the replica sets ask for more than
// replicas + maxSurge pods, no replica set ever has more live pods than it
// asks for unless it is scaling down (no duplicates), and the end state is
// exactly the desired one.
func TestChaosControllerManagerRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos rollout takes about a minute")
	}
	const replicas, surge = 1000, 250
	srv, rc := startTestServer(t, Config{SimulatedNodes: 12, Controllers: []string{"-*"}})
	select {
	case <-srv.SimNodes.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("simulated nodes did not register")
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()

	// A manager that lives for a random 0.3–1.5 s, again and again, until
	// stopped; the last one runs until the test ends.
	stopChaos := make(chan struct{})
	chaosDone := make(chan int)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		kills := 0
		for {
			mctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = controller.RunManager(mctx, controller.ManagerConfig{RestConfig: rc,
					Controllers: []string{"deployment", "replicaset"}, Descriptors: controllers.Descriptors(controllers.Config{CAPEM: srv.PKI.CAPEM})})
			}()
			select {
			case <-stopChaos:
				cancel()
				<-done
				chaosDone <- kills
				return
			case <-time.After(time.Duration(300+rng.IntN(1200)) * time.Millisecond):
			}
			cancel()
			<-done
			kills++
		}
	}()
	var stopOnce sync.Once
	stop := func() (kills int) {
		kills = -1
		stopOnce.Do(func() {
			close(stopChaos)
			kills = <-chaosDone
		})
		return kills
	}
	t.Cleanup(func() { stop() })

	bounds := startOwnerBoundsWatch(t, cs, "default", "app=chaos")
	maxSurge, maxUnavailable := intstr.FromInt32(surge), intstr.FromString("25%")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos"},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "chaos"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &maxSurge, MaxUnavailable: &maxUnavailable}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "chaos"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, "chaos", "v1", replicas, 120*time.Second)
	// The update, under the same chaos.
	// The controllers write status meanwhile: update on a fresh copy.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cs.AppsV1().Deployments("default").Get(ctx, "chaos", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template.Spec.Containers[0].Image = "v2"
		_, err = cs.AppsV1().Deployments("default").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, "chaos", "v2", replicas, 120*time.Second)
	kills := stop()
	b := bounds.stop()
	t.Logf("controller manager killed %d times; at most %d pods asked for and %d live at once", kills, b.maxAsked, b.maxLive)
	if kills < 5 {
		t.Errorf("only %d restarts happened: the test did not exercise chaos", kills)
	}
	if b.maxAsked > replicas+surge {
		t.Errorf("replica sets asked for %d pods at once, more than replicas+maxSurge = %d", b.maxAsked, replicas+surge)
	}
	if b.duplicates > 0 {
		t.Errorf("%d times a replica set that was not scaling down had more live pods than it asked for: %s", b.duplicates, b.firstDuplicate)
	}
	rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=chaos"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 2 {
		t.Errorf("%d replica sets, want 2 (old and new)", len(rss.Items))
	}
	for _, rs := range rss.Items {
		want := int32(0)
		if rs.Spec.Template.Spec.Containers[0].Image == "v2" {
			want = replicas
		}
		if *rs.Spec.Replicas != want {
			t.Errorf("replica set %s (%s) wants %d replicas, want %d", rs.Name, rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas, want)
		}
	}
}

// waitRolledOut waits until exactly n pods of image run, none of another
// image is left, and none is being deleted.
func waitRolledOut(t *testing.T, cs kubernetes.Interface, name, image string, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, name+" rolled out to "+image, func() (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.Containers[0].Image != image || p.DeletionTimestamp != nil {
				return false, nil
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n && len(pods.Items) == n, nil
	})
}

// ownerBounds follows replica sets and their pods: the most pods asked for
// (sum of spec.replicas) and live, and how often a replica set had more
// live pods than asked while its ask had not gone down (a duplicate
// create, which expectations exist to prevent).
type ownerBounds struct {
	maxAsked, maxLive, duplicates int
	firstDuplicate                string
}

type ownerBoundsWatch struct {
	stopCh chan struct{}
	done   chan ownerBounds
}

func startOwnerBoundsWatch(t *testing.T, cs kubernetes.Interface, ns, selector string) *ownerBoundsWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rsw, err := cs.AppsV1().ReplicaSets(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	pw, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w := &ownerBoundsWatch{stopCh: make(chan struct{}), done: make(chan ownerBounds, 1)}
	go func() {
		defer cancel()
		var b ownerBounds
		asked := map[types.UID]int32{}     // replica set → spec.replicas
		down := map[types.UID]bool{}       // asked for fewer, still deleting
		owner := map[types.UID]types.UID{} // live pod → replica set
		live := map[types.UID]int{}
		check := func(rs types.UID) {
			sum, all := 0, 0
			for _, n := range asked {
				sum += int(n)
			}
			for _, n := range live {
				all += n
			}
			b.maxAsked, b.maxLive = max(b.maxAsked, sum), max(b.maxLive, all)
			n, ok := asked[rs]
			if ok && live[rs] <= int(n) {
				down[rs] = false
			}
			if ok && live[rs] > int(n) && !down[rs] {
				b.duplicates++
				if b.firstDuplicate == "" {
					b.firstDuplicate = fmt.Sprintf("%s: %d live, %d asked", rs, live[rs], n)
				}
			}
		}
		for {
			select {
			case <-w.stopCh:
				w.done <- b
				return
			case ev := <-rsw.ResultChan():
				rs, ok := ev.Object.(*appsv1.ReplicaSet)
				if !ok {
					continue
				}
				if ev.Type == watch.Deleted {
					delete(asked, rs.UID)
					continue
				}
				n := *rs.Spec.Replicas
				if prev, seen := asked[rs.UID]; seen && n < prev {
					down[rs.UID] = true // extra live pods are expected until deleted
				}
				asked[rs.UID] = n
				check(rs.UID)
			case ev := <-pw.ResultChan():
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				ref := metav1.GetControllerOfNoCopy(p)
				if ref == nil {
					continue
				}
				_, counted := owner[p.UID]
				gone := ev.Type == watch.Deleted || p.DeletionTimestamp != nil
				switch {
				case gone && counted:
					live[ref.UID]--
					delete(owner, p.UID)
				case !gone && !counted:
					live[ref.UID]++
					owner[p.UID] = ref.UID
				}
				check(ref.UID)
			}
		}
	}()
	return w
}

func (w *ownerBoundsWatch) stop() ownerBounds {
	close(w.stopCh)
	return <-w.done
}
