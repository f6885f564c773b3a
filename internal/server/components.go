package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rudder-dev/rudder/internal/apiserver"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers"
	"github.com/rudder-dev/rudder/internal/pki"
	"github.com/rudder-dev/rudder/internal/scheduler"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// componentConfig is how the in-process components (scheduler,
// controllers, simulated nodes) reach the API: through the API server's
// loopback transport, straight into its handler with no TLS or HTTP/2 in
// between (they share the process; see apiserver.LoopbackTransport), as
// user. Protobuf, no client-side rate limit. Everything outside the
// process — kubectl, tests, `rudder simnodes --kubeconfig` — uses the
// HTTPS listener.
func (s *Server) componentConfig(user *auth.User, userAgent string) *rest.Config {
	return &rest.Config{
		// Never dialled: the transport serves every request in process.
		Host:      "http://loopback",
		Transport: s.API.LoopbackTransport(user),
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		},
		RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(),
		UserAgent:   userAgent,
		// Deprecation warnings are for people; components would log them
		// on every pass.
		WarningHandler: rest.NoWarnings{},
	}
}

// ComponentConfig is the client configuration the server's own
// components use (componentConfig, as the admin): for a harness that runs
// another component in the server's process, as the scheduler benchmark
// runs the scheduler under test, so that it reaches the API as the
// built-in one would.
func (s *Server) ComponentConfig(userAgent string) *rest.Config {
	return s.componentConfig(componentUser, userAgent)
}

// componentUser is who the in-process components act as: the admin the
// admin certificate names (system:masters), as when they used that
// certificate over HTTPS. One identity per component (upstream's
// system:kube-scheduler, system:kube-controller-manager) is a matter of
// passing another user to componentConfig.
var componentUser = &auth.User{
	Name:   pki.AdminCommonName,
	Groups: []string{pki.AdminGroup, auth.AllAuthenticated},
}

// startScheduler runs the scheduler until ctx ends.
func (s *Server) startScheduler(ctx context.Context, cfg Config, port int) error {
	client, err := kubernetes.NewForConfig(s.componentConfig(componentUser, "rudder-scheduler"))
	if err != nil {
		return err
	}
	sched, err := scheduler.New(ctx, scheduler.Config{Client: client})
	if err != nil {
		return err
	}
	done := s.inProcessHealth("scheduler")
	s.spawn(func() {
		defer close(done)
		if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
			slog.Error("scheduler stopped", "err", err)
		}
	})
	return nil
}

// inProcessHealth registers an in-process component's check for
// componentstatuses: healthy while it runs. The caller closes the
// returned channel when it stops.
func (s *Server) inProcessHealth(name string) chan struct{} {
	done := make(chan struct{})
	s.API.SetComponentChecks(map[string]apiserver.ComponentCheck{name: func(context.Context) error {
		select {
		case <-done:
			return errors.New(name + " stopped")
		default:
			return nil
		}
	}})
	return done
}

// startControllers runs the controller manager with the selected
// controllers, unless none are selected.
func (s *Server) startControllers(ctx context.Context, cfg Config, port int) {
	caKey, err := os.ReadFile(s.PKI.Paths.CAKey)
	if err != nil {
		slog.Warn("no CA key: certificate signing requests will not be signed", "err", err)
	}
	descriptors := controllers.Descriptors(controllers.Config{CAPEM: s.PKI.CAPEM, CAKeyPEM: caKey, NodeMonitorGracePeriod: cfg.NodeMonitorGracePeriod,
		ClusterCIDRs: ClusterCIDRs(cfg)})
	any := false
	for _, d := range descriptors {
		if controller.Enabled(d.Name, cfg.Controllers, d.DisabledByDefault) {
			any = true
		}
	}
	if !any {
		return
	}
	rc := s.componentConfig(componentUser, controller.ManagerUserAgent)
	done := s.inProcessHealth("controller-manager")
	s.spawn(func() {
		defer close(done)
		err := controller.RunManager(ctx, controller.ManagerConfig{RestConfig: rc, Controllers: cfg.Controllers, Descriptors: descriptors})
		if err != nil && ctx.Err() == nil {
			slog.Error("controller manager stopped", "err", err)
		}
	})
}

// startSimNodes runs the simulated nodes.
func (s *Server) startSimNodes(ctx context.Context, cfg Config, port int) error {
	client, err := kubernetes.NewForConfig(s.componentConfig(componentUser, "rudder-simnode"))
	if err != nil {
		return err
	}
	// Three zones, as a cluster usually spans: topology spreading has
	// something to spread over.
	sc := simnode.Config{Client: client, Count: cfg.SimulatedNodes, Zones: 3}
	if !cfg.SimulatedNodesNoKubeletAPI {
		// Each node serves the kubelet API on its own loopback address,
		// with a certificate of the cluster CA, for kubectl top and logs.
		cert, err := s.PKI.IssueServingCert(pki.SimNodeServingCommonName, nil, nil, 365*24*time.Hour)
		if err != nil {
			return err
		}
		sc.KubeletAPI = &simnode.KubeletAPI{ServingCert: cert, ClientCAs: s.PKI.CAPool}
	}
	fleet, err := simnode.New(sc)
	if err != nil {
		return err
	}
	s.SimNodes = fleet
	return fleet.Start(ctx)
}

// ClusterCIDRs is cfg.ClusterCIDR as a list, the default when empty.
func ClusterCIDRs(cfg Config) []string {
	c := cfg.ClusterCIDR
	if c == "" {
		c = DefaultClusterCIDR
	}
	var out []string
	for _, s := range strings.Split(c, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// checkClusterCIDRs refuses a --cluster-cidr that is not one or two
// CIDRs of different families.
func checkClusterCIDRs(cfg Config) error {
	list := ClusterCIDRs(cfg)
	fams := map[bool]bool{}
	for _, s := range list {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return fmt.Errorf("cluster CIDR %q: %w", s, err)
		}
		if fams[p.Addr().Is4()] {
			return fmt.Errorf("cluster CIDR %q: at most one CIDR per IP family", cfg.ClusterCIDR)
		}
		fams[p.Addr().Is4()] = true
	}
	return nil
}

// DefaultClusterCIDR is the pod network when none is given (k3s's).
const DefaultClusterCIDR = "10.42.0.0/16"
