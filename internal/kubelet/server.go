package kubelet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// The kubelet API: HTTPS on NodeIP:KubeletPort, the client certificate
// verified against ClientCAs, every request authorized by a
// SubjectAccessReview on nodes/<subresource> (internal/kubeletapi), as
// upstream's kubelet in webhook mode. The API server reaches it for
// kubectl logs, exec, attach, port-forward and top.
//
//	/healthz                                  ok
//	/pods                                     the pods bound here (PodList)
//	/containerLogs/{ns}/{pod}/{container}     logs.go
//	/exec|attach/{ns}/{pod}[/{uid}]/{container}, /portForward/{ns}/{pod}[/{uid}]
//	                                          streaming.go: proxied to the runtime
//	/run/{ns}/{pod}[/{uid}]/{container}       ExecSync, the output in the body
//	/stats/summary, /metrics/resource         stats.go

func (k *Kubelet) newServer() *http.Server {
	return &http.Server{
		Handler:           k,
		ReadHeaderTimeout: 10 * time.Second,
		// Refused handshakes are the caller's business.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

func (k *Kubelet) tlsListener() net.Listener {
	return tls.NewListener(k.listener, &tls.Config{
		Certificates: []tls.Certificate{k.cfg.ServingCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    k.cfg.ClientCAs,
		MinVersion:   tls.VersionTLS12,
		// HTTP/1.1 only: streaming upgrades need it.
		NextProtos: []string{"http/1.1"},
	})
}

func (k *Kubelet) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u, ok := kubeletapi.Authenticate(w, r)
	if !ok || !k.authz.Authorize(w, r, u, k.cfg.NodeName) {
		return
	}
	p := r.URL.Path
	parts := strings.Split(strings.Trim(p, "/"), "/")
	switch {
	case strings.HasPrefix(p, "/exec/"), strings.HasPrefix(p, "/attach/"), strings.HasPrefix(p, "/portForward/"):
		k.serveStream(w, r, parts)
	case strings.HasPrefix(p, "/run/"):
		k.serveRun(w, r, parts)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case p == "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	case p == "/pods" || p == "/pods/":
		k.servePods(w)
	case strings.HasPrefix(p, "/containerLogs/"):
		k.serveLogs(w, r, parts[1:])
	case p == "/stats/summary":
		k.serveSummary(w, r)
	case p == "/metrics/resource":
		k.serveResourceMetrics(w, r)
	default:
		http.NotFound(w, r)
	}
}

// servePods answers /pods: the pods bound to this node, as the API holds
// them.
func (k *Kubelet) servePods(w http.ResponseWriter) {
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
	for _, o := range k.podInformer.GetStore().List() {
		p := o.(*corev1.Pod).DeepCopy()
		p.TypeMeta = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
		list.Items = append(list.Items, *p)
	}
	writeJSON(w, &list)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// podContainerOf finds the running or last instance of a pod's
// container for the streaming and run endpoints: parts are
// [verb, ns, pod, container] or [verb, ns, pod, uid, container].
func (k *Kubelet) podContainerOf(ctx context.Context, parts []string) (*corev1.Pod, string, string, error) {
	var ns, name, uid, container string
	switch len(parts) {
	case 4:
		ns, name, container = parts[1], parts[2], parts[3]
	case 5:
		ns, name, uid, container = parts[1], parts[2], parts[3], parts[4]
	default:
		return nil, "", "", errNotFound("unexpected path")
	}
	pod := k.podByName(ns, name)
	if pod == nil || (uid != "" && string(pod.UID) != uid) {
		return nil, "", "", errNotFound(fmt.Sprintf("pod %q does not exist", name))
	}
	obs, err := k.obs.observe(ctx, string(pod.UID))
	if err != nil {
		return nil, "", "", err
	}
	l := obs.latest(container)
	if findContainer(pod, container) == nil || l == nil {
		return nil, "", "", errNotFound(fmt.Sprintf("container %q not found in pod %q", container, name))
	}
	if l.State != stateRunning {
		return nil, "", "", errBadRequest(fmt.Sprintf("container %q in pod %q is not running", container, name))
	}
	return pod, container, l.ID, nil
}

// httpError carries a status code to the handler.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func errNotFound(msg string) error   { return &httpError{http.StatusNotFound, msg} }
func errBadRequest(msg string) error { return &httpError{http.StatusBadRequest, msg} }

// writeError maps an error to its status: httpError's code, else 500.
func writeError(w http.ResponseWriter, err error) {
	if he, ok := err.(*httpError); ok {
		http.Error(w, he.msg, he.code)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}
