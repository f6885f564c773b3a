package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Container lifecycle hooks, as upstream's kubelet runs them.
//
// postStart runs right after the container started, before the sync
// goes on (so the next init container, or a sidecar's dependants, wait
// for it). If it fails the kubelet records FailedPostStartHook
// ("PostStartHook failed"), kills the container (Killing:
// "FailedPostStartHook") and reports PostStartHookError with the hook's
// message; the restart policy and back-off then apply as to any exit.
//
// preStop runs when the kubelet stops a container, before the stop
// signal, within the container's grace period: the time it takes counts
// against the grace (a hook that outlives it is abandoned and the
// container is stopped with the 2 s minimum). A failure records
// FailedPreStopHook ("PreStopHook failed") and the stop goes on. Hook
// messages stay out of events: they may hold secrets (as upstream).
//
// Handlers: exec (CRI ExecSync in the container; a non-zero exit
// fails), httpGet (to httpGet.host, else the pod's IP — the node's for
// a hostNetwork pod; any HTTP response succeeds, only a failure to get
// one fails; HTTPS that gets an HTTP answer is retried as HTTP, as
// upstream) and sleep (waits, ended early by the grace period or the
// sync's end).

// podIP is the address httpGet hooks and probes dial when they name no
// host: the node's for a hostNetwork pod, else the sandbox's first.
func (k *Kubelet) podIP(pod *corev1.Pod, sandboxIPs []string) string {
	if pod != nil && pod.Spec.HostNetwork {
		if ips := k.hostIPs(); len(ips) > 0 {
			return ips[0]
		}
	}
	if len(sandboxIPs) > 0 {
		return sandboxIPs[0]
	}
	return ""
}

// runLifecycleHook runs handler h for container c (instance id) until
// it ends or ctx does; on failure it returns upstream's message.
func (k *Kubelet) runLifecycleHook(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id string, h *corev1.LifecycleHandler, podIP string) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := k.execHook(ctx, id, h.Exec.Command)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q", h.Exec.Command, c.Name, podRef(pod), err, out), err
		}
		return "", nil
	case h.HTTPGet != nil:
		if err := httpHook(ctx, h.HTTPGet, c, podIP); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v", h.HTTPGet.Path, c.Name, podRef(pod), err), err
		}
		return "", nil
	case h.Sleep != nil:
		if err := k.sleepHook(ctx, h.Sleep.Seconds); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v", h.Sleep.Seconds, c.Name, podRef(pod), err), err
		}
		return "", nil
	}
	err := fmt.Errorf("invalid handler: %v", h)
	return fmt.Sprintf("Cannot run handler: %v", err), err
}

// runPreStop runs c's preStop hook within grace; it returns when the
// hook ended or grace passed.
func (k *Kubelet) runPreStop(ctx context.Context, pod *corev1.Pod, c *corev1.Container, id, podIP string, grace time.Duration) {
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := k.runLifecycleHook(hctx, pod, c, id, c.Lifecycle.PreStop, podIP); err != nil && hctx.Err() == nil {
			k.cfg.Logger.Info("preStop hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
			k.event(pod, c.Name, "Warning", eventFailedPreStopHook, "PreStopHook failed")
		}
	}()
	t := k.cfg.Clock.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C():
		k.cfg.Logger.Info("preStop hook not completed in the grace period", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "grace", grace)
	case <-ctx.Done():
	}
}

// execHook runs cmd in container id; a non-zero exit is an error. It
// returns the command's output.
func (k *Kubelet) execHook(ctx context.Context, id string, cmd []string) (string, error) {
	timeout := int64(0) // none, but ctx's
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(int64(time.Until(dl)/time.Second), 1)
	}
	r, err := k.cri.rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
	if err != nil {
		return "", err
	}
	out := string(r.Stdout) + string(r.Stderr)
	if r.ExitCode != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), r.ExitCode, r.Stderr)
	}
	return out, nil
}

// maxHookBody is how much of a hook's HTTP answer is read.
const maxHookBody = 10 << 10

// httpHook sends an httpGet hook's request.
func httpHook(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string) error {
	req, err := newHTTPGetRequest(ctx, g, c, podIP, "kube-lifecycle/"+userAgentVersion)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true, Proxy: nil}}
	resp, err := client.Do(req)
	discard(resp)
	if err != nil && req.URL.Scheme == "https" && gotHTTPAnswer(err) {
		// A plain HTTP server behind an HTTPS hook: upstream retries
		// as HTTP, without credentials.
		req = req.Clone(ctx)
		req.URL.Scheme = "http"
		req.Header.Del("Authorization")
		resp, err = client.Do(req)
		discard(resp)
	}
	return err
}

func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxHookBody))
	resp.Body.Close()
}

// gotHTTPAnswer: an HTTPS request was answered in plain HTTP.
func gotHTTPAnswer(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}

// sleepHook waits seconds on the kubelet's clock, or until ctx ends.
func (k *Kubelet) sleepHook(ctx context.Context, seconds int64) error {
	if seconds <= 0 {
		return nil
	}
	t := k.cfg.Clock.NewTimer(time.Duration(seconds) * time.Second)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	}
}
