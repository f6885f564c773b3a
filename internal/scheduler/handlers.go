package scheduler

import (
	"context"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// addHandlers feeds the cache and the queue from informers: pods (bound
// ones to the cache, pending ones of our profiles to the queue), nodes,
// and the other resources plugins registered events for.
func (s *Scheduler) addHandlers(events map[string][]framework.ClusterEventWithHint) {
	ctx := context.Background()
	podInformer := podInformerFor(s.informers)
	s.podLister = corelisters.NewPodLister(podInformer.GetIndexer())
	podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			pod := obj.(*corev1.Pod)
			if pod.Spec.NodeName != "" {
				s.cache.AddPod(pod)
				s.queue.DeleteNominatedPodIfExists(pod)
				s.move(ctx, framework.AssignedPodResource, framework.Add, "AssignedPodAdd", nil, pod)
				return
			}
			if s.responsibleFor(pod) {
				s.queue.Add(ctx, pod)
			}
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldPod, newPod := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
			switch {
			case newPod.Spec.NodeName != "" && oldPod.Spec.NodeName == "":
				// Bound (by us or someone else).
				s.queue.Delete(oldPod)
				s.cache.AddPod(newPod)
				s.move(ctx, framework.AssignedPodResource, framework.Add, "AssignedPodAdd", nil, newPod)
			case newPod.Spec.NodeName != "":
				s.cache.UpdatePod(oldPod, newPod)
				if act := podUpdateAction(oldPod, newPod); act != 0 {
					s.move(ctx, framework.AssignedPodResource, act, "AssignedPodUpdate", oldPod, newPod)
				}
			case s.responsibleFor(newPod):
				s.queue.Update(ctx, oldPod, newPod)
			}
		},
		DeleteFunc: func(obj interface{}) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				t, ok := obj.(cache.DeletedFinalStateUnknown)
				if !ok {
					return
				}
				if pod, ok = t.Obj.(*corev1.Pod); !ok {
					return
				}
			}
			if pod.Spec.NodeName != "" {
				s.cache.RemovePod(pod)
				s.move(ctx, framework.AssignedPodResource, framework.Delete, "AssignedPodDelete", pod, nil)
				return
			}
			s.queue.Delete(pod)
		},
	})
	s.synced = append(s.synced, podInformer.HasSynced)

	nodeInformer := s.informers.Core().V1().Nodes().Informer()
	nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			node := obj.(*corev1.Node)
			s.cache.AddNode(node)
			s.move(ctx, framework.NodeResource, framework.Add, "NodeAdd", nil, node)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldNode, newNode := oldObj.(*corev1.Node), newObj.(*corev1.Node)
			s.cache.UpdateNode(oldNode, newNode)
			if act := nodeUpdateAction(oldNode, newNode); act != 0 {
				s.move(ctx, framework.NodeResource, act, "NodeUpdate", oldNode, newNode)
			}
		},
		DeleteFunc: func(obj interface{}) {
			node, ok := obj.(*corev1.Node)
			if !ok {
				t, ok := obj.(cache.DeletedFinalStateUnknown)
				if !ok {
					return
				}
				if node, ok = t.Obj.(*corev1.Node); !ok {
					return
				}
			}
			s.cache.RemoveNode(node)
		},
	})
	s.synced = append(s.synced, nodeInformer.HasSynced)

	// Other resources only matter if a plugin asked for their events.
	wanted := map[framework.EventResource]bool{}
	for _, evs := range events {
		for _, e := range evs {
			wanted[e.Event.Resource] = true
		}
	}
	other := map[framework.EventResource]func(informers.SharedInformerFactory) cache.SharedIndexInformer{
		framework.PersistentVolumeResource: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().PersistentVolumes().Informer()
		},
		framework.PersistentVolumeClaimResource: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().PersistentVolumeClaims().Informer()
		},
		framework.StorageClassResource: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Storage().V1().StorageClasses().Informer()
		},
		framework.CSINodeResource: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Storage().V1().CSINodes().Informer()
		},
		framework.CSIDriverResource: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Storage().V1().CSIDrivers().Informer()
		},
		framework.NamespaceResource: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Namespaces().Informer()
		},
	}
	for res, inf := range other {
		if !wanted[res] && !wanted[framework.WildCardResource] {
			continue
		}
		res := res
		i := inf(s.informers)
		i.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) { s.move(ctx, res, framework.Add, string(res)+"Add", nil, obj) },
			UpdateFunc: func(o, n interface{}) {
				if !reflect.DeepEqual(o, n) {
					s.move(ctx, res, framework.Update, string(res)+"Update", o, n)
				}
			},
			DeleteFunc: func(obj interface{}) { s.move(ctx, res, framework.Delete, string(res)+"Delete", obj, nil) },
		})
		s.synced = append(s.synced, i.HasSynced)
	}
}

// podInformerFor registers the scheduler's pod informer with the factory
// before any plugin asks for pods, so all share it. Terminal pods hold no
// resources: watching only the others means a pod that finishes arrives
// as a delete. As upstream's, it drops managedFields, which the scheduler
// never reads and which are a large part of every pod it would hold.
func podInformerFor(f informers.SharedInformerFactory) cache.SharedIndexInformer {
	return f.InformerFor(&corev1.Pod{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		inf := corev1informers.NewFilteredPodInformer(c, metav1.NamespaceAll, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
			func(o *metav1.ListOptions) {
				o.FieldSelector = fields.AndSelectors(
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed))).String()
			})
		_ = inf.SetTransform(func(obj any) (any, error) {
			if p, ok := obj.(*corev1.Pod); ok {
				p.ManagedFields = nil
			}
			return obj, nil
		})
		return inf
	})
}

func (s *Scheduler) move(ctx context.Context, res framework.EventResource, act framework.ActionType, label string, oldObj, newObj interface{}) {
	s.queue.MoveAllToActiveOrBackoffQueue(ctx, framework.ClusterEvent{Resource: res, ActionType: act, Label: label}, oldObj, newObj)
}

// podUpdateAction classifies an update of a bound pod; status-only
// updates (the common case) are no event at all.
func podUpdateAction(o, n *corev1.Pod) framework.ActionType {
	var act framework.ActionType
	if !equality.Semantic.DeepEqual(o.Labels, n.Labels) {
		act |= framework.UpdatePodLabel
	}
	or, nr := framework.PodRequests(o, false), framework.PodRequests(n, false)
	if nr.MilliCPU < or.MilliCPU || nr.Memory < or.Memory {
		act |= framework.UpdatePodScaleDown
	}
	return act
}

// nodeUpdateAction classifies a node update by what scheduling can see.
func nodeUpdateAction(o, n *corev1.Node) framework.ActionType {
	var act framework.ActionType
	if !equality.Semantic.DeepEqual(o.Status.Allocatable, n.Status.Allocatable) {
		act |= framework.UpdateNodeAllocatable
	}
	if !equality.Semantic.DeepEqual(o.Labels, n.Labels) {
		act |= framework.UpdateNodeLabel
	}
	if !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) || o.Spec.Unschedulable != n.Spec.Unschedulable {
		act |= framework.UpdateNodeTaint
	}
	if !conditionsEqual(o.Status.Conditions, n.Status.Conditions) {
		act |= framework.UpdateNodeCondition
	}
	if !equality.Semantic.DeepEqual(o.Annotations, n.Annotations) {
		act |= framework.UpdateNodeAnnotation
	}
	return act
}

// conditionsEqual compares condition types and statuses, not heartbeats.
func conditionsEqual(a, b []corev1.NodeCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status {
			return false
		}
	}
	return true
}
