package kubelet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// /containerLogs/{ns}/{pod}/{container}: the container's CRI log file,
// read back and filtered as the query says (kubeletapi.LogOptions). Which
// instance is read follows the pod's status, as upstream's kubelet:
// previous=true the last terminated one (400 when there is none), else
// the running one, else the one that exited; a container that never ran
// is a 400 naming why it waits.

// followPoll is how often a followed log is checked for more.
const followPoll = 200 * time.Millisecond

func (k *Kubelet) serveLogs(w http.ResponseWriter, r *http.Request, parts []string) {
	if len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	ns, name, container := parts[0], parts[1], parts[2]
	pod := k.podByName(ns, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return
	}
	if findContainer(pod, container) == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return
	}
	opts := kubeletapi.ParseLogOptions(r.URL.Query(), k.cfg.Clock.Now())
	id, err := logContainerID(pod.Name, k.podStatus(pod), container, opts.Previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	path, running, err := k.containerLogFile(ctx, id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, fmt.Sprintf("failed to open log file %q: %v", path, err), http.StatusBadRequest)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	lw := &kubeletapi.LogWriter{W: w, Opts: opts, TimeFormat: kubeletapi.TimeFormatFixed}
	lr := &logReader{r: bufio.NewReaderSize(f, 64<<10)}
	var lines []kubeletapi.LogLine
	for {
		l, err := lr.next()
		if err != nil {
			break
		}
		lines = append(lines, l)
	}
	for _, l := range opts.Select(lines) {
		if !lw.Write(l) {
			return
		}
	}
	if !opts.Follow || !running {
		return
	}
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	k.followLog(ctx, f, lr, lw, flusher, id, path, opts)
}

// followLog writes what is appended to the log until the container stops
// (and its last lines are out), the client goes, or the byte limit. When
// the runtime rotates the file (a new file at path), the rest of the old
// one is written and the new one followed.
func (k *Kubelet) followLog(ctx context.Context, f *os.File, lr *logReader, lw *kubeletapi.LogWriter, flusher http.Flusher, id, path string, opts kubeletapi.LogOptions) {
	t := k.cfg.Clock.NewTicker(followPoll)
	defer t.Stop()
	// drain writes every complete record; false: stop following.
	drain := func() bool {
		wrote := false
		defer func() {
			if wrote && flusher != nil {
				flusher.Flush()
			}
		}()
		for {
			l, err := lr.next()
			if err != nil {
				return true
			}
			if !opts.Since.IsZero() && l.At.Before(opts.Since) {
				continue
			}
			if !lw.Write(l) {
				return false
			}
			wrote = true
		}
	}
	checks := 0
	for {
		if !drain() {
			return
		}
		// Once a second, ask whether the container still runs (after it
		// stopped, one more read takes what it wrote last) and whether
		// its log was rotated.
		if checks++; checks%5 == 0 {
			if _, running, err := k.containerLogFile(ctx, id); err != nil || !running {
				drain()
				return
			}
			if cur, err := os.Stat(path); err == nil {
				if old, err := f.Stat(); err == nil && !os.SameFile(cur, old) {
					if nf, err := os.Open(path); err == nil {
						if !drain() {
							nf.Close()
							return
						}
						f.Close()
						f = nf
						lr = &logReader{r: bufio.NewReaderSize(f, 64<<10)}
						defer nf.Close()
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

// containerLogFile is a container's log path and whether it runs.
func (k *Kubelet) containerLogFile(ctx context.Context, id string) (string, bool, error) {
	cctx, cancel := k.cri.ctx(ctx)
	defer cancel()
	st, err := k.cri.rt.ContainerStatus(cctx, &cri.ContainerStatusRequest{ContainerId: id})
	if err != nil || st.Status == nil {
		return "", false, fmt.Errorf("container %s: %w", id, errors.Join(err, errors.New("no status")))
	}
	if st.Status.LogPath == "" {
		return "", false, fmt.Errorf("container %s has no log file", id)
	}
	return st.Status.LogPath, st.Status.State == cri.ContainerState_CONTAINER_RUNNING, nil
}

// logContainerID picks the instance whose log to read, from the pod's
// status, or says why there is none.
func logContainerID(podName string, st *corev1.PodStatus, container string, previous bool) (string, error) {
	var cs *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				cs = &list[i]
			}
		}
	}
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, podName)
	}
	last := cs.LastTerminationState.Terminated
	id := ""
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, podName)
		}
		id = last.ContainerID
	case cs.State.Running != nil:
		id = cs.ContainerID
	case cs.State.Terminated != nil:
		id = cs.State.Terminated.ContainerID
		if id == "" && last != nil {
			id = last.ContainerID
		}
		if id == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, podName)
		}
	case last != nil && last.ContainerID != "":
		id = last.ContainerID
	case cs.State.Waiting != nil:
		switch reason := cs.State.Waiting.Reason; reason {
		case reasonErrImagePull:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, podName)
		case reasonImagePullBackOff:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, podName)
		default:
			return "", fmt.Errorf("container %q in pod %q is waiting to start: %s", container, podName, reason)
		}
	}
	if id == "" {
		return "", fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, podName)
	}
	if _, raw, ok := strings.Cut(id, "://"); ok {
		id = raw
	}
	return id, nil
}
