package replicaset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rudder-dev/rudder/internal/controller"
)

// The integration tests run against a real API server, whose watch is
// too quick to show a sync racing its own informer. Here the informer
// caches are filled by hand and never by the writes, so the controller
// sees exactly the lag the expectations exist for.
type syncFixture struct {
	c       *rsController
	client  *fake.Clientset
	events  *record.FakeRecorder
	creates atomic.Int32
	deletes atomic.Int32
	// failCreatesAfter makes every create after this many fail (0: never).
	failCreatesAfter int32
}

func newSyncFixture(t *testing.T) *syncFixture {
	t.Helper()
	f := &syncFixture{client: fake.NewClientset(), events: record.NewFakeRecorder(1000)}
	var seq atomic.Int32
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		n := f.creates.Add(1)
		if f.failCreatesAfter > 0 && n > f.failCreatesAfter {
			return true, nil, errors.New(`pods "web-" is forbidden: exceeded quota`)
		}
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		pod.Name = fmt.Sprintf("%s%05d", pod.GenerateName, seq.Add(1)) // the fake does not generate names
		return false, nil, nil
	})
	f.client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		f.deletes.Add(1)
		return true, nil, nil
	})
	factory := informers.NewSharedInformerFactory(f.client, 0)
	cx := &controller.Context{
		Client:    f.client,
		Informers: factory,
		Recorder:  func(string) record.EventRecorder { return f.events },
		Clock:     clocktesting.NewFakeClock(t0),
	}
	inf := factory.Apps().V1().ReplicaSets()
	c, err := newController(cx, &rsKind{client: f.client, inf: inf.Informer(), lister: inf.Lister()}, "replicaset", "replicaset-controller", BurstReplicas)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	return f
}

// addRS puts rs in the cache and the API.
func (f *syncFixture) addRS(t *testing.T, n int32) {
	t.Helper()
	rs := mkRS(n)
	if err := f.c.kind.informer().GetIndexer().Add(rs); err != nil {
		t.Fatal(err)
	}
	if _, err := f.client.AppsV1().ReplicaSets("ns").Create(context.Background(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// observe delivers n owned, running pods to the cache and the event
// handler, as the informer would.
func (f *syncFixture) observe(t *testing.T, names ...string) []*corev1.Pod {
	t.Helper()
	var pods []*corev1.Pod
	for _, name := range names {
		p := mkPod(name, onNode("n1"), readySince(t0), func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(mkRS(0), f.c.kind.gvk())}
		})
		if err := f.c.pods.Add(p); err != nil {
			t.Fatal(err)
		}
		f.c.podRouter.OnAdd(p)
		pods = append(pods, p)
	}
	return pods
}

func (f *syncFixture) sync(t *testing.T) error {
	t.Helper()
	_, err := f.c.sync(context.Background(), "ns/web")
	return err
}

func TestSyncNeverCreatesTwice(t *testing.T) {
	f := newSyncFixture(t)
	f.addRS(t, 5)
	if err := f.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := f.creates.Load(); n != 5 {
		t.Fatalf("first sync created %d pods, want 5", n)
	}
	// The informer has not delivered the pods yet: a sync now must wait.
	if err := f.sync(t); err != nil {
		t.Fatal(err)
	}
	if n := f.creates.Load(); n != 5 {
		t.Fatalf("a sync before the creations were seen created %d more", n-5)
	}
	f.observe(t, "a", "b", "c", "d")
	f.sync(t)
	if n := f.creates.Load(); n != 5 {
		t.Fatalf("created %d more with one creation still unseen", n-5)
	}
	f.observe(t, "e")
	f.sync(t)
	if n := f.creates.Load(); n != 5 {
		t.Fatalf("created %d more with all 5 replicas present", n-5)
	}
	created := 0
	for len(f.events.Events) > 0 {
		e := <-f.events.Events
		if strings.HasPrefix(e, "Normal SuccessfulCreate Created pod: web-") {
			created++
		}
	}
	if created != 5 {
		t.Fatalf("%d SuccessfulCreate events, want 5", created)
	}
}

func TestSyncNeverDeletesTwice(t *testing.T) {
	f := newSyncFixture(t)
	f.addRS(t, 1)
	pods := f.observe(t, "a", "b", "c")
	f.sync(t)
	if n := f.deletes.Load(); n != 2 {
		t.Fatalf("deleted %d pods, want 2", n)
	}
	f.sync(t)
	if n := f.deletes.Load(); n != 2 {
		t.Fatalf("a sync before the deletions were seen deleted %d more", n-2)
	}
	var victims []*corev1.Pod
	for _, a := range f.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
			for _, p := range pods {
				if p.Name == d.GetName() {
					victims = append(victims, p)
				}
			}
		}
	}
	if len(victims) != 2 {
		t.Fatalf("victims %v", victims)
	}
	// The first victim is seen twice, as the informer shows a graceful
	// deletion: deletionTimestamp set, then the pod gone. It counts once,
	// so the controller still waits for the second victim.
	gone := func(p *corev1.Pod) {
		terminating := p.DeepCopy()
		terminating.DeletionTimestamp = &metav1.Time{Time: t0}
		terminating.ResourceVersion = "2"
		f.c.pods.Update(terminating)
		f.c.podRouter.OnUpdate(p, terminating)
		f.c.pods.Delete(terminating)
		f.c.podRouter.OnDelete(terminating, true)
	}
	gone(victims[0])
	if _, dels, _ := f.c.expectations.Pending("ns/web"); dels != 1 {
		t.Fatalf("%d deletions awaited after one was seen twice, want 1", dels)
	}
	f.sync(t)
	if n, c := f.deletes.Load(), f.creates.Load(); n != 2 || c != 0 {
		t.Fatalf("acted while a deletion was unseen: %d deletes, %d creates", n, c)
	}
	gone(victims[1])
	f.sync(t)
	if n, c := f.deletes.Load(), f.creates.Load(); n != 2 || c != 0 {
		t.Fatalf("after the scale-down settled: %d deletes, %d creates, want 2 and 0", n, c)
	}
}

func TestSyncSlowStartOnFailures(t *testing.T) {
	f := newSyncFixture(t)
	f.failCreatesAfter = 3 // batches 1, 2 succeed; the batch of 4 fails
	f.addRS(t, 100)
	err := f.sync(t)
	if err == nil || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("sync error %v, want the create error", err)
	}
	if n := f.creates.Load(); n != 7 {
		t.Fatalf("%d create calls, want 7 (batches of 1, 2 and 4, then stop)", n)
	}
	// Only the 3 pods created are awaited: once seen, the next sync
	// tries again.
	if adds, _, _ := f.c.expectations.Pending("ns/web"); adds != 3 {
		t.Fatalf("awaiting %d creations, want 3", adds)
	}
	rs, err := f.client.AppsV1().ReplicaSets("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Status.Conditions) != 1 || rs.Status.Conditions[0].Reason != "FailedCreate" {
		t.Fatalf("conditions %+v, want ReplicaFailure FailedCreate", rs.Status.Conditions)
	}
	warned := false
	for len(f.events.Events) > 0 {
		if e := <-f.events.Events; strings.HasPrefix(e, "Warning FailedCreate Error creating: ") {
			warned = true
		}
	}
	if !warned {
		t.Fatal("no FailedCreate event")
	}
	f.observe(t, "a", "b", "c")
	before := f.creates.Load()
	f.sync(t)
	if f.creates.Load() == before {
		t.Fatal("no new attempt once the created pods were seen")
	}
}

// The pod handlers resolve owners by UID: a pod whose controller
// reference names a deleted-and-recreated ReplicaSet is nobody's.
func TestHandlersCheckOwnerUID(t *testing.T) {
	f := newSyncFixture(t)
	f.addRS(t, 1)
	f.c.expectations.ExpectCreations("ns/web", 1)
	stale := mkPod("x", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web", UID: types.UID("old"), Controller: ptrTrue()}}
	})
	f.c.podRouter.OnAdd(stale)
	if adds, _, _ := f.c.expectations.Pending("ns/web"); adds != 1 {
		t.Fatalf("a pod of an older ReplicaSet named web counted as our creation (adds %d)", adds)
	}
}

func ptrTrue() *bool { b := true; return &b }
