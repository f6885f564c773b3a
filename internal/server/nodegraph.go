package server

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/auth"
)

// startNodeGraph fills the Node authorizer's graph: one reflector each for
// pods, persistent volume claims and volume attachments, over the
// loopback transport, feeding the graph's stores directly. The graph
// keeps only what bound pods reference, not the objects (see
// auth.NodeGraph), and follows the API by watch events. Until the first
// lists arrive a kubelet's reads of secrets and the like are refused
// (and retried by the kubelet), as upstream's are before its informers
// sync.
func (s *Server) startNodeGraph(ctx context.Context, graph *auth.NodeGraph) error {
	client, err := kubernetes.NewForConfig(s.componentConfig(componentUser, "rudder-node-authorizer"))
	if err != nil {
		return err
	}
	reflect := func(rc rest.Interface, resource string, obj runtime.Object, store cache.ReflectorStore, sel fields.Selector) {
		lw := cache.NewListWatchFromClient(rc, resource, "", sel)
		r := cache.NewNamedReflector("node-authorizer-"+resource, lw, obj, store, 0)
		s.spawn(func() { r.RunWithContext(ctx) })
	}
	// Only bound pods matter, and a pod is never unbound: the selector
	// spares the graph (and the decode) every event of a pending pod.
	reflect(client.CoreV1().RESTClient(), "pods", &corev1.Pod{}, graph.PodStore(), fields.OneTermNotEqualSelector("spec.nodeName", ""))
	reflect(client.CoreV1().RESTClient(), "persistentvolumeclaims", &corev1.PersistentVolumeClaim{}, graph.ClaimStore(), fields.Everything())
	reflect(client.StorageV1().RESTClient(), "volumeattachments", &storagev1.VolumeAttachment{}, graph.VolumeAttachmentStore(), fields.Everything())
	return nil
}
