package kubelet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Exec, attach and port-forward: the kubelet asks the runtime (CRI Exec,
// Attach, PortForward) for a streaming URL and proxies the request —
// SPDY or WebSocket upgrade included — to it, so the API server, which
// only reaches the kubelet, gets the runtime's stream. The runtime's
// streaming server is on loopback; nothing else can reach it.

// serveStream answers /exec, /attach and /portForward.
func (k *Kubelet) serveStream(w http.ResponseWriter, r *http.Request, parts []string) {
	q := r.URL.Query()
	flag := func(names ...string) bool {
		for _, n := range names {
			if v := q.Get(n); v == "1" || v == "true" {
				return true
			}
		}
		return false
	}
	var streamURL string
	var err error
	ctx, cancel := context.WithTimeout(r.Context(), k.cri.timeout)
	defer cancel()
	switch parts[0] {
	case "portForward":
		var ns, name, uid string
		switch len(parts) {
		case 3:
			ns, name = parts[1], parts[2]
		case 4:
			ns, name, uid = parts[1], parts[2], parts[3]
		default:
			http.NotFound(w, r)
			return
		}
		pod := k.podByName(ns, name)
		if pod == nil || (uid != "" && string(pod.UID) != uid) {
			http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
			return
		}
		obs, oerr := k.obs.observe(ctx, string(pod.UID))
		sb := obs.latestSandbox()
		if oerr != nil || sb == nil || !sb.Ready {
			http.Error(w, fmt.Sprintf("pod %q has no running sandbox", name), http.StatusBadRequest)
			return
		}
		var ports []int32
		for _, p := range q["port"] {
			n, perr := strconv.ParseUint(p, 10, 16)
			if perr != nil || n == 0 {
				http.Error(w, fmt.Sprintf("invalid port %q", p), http.StatusBadRequest)
				return
			}
			ports = append(ports, int32(n))
		}
		var resp *cri.PortForwardResponse
		if resp, err = k.cri.rt.PortForward(ctx, &cri.PortForwardRequest{PodSandboxId: sb.ID, Port: ports}); err == nil {
			streamURL = resp.Url
		}
	case "exec", "attach":
		_, _, id, cerr := k.podContainerOf(ctx, parts)
		if cerr != nil {
			writeError(w, cerr)
			return
		}
		stdin, stdout, stderr, tty := flag("input", "stdin"), flag("output", "stdout"), flag("error", "stderr"), flag("tty")
		if tty {
			stderr = false
		}
		if parts[0] == "exec" {
			cmd := q["command"]
			if len(cmd) == 0 {
				http.Error(w, "missing command", http.StatusBadRequest)
				return
			}
			var resp *cri.ExecResponse
			if resp, err = k.cri.rt.Exec(ctx, &cri.ExecRequest{ContainerId: id, Cmd: cmd, Tty: tty, Stdin: stdin, Stdout: stdout, Stderr: stderr}); err == nil {
				streamURL = resp.Url
			}
		} else {
			var resp *cri.AttachResponse
			if resp, err = k.cri.rt.Attach(ctx, &cri.AttachRequest{ContainerId: id, Tty: tty, Stdin: stdin, Stdout: stdout, Stderr: stderr}); err == nil {
				streamURL = resp.Url
			}
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", parts[0], err), http.StatusInternalServerError)
		return
	}
	target, err := url.Parse(streamURL)
	if err != nil || target.Host == "" {
		http.Error(w, fmt.Sprintf("the runtime's streaming URL %q is not usable", streamURL), http.StatusInternalServerError)
		return
	}
	proxyStream(w, r, target)
}

// proxyStream forwards r, upgrade and all, to target: target's path, and
// its query when it has one (the runtime's token), else r's.
func proxyStream(w http.ResponseWriter, r *http.Request, target *url.URL) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path, pr.Out.URL.RawPath = target.Scheme, target.Host, target.Path, target.RawPath
			if target.RawQuery != "" {
				pr.Out.URL.RawQuery = target.RawQuery
			}
			pr.Out.Host = target.Host
		},
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "proxy to the runtime's stream: "+err.Error(), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// serveRun answers /run: the command (cmd=, in the query or the form)
// runs to its end, its output is the body.
func (k *Kubelet) serveRun(w http.ResponseWriter, r *http.Request, parts []string) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), k.cri.timeout)
	defer cancel()
	_, _, id, err := k.podContainerOf(ctx, parts)
	if err != nil {
		writeError(w, err)
		return
	}
	cmdline := r.FormValue("cmd")
	cmd := splitCommand(cmdline)
	if len(cmd) == 0 {
		http.Error(w, "missing cmd", http.StatusBadRequest)
		return
	}
	resp, err := k.cri.rt.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(k.cri.timeout / time.Second)})
	if err != nil {
		http.Error(w, fmt.Sprintf("run: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(resp.Stdout)
	_, _ = w.Write(resp.Stderr)
}

// splitCommand splits cmd on spaces, as upstream's /run does.
func splitCommand(s string) []string { return strings.Fields(s) }
