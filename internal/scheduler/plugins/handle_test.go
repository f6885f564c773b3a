package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// testHandle is a framework.Handle over a fixed snapshot and a fake
// clientset holding objs, for plugin unit tests. Informers requested by a
// plugin's factory are started by start().
type testHandle struct {
	snapshot  *framework.Snapshot
	client    kubernetes.Interface
	informers informers.SharedInformerFactory
	nominated map[string][]*framework.PodInfo
	// filters, when set, are what RunFilterPluginsWithNominatedPods runs.
	filters []framework.FilterPlugin
	// preFilters receive the AddPod/RemovePod extension calls.
	preFilters []framework.PreFilterPlugin
}

func newTestHandle(snapshot *framework.Snapshot, objs ...runtime.Object) *testHandle {
	client := fake.NewSimpleClientset(objs...)
	return &testHandle{
		snapshot:  snapshot,
		client:    client,
		informers: informers.NewSharedInformerFactory(client, 0),
		nominated: map[string][]*framework.PodInfo{},
	}
}

// start starts and syncs the informers the plugins asked for.
func (h *testHandle) start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h.informers.Start(ctx.Done())
	for typ, ok := range h.informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer %v did not sync", typ)
		}
	}
}

func (h *testHandle) Snapshot() *framework.Snapshot                          { return h.snapshot }
func (h *testHandle) ClientSet() kubernetes.Interface                        { return h.client }
func (h *testHandle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }
func (h *testHandle) EventRecorder() events.EventRecorder                    { return events.NewFakeRecorder(100) }
func (h *testHandle) Parallelizer() framework.Parallelizer                   { return framework.NewParallelizer(2) }
func (h *testHandle) NominatedPodsForNode(nodeName string) []*framework.PodInfo {
	return h.nominated[nodeName]
}

func (h *testHandle) RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for _, p := range h.preFilters {
		if ext := p.PreFilterExtensions(); ext != nil && !state.SkipFilter[p.Name()] {
			if s := ext.AddPod(ctx, state, pod, add, ni); !s.IsSuccess() {
				return s
			}
		}
	}
	return nil
}

func (h *testHandle) RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for _, p := range h.preFilters {
		if ext := p.PreFilterExtensions(); ext != nil && !state.SkipFilter[p.Name()] {
			if s := ext.RemovePod(ctx, state, pod, rm, ni); !s.IsSuccess() {
				return s
			}
		}
	}
	return nil
}

func (h *testHandle) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	for _, f := range h.filters {
		if state.SkipFilter[f.Name()] {
			continue
		}
		if s := f.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			return s.WithPlugin(f.Name())
		}
	}
	return nil
}

var _ framework.Handle = (*testHandle)(nil)
