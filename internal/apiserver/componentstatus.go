package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Component statuses (core v1 componentstatuses, `kubectl get cs`): the
// health of the control plane's parts, probed on each read as upstream
// does. etcd-0 is the store's own check; the scheduler and the controller
// manager are probed at upstream's secure ports on loopback (10259 and
// 10257, /healthz, certificates not verified) unless the process that
// runs them in-process registers its own check with SetComponentChecks.

// ComponentCheck reports a component healthy (nil) or why it is not.
type ComponentCheck func(ctx context.Context) error

// SetComponentChecks replaces the checks of the named components
// ("scheduler", "controller-manager") for in-process components.
func (s *Server) SetComponentChecks(checks map[string]ComponentCheck) {
	s.componentMu.Lock()
	defer s.componentMu.Unlock()
	if s.componentChecks == nil {
		s.componentChecks = map[string]ComponentCheck{}
	}
	for name, c := range checks {
		s.componentChecks[name] = c
	}
}

// componentProbeTimeout bounds each probe (upstream's is 20 s; a read of
// componentstatuses should not hang that long on a dead port).
const componentProbeTimeout = 5 * time.Second

func (s *Server) componentStatusChecks() map[string]ComponentCheck {
	checks := map[string]ComponentCheck{
		"scheduler":          probeHealthz("https://127.0.0.1:10259/healthz"),
		"controller-manager": probeHealthz("https://127.0.0.1:10257/healthz"),
		"etcd-0":             s.checkEtcd,
	}
	s.componentMu.Lock()
	defer s.componentMu.Unlock()
	for name, c := range s.componentChecks {
		checks[name] = c
	}
	return checks
}

// probeHealthz is upstream's HTTP probe of a component: healthy when
// /healthz answers 200.
func probeHealthz(url string) ComponentCheck {
	return func(ctx context.Context) error {
		client := &http.Client{Timeout: componentProbeTimeout, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as upstream: the probe checks liveness, not identity
		}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("unhealthy: %d %s", resp.StatusCode, body)
		}
		return nil
	}
}

// componentStatuses runs every check at once and returns the objects,
// sorted by name.
func (s *Server) componentStatuses(ctx context.Context) []runtime.Object {
	checks := s.componentStatusChecks()
	names := make([]string, 0, len(checks))
	for name := range checks {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]runtime.Object, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			cond := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}
			cctx, cancel := context.WithTimeout(ctx, componentProbeTimeout)
			defer cancel()
			if err := checks[name](cctx); err != nil {
				cond = corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: err.Error()}
			}
			cs := &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: name}, Conditions: []corev1.ComponentCondition{cond}}
			cs.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ComponentStatus"))
			out[i] = cs
		})
	}
	wg.Wait()
	return out
}

// serveComputed serves a Computed resource: get and list, no namespace,
// no subresources.
func (h *resourceHandler) serveComputed(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	if info.Subresource != "" || info.Namespace != "" {
		h.s.writeError(w, r, notFound())
		return
	}
	info.served = true
	if info.Verb != "get" && info.Verb != "list" {
		h.s.writeError(w, r, methodNotAllowed(r, info))
		return
	}
	t, ok := negotiate(r, true)
	if !ok {
		h.s.writeError(w, r, notAcceptable())
		return
	}
	addWarning(w, "v1 ComponentStatus is deprecated in v1.19+")
	items := h.s.componentStatuses(r.Context())
	if info.Name != "" {
		var found runtime.Object
		for _, o := range items {
			if o.(*corev1.ComponentStatus).Name == info.Name {
				found = o
			}
		}
		if found == nil {
			h.s.writeError(w, r, apierrors.NewNotFound(h.gr, info.Name))
			return
		}
		items = []runtime.Object{found}
	}
	switch t.transform {
	case asTable:
		tbl, err := h.table(items, r.URL.Query().Get("includeObject"), t.groupVersion)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, tbl)
		return
	case asPartialMetadata:
		if info.Name != "" {
			h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, partialMetadata(items[0], t.groupVersion))
			return
		}
		list := &metav1.PartialObjectMetadataList{}
		list.GetObjectKind().SetGroupVersionKind(t.groupVersion.WithKind("PartialObjectMetadataList"))
		for _, o := range items {
			list.Items = append(list.Items, *partialMetadata(o, t.groupVersion))
		}
		h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, list)
		return
	}
	if info.Name != "" {
		h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, items[0])
		return
	}
	list := &corev1.ComponentStatusList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ComponentStatusList"))
	for _, o := range items {
		list.Items = append(list.Items, *o.(*corev1.ComponentStatus))
	}
	h.s.writeObject(w, r, target{media: t.media}, http.StatusOK, h, list)
}
