package simnode

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// Container logs of simulated pods: /containerLogs/{namespace}/{pod}/{container}.
// Nothing runs, so the log is synthesized (containerLog): a few lines at
// the container's start, then, for follow=true, one line per
// followInterval until the client goes away, the container stops running
// on this node, or limitBytes is reached — as the kubelet follows a
// container's log until the container exits.
//
// The query is the kubelet's (kubeletapi.LogOptions): tailLines,
// limitBytes, sinceSeconds, sinceTime, timestamps, follow.

// followInterval is how often a followed log gets a line.
const followInterval = time.Second

// serveLogs answers /containerLogs/{namespace}/{pod}/{container}.
func (k *kubeletServer) serveLogs(w http.ResponseWriter, r *http.Request, n *simNode, rest string) {
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	pod := k.podOn(n, parts[0], parts[1], "")
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %q does not exist", parts[0]+"/"+parts[1]), http.StatusNotFound)
		return
	}
	container := parts[2]
	lines, err := containerLog(pod, container, n.name, r.URL.Query().Get("previous") == "true")
	if err != nil {
		// As the kubelet: an unknown container is 404, one not started 400.
		code := http.StatusBadRequest
		if kubeletContainerSpec(pod, container) == nil {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	opts := kubeletapi.ParseLogOptions(r.URL.Query(), k.f.cfg.Clock.Now())
	w.Header().Set("Content-Type", "text/plain")
	lw := &kubeletapi.LogWriter{W: w, Opts: opts}
	for _, l := range opts.Select(lines) {
		if !lw.Write(l) {
			return
		}
	}
	if !opts.Follow || r.URL.Query().Get("previous") == "true" {
		return // a previous run's log has ended
	}
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	ticker := k.f.cfg.Clock.NewTicker(followInterval)
	defer ticker.Stop()
	for seq := 1; ; seq++ {
		select {
		case <-r.Context().Done():
			return
		case <-k.done:
			return
		case now := <-ticker.C():
			// The container stopped (or the pod went): its log ends.
			p := k.podOn(n, pod.Namespace, pod.Name, pod.UID)
			if p == nil || !containerRunning(p, container) {
				return
			}
			line := kubeletapi.LogLine{At: now, Text: fmt.Sprintf("simnode: container %s is running (%d s after following began)", container, seq*int(followInterval/time.Second))}
			if !lw.Write(line) {
				return
			}
			flush()
		}
	}
}

// podOn is the pod namespace/name bound to node n (of the given UID when
// one is given), from the fleet's watch cache, or nil.
func (k *kubeletServer) podOn(n *simNode, namespace, name string, uid types.UID) *corev1.Pod {
	obj, ok, _ := k.f.podInformer.GetIndexer().GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	p := obj.(*corev1.Pod)
	if p.Spec.NodeName != n.name || (uid != "" && p.UID != uid) {
		return nil
	}
	return p
}

// containerRunning reports whether the named container of p is running.
func containerRunning(p *corev1.Pod, name string) bool {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs.State.Running != nil
			}
		}
	}
	return false
}
