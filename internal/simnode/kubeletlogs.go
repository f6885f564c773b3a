package simnode

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Container logs of simulated pods: /containerLogs/{namespace}/{pod}/{container}.
// Nothing runs, so the log is synthesized (containerLog): a few lines at
// the container's start, then, for follow=true, one line per
// followInterval until the client goes away, the container stops running
// on this node, or limitBytes is reached — as the kubelet follows a
// container's log until the container exits.
//
// The query is the kubelet's: tailLines, limitBytes, sinceSeconds,
// sinceTime, timestamps, follow. As the kubelet, the time filters apply
// first, then tailLines, then limitBytes over everything written
// (followed lines included).

// followInterval is how often a followed log gets a line.
const followInterval = time.Second

// logOptions is the query of a containerLogs request.
type logOptions struct {
	follow     bool
	timestamps bool
	tailLines  int // -1: all
	limitBytes int // 0: no limit
	since      time.Time
}

// parseLogOptions reads the query; values that do not parse are ignored,
// as the API server has validated what it forwards.
func parseLogOptions(q url.Values, now time.Time) logOptions {
	o := logOptions{follow: q.Get("follow") == "true", timestamps: q.Get("timestamps") == "true", tailLines: -1}
	if t, err := strconv.Atoi(q.Get("tailLines")); err == nil && t >= 0 {
		o.tailLines = t
	}
	if b, err := strconv.Atoi(q.Get("limitBytes")); err == nil && b > 0 {
		o.limitBytes = b
	}
	if s, err := strconv.Atoi(q.Get("sinceSeconds")); err == nil && s > 0 {
		o.since = now.Add(-time.Duration(s) * time.Second)
	} else if t, err := time.Parse(time.RFC3339, q.Get("sinceTime")); err == nil {
		o.since = t
	}
	return o
}

// selectLines applies the time filter, then tailLines.
func (o logOptions) selectLines(lines []logLine) []logLine {
	if !o.since.IsZero() {
		kept := lines[:0:0]
		for _, l := range lines {
			if !l.at.Before(o.since) {
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	if o.tailLines >= 0 && o.tailLines < len(lines) {
		lines = lines[len(lines)-o.tailLines:]
	}
	return lines
}

// logWriter formats lines and stops at limitBytes.
type logWriter struct {
	w       http.ResponseWriter
	opts    logOptions
	written int
}

// write writes l (cut at the byte limit) and reports whether more may
// follow.
func (lw *logWriter) write(l logLine) bool {
	var b strings.Builder
	if lw.opts.timestamps {
		b.WriteString(l.at.UTC().Format(time.RFC3339Nano))
		b.WriteByte(' ')
	}
	b.WriteString(l.text)
	b.WriteByte('\n')
	out := b.String()
	if lw.opts.limitBytes > 0 {
		if left := lw.opts.limitBytes - lw.written; len(out) >= left {
			_, _ = lw.w.Write([]byte(out[:left]))
			lw.written += left
			return false
		}
	}
	n, err := lw.w.Write([]byte(out))
	lw.written += n
	return err == nil
}

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
	opts := parseLogOptions(r.URL.Query(), k.f.cfg.Clock.Now())
	w.Header().Set("Content-Type", "text/plain")
	lw := &logWriter{w: w, opts: opts}
	for _, l := range opts.selectLines(lines) {
		if !lw.write(l) {
			return
		}
	}
	if !opts.follow || r.URL.Query().Get("previous") == "true" {
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
			line := logLine{now, fmt.Sprintf("simnode: container %s is running (%d s after following began)", container, seq*int(followInterval/time.Second))}
			if !lw.write(line) {
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
