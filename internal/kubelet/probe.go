package kubelet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Container probes, as upstream's prober: one worker per (container
// instance, probe type) — liveness, readiness, startup — started when the
// container is seen running and stopped when it is not (or the pod goes).
// A worker waits out initialDelaySeconds from the container's start, then
// probes on the clock's ticker every periodSeconds (a ticker: no drift,
// and a slow probe skips ticks rather than bursting), each probe bounded
// by timeoutSeconds. A result becomes the probe's current value only
// after successThreshold successes or failureThreshold failures in a row
// (probeState); the value changing wakes the pod's worker.
//
// Effects (status.go, worker.go): readiness feeds the container's ready
// flag and so ContainersReady and Ready — a container with a readiness
// probe starts not ready; a startup probe holds the other two until it
// succeeds (started=false meanwhile); a liveness (or startup) failure
// kills the container, which then restarts as the restart policy says.
// Every failed probe is a Warning event Unhealthy ("Readiness probe
// failed: ...").
//
// Handlers: exec (CRI ExecSync), httpGet (HTTP or HTTPS without
// verification; 200–399 is success; a redirect to another host is not
// followed and counts as success), tcpSocket and grpc (probe_grpc.go:
// grpc.health.v1). httpGet, tcpSocket and grpc dial the pod's IP — the
// node's for a hostNetwork pod — (or httpGet.host / tcpSocket.host); a
// pod with no IP fails them with "pod has no IP".

// probeType is which probe.
type probeType int

const (
	probeLiveness probeType = iota
	probeReadiness
	probeStartup
)

func (t probeType) String() string { return [...]string{"Liveness", "Readiness", "Startup"}[t] }

// probeResult is a probe's value.
type probeResult int

const (
	probeUnknown probeResult = iota
	probeSuccess
	probeFailure
)

func (r probeResult) String() string { return [...]string{"Unknown", "Success", "Failure"}[r] }

// probeKey names one probe of one container instance.
type probeKey struct {
	ContainerID string
	Type        probeType
}

// probeSpec is the probe of c of type t (nil if none).
func probeSpec(c *corev1.Container, t probeType) *corev1.Probe {
	switch t {
	case probeLiveness:
		return c.LivenessProbe
	case probeReadiness:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}

// initialResult is a probe's value before its first conclusion: a
// readiness probe starts failed (not ready), liveness succeeded, startup
// unknown (not started).
func initialResult(t probeType) probeResult {
	switch t {
	case probeReadiness:
		return probeFailure
	case probeLiveness:
		return probeSuccess
	}
	return probeUnknown
}

// probeParams are a probe's numbers with the API's defaults.
type probeParams struct {
	InitialDelay, Period, Timeout      time.Duration
	SuccessThreshold, FailureThreshold int
}

func paramsOf(p *corev1.Probe) probeParams {
	secs := func(v int32, def int) time.Duration {
		if v <= 0 {
			return time.Duration(def) * time.Second
		}
		return time.Duration(v) * time.Second
	}
	n := func(v int32, def int) int {
		if v <= 0 {
			return def
		}
		return int(v)
	}
	return probeParams{
		InitialDelay:     secs(p.InitialDelaySeconds, 0),
		Period:           secs(p.PeriodSeconds, 10),
		Timeout:          secs(p.TimeoutSeconds, 1),
		SuccessThreshold: n(p.SuccessThreshold, 1),
		FailureThreshold: n(p.FailureThreshold, 3),
	}
}

// probeState counts results in a row; pure.
type probeState struct {
	Current probeResult
	last    probeResult
	run     int
}

// record adds one probe's outcome (Success or Failure; Unknown, an error
// of the prober, changes nothing) and reports whether Current changed.
func (s *probeState) record(r probeResult, p probeParams) bool {
	if r == probeUnknown {
		return false
	}
	if r == s.last {
		s.run++
	} else {
		s.last, s.run = r, 1
	}
	if (r == probeFailure && s.run < p.FailureThreshold) || (r == probeSuccess && s.run < p.SuccessThreshold) {
		return false
	}
	changed := s.Current != r
	s.Current = r
	return changed
}

// probeWorker probes one container instance with one probe.
type probeWorker struct {
	key     probeKey
	uid     types.UID
	params  probeParams
	clock   clock.WithTicker
	started time.Time // the container's start: the initial delay counts from it
	// probe runs one probe: its result and, for a failure, why.
	probe func(ctx context.Context, timeout time.Duration) (probeResult, string)
	// hold reports whether probing waits (a startup probe not yet
	// succeeded holds liveness and readiness).
	hold func() bool
	// report is called after each probe with the new state; it returns
	// false to end the worker.
	report func(s probeState, changed bool, r probeResult, msg string) bool
	state  probeState
}

// run probes until ctx ends or report says stop.
func (w *probeWorker) run(ctx context.Context) {
	if d := w.params.InitialDelay - w.clock.Since(w.started); d > 0 {
		t := w.clock.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
	tick := w.clock.NewTicker(w.params.Period)
	defer tick.Stop()
	for {
		if !w.once(ctx) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// once runs one probe (unless held) and reports it.
func (w *probeWorker) once(ctx context.Context) bool {
	if w.hold != nil && w.hold() {
		return true
	}
	r, msg := w.probe(ctx, w.params.Timeout)
	if ctx.Err() != nil {
		return false
	}
	changed := w.state.record(r, w.params)
	return w.report(w.state, changed, r, msg)
}

// probeManager holds the kubelet's probe workers and their results.
type probeManager struct {
	mu      sync.Mutex
	workers map[probeKey]*runningProbe
	results map[probeKey]probeResult
	// kills holds the containers a failed probe has the kubelet kill:
	// why (for their terminated state) and which probe.
	kills map[string]probeKill
}

// probeKill is a container to kill for a failed liveness or startup
// probe.
type probeKill struct {
	Message string
	Type    probeType
}

type runningProbe struct {
	uid    types.UID
	cancel context.CancelFunc
}

func newProbeManager() *probeManager {
	return &probeManager{workers: map[probeKey]*runningProbe{}, results: map[probeKey]probeResult{}, kills: map[string]probeKill{}}
}

// result is the current value of probe key (its initial one if none).
func (m *probeManager) result(key probeKey) probeResult {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.results[key]; ok {
		return r
	}
	return initialResult(key.Type)
}

// snapshot is the results of the given containers, for computeStatus.
func (m *probeManager) snapshot(ids []string) (map[probeKey]probeResult, map[string]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	res := map[probeKey]probeResult{}
	kills := map[string]string{}
	for _, id := range ids {
		for _, t := range []probeType{probeLiveness, probeReadiness, probeStartup} {
			if r, ok := m.results[probeKey{id, t}]; ok {
				res[probeKey{id, t}] = r
			}
		}
		if pk, ok := m.kills[id]; ok {
			kills[id] = pk.Message
		}
	}
	return res, kills
}

// probeReady is a running container's (started, ready) given its probe
// results (missing: the initial value); pure.
func probeReady(c *corev1.Container, id string, results map[probeKey]probeResult) (started, ready bool) {
	get := func(t probeType) probeResult {
		if r, ok := results[probeKey{id, t}]; ok {
			return r
		}
		return initialResult(t)
	}
	started = c.StartupProbe == nil || get(probeStartup) == probeSuccess
	if !started {
		return false, false
	}
	return true, c.ReadinessProbe == nil || get(probeReadiness) == probeSuccess
}

// syncProbes starts the workers of pod's running containers and stops
// those of containers no longer running (pod nil: all of uid's).
func (k *Kubelet) syncProbes(uid types.UID, pod *corev1.Pod, obs podObserved) {
	want := map[probeKey]func(context.Context){}
	if pod != nil && pod.DeletionTimestamp == nil && !podIsTerminal(pod) {
		podIP := k.podIP(pod, obs.latestSandbox().ipsOrNil())
		for _, oc := range obs.running() {
			c := findContainer(pod, oc.Name)
			if c == nil {
				continue
			}
			for _, t := range []probeType{probeLiveness, probeReadiness, probeStartup} {
				if spec := probeSpec(c, t); spec != nil {
					want[probeKey{oc.ID, t}] = k.newProbeWorker(pod, c, oc, t, spec, podIP)
				}
			}
		}
	}
	m := k.probes
	k.mu.Lock()
	runCtx := k.runCtx
	k.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, rp := range m.workers {
		if _, ok := want[key]; !ok && rp.uid == uid {
			rp.cancel()
			delete(m.workers, key)
			delete(m.results, key)
		}
	}
	if runCtx == nil || runCtx.Err() != nil {
		return
	}
	for key, run := range want {
		if _, ok := m.workers[key]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(runCtx)
		m.workers[key] = &runningProbe{uid: uid, cancel: cancel}
		k.wg.Add(1)
		go func() { defer k.wg.Done(); run(ctx) }()
	}
}

// forgetProbeKills drops the kill messages of removed containers.
func (m *probeManager) forgetKills(ids ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.kills, id)
	}
}

// newProbeWorker makes the worker of probe t of container instance oc.
func (k *Kubelet) newProbeWorker(pod *corev1.Pod, c *corev1.Container, oc *observedContainer, t probeType, spec *corev1.Probe, podIP string) func(context.Context) {
	key := probeKey{oc.ID, t}
	w := &probeWorker{key: key, uid: pod.UID, params: paramsOf(spec), clock: k.cfg.Clock, started: oc.StartedAt,
		state: probeState{Current: initialResult(t)}}
	w.probe = func(ctx context.Context, timeout time.Duration) (probeResult, string) {
		return k.runProbe(ctx, spec, c, oc.ID, podIP, timeout)
	}
	if t != probeStartup && c.StartupProbe != nil {
		w.hold = func() bool { return k.probes.result(probeKey{oc.ID, probeStartup}) != probeSuccess }
	}
	w.report = func(s probeState, changed bool, r probeResult, msg string) bool {
		if r == probeFailure {
			k.event(pod, c.Name, "Warning", eventUnhealthy, "%s probe failed: %s", t, msg)
		} else if r == probeUnknown {
			k.event(pod, c.Name, "Warning", eventUnhealthy, "%s probe errored: %s", t, msg)
		}
		if !changed {
			return true
		}
		k.probes.mu.Lock()
		if _, live := k.probes.workers[key]; !live {
			k.probes.mu.Unlock()
			return false
		}
		k.probes.results[key] = s.Current
		keep := true
		if s.Current == probeFailure && t != probeReadiness {
			// As upstream: the container is killed and restarted; this
			// instance is not probed again.
			k.probes.kills[oc.ID] = probeKill{Message: fmt.Sprintf("Container %s failed %s probe, will be restarted", c.Name, strings.ToLower(t.String())), Type: t}
			keep = false
		}
		if s.Current == probeSuccess && t == probeStartup {
			keep = false // started: upstream probes startup no more
		}
		k.probes.mu.Unlock()
		k.cfg.Logger.Info("probe result changed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "probe", t.String(), "result", s.Current.String())
		k.trigger(pod.UID)
		return keep
	}
	return w.run
}

// probeKills are the kill actions for running containers a liveness or
// startup probe failed, with upstream's Killing message.
func (k *Kubelet) probeKills(pod *corev1.Pod, obs podObserved) []action {
	k.probes.mu.Lock()
	kills := make(map[string]probeKill, len(k.probes.kills))
	for id, pk := range k.probes.kills {
		kills[id] = pk
	}
	k.probes.mu.Unlock()
	return probeKillActions(pod, &obs, kills)
}

// probeKillActions kills the running containers of kills (pure): within
// the failed probe's terminationGracePeriodSeconds if it has one, else
// the pod's.
func probeKillActions(pod *corev1.Pod, obs *podObserved, kills map[string]probeKill) []action {
	var out []action
	for _, oc := range obs.running() {
		pk, ok := kills[oc.ID]
		if !ok {
			continue
		}
		grace := podGrace(pod)
		if c := findContainer(pod, oc.Name); c != nil {
			if spec := probeSpec(c, pk.Type); spec != nil && spec.TerminationGracePeriodSeconds != nil {
				grace = max(time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second, minGrace)
			}
		}
		out = append(out, action{Kind: actKillContainer, Container: oc.Name, ContainerID: oc.ID, Grace: grace, Reason: "a probe failed", Message: pk.Message})
	}
	return out
}

// runProbe runs one probe of container c (instance id).
func (k *Kubelet) runProbe(ctx context.Context, p *corev1.Probe, c *corev1.Container, id, podIP string, timeout time.Duration) (probeResult, string) {
	switch {
	case p.Exec != nil:
		return k.execProbe(ctx, id, p.Exec.Command, timeout)
	case p.HTTPGet != nil:
		return httpProbe(ctx, p.HTTPGet, c, podIP, timeout)
	case p.TCPSocket != nil:
		return tcpProbe(ctx, p.TCPSocket, c, podIP, timeout)
	case p.GRPC != nil:
		return grpcProbe(ctx, p.GRPC, podIP, timeout)
	}
	return probeUnknown, "the probe has no handler"
}

func (k *Kubelet) execProbe(ctx context.Context, id string, cmd []string, timeout time.Duration) (probeResult, string) {
	cctx, cancel := context.WithTimeout(ctx, timeout+k.cri.timeout)
	defer cancel()
	r, err := k.cri.rt.ExecSync(cctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(max(timeout/time.Second, 1))})
	switch {
	case err != nil && (errors.Is(cctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded):
		return probeFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " "))
	case err != nil:
		return probeUnknown, err.Error()
	case r.ExitCode != 0:
		out := strings.TrimSpace(string(r.Stdout) + string(r.Stderr))
		if out == "" {
			out = fmt.Sprintf("command %q exited with %d", strings.Join(cmd, " "), r.ExitCode)
		}
		return probeFailure, out
	}
	return probeSuccess, ""
}

// probePort resolves a probe's port, by number or by the name of one of
// c's ports.
func probePort(port intstr.IntOrString, c *corev1.Container) (int, error) {
	if port.Type == intstr.Int {
		if port.IntVal < 1 || port.IntVal > 65535 {
			return 0, fmt.Errorf("invalid port number: %d", port.IntVal)
		}
		return int(port.IntVal), nil
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	return 0, fmt.Errorf("couldn't find port %q in container %q", port.StrVal, c.Name)
}

func httpProbe(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP string, timeout time.Duration) (probeResult, string) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := newHTTPGetRequest(cctx, g, c, podIP, "kube-probe/"+userAgentVersion)
	if err != nil {
		return probeFailure, err.Error()
	}
	host := req.URL.Hostname()
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if r.URL.Hostname() != host || len(via) >= 10 {
				return http.ErrUseLastResponse // as upstream: not followed off the pod
			}
			return nil
		},
	}
	resp, err := client.Do(req)
	if err != nil {
		return probeFailure, err.Error()
	}
	defer resp.Body.Close()
	body := make([]byte, 1024)
	n, _ := resp.Body.Read(body)
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return probeSuccess, ""
	}
	return probeFailure, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode) + trimBody(body[:n])
}

// userAgentVersion is the major.minor of Version, for kube-probe/ and
// kube-lifecycle/ user agents.
var userAgentVersion = func() string {
	parts := strings.SplitN(strings.TrimPrefix(Version, "v"), ".", 3)
	if len(parts) < 2 {
		return Version
	}
	return parts[0] + "." + parts[1]
}()

// newHTTPGetRequest is the request of an httpGet probe or hook of
// container c: to g.Host, else the pod's IP; the port by number or by
// the name of one of c's ports; g's headers (a Host header sets the
// request's host).
func newHTTPGetRequest(ctx context.Context, g *corev1.HTTPGetAction, c *corev1.Container, podIP, userAgent string) (*http.Request, error) {
	port, err := probePort(g.Port, c)
	if err != nil {
		return nil, err
	}
	host := g.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return nil, errors.New("pod has no IP")
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u := &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))}
	if pu, err := url.Parse(path); err == nil {
		u.Path, u.RawQuery = pu.Path, pu.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "*/*")
	for _, h := range g.HTTPHeaders {
		if strings.EqualFold(h.Name, "Host") {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	return req, nil
}

func trimBody(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return ", body: " + strings.TrimSpace(string(b))
}

func tcpProbe(ctx context.Context, s *corev1.TCPSocketAction, c *corev1.Container, podIP string, timeout time.Duration) (probeResult, string) {
	port, err := probePort(s.Port, c)
	if err != nil {
		return probeFailure, err.Error()
	}
	host := s.Host
	if host == "" {
		host = podIP
	}
	if host == "" {
		return probeFailure, "pod has no IP"
	}
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return probeFailure, err.Error()
	}
	conn.Close()
	return probeSuccess, ""
}
