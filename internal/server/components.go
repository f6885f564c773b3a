package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers"
	"github.com/rudder-dev/rudder/internal/pki"
	"github.com/rudder-dev/rudder/internal/scheduler"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// componentConfig is how the in-process components (scheduler,
// controllers, simulated nodes) reach the API: over the HTTPS listener
// like any other client, protobuf, no client-side rate limit.
func (s *Server) componentConfig(cfg Config, port int, userAgent string) *rest.Config {
	host := cfg.BindAddress
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return &rest.Config{
		Host: "https://" + net.JoinHostPort(host, strconv.Itoa(port)),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: s.PKI.CAPEM, CertData: s.PKI.AdminCertPEM, KeyData: s.PKI.AdminKeyPEM,
		},
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

// startScheduler runs the scheduler until ctx ends.
func (s *Server) startScheduler(ctx context.Context, cfg Config, port int) error {
	client, err := kubernetes.NewForConfig(s.componentConfig(cfg, port, "rudder-scheduler"))
	if err != nil {
		return err
	}
	sched, err := scheduler.New(ctx, scheduler.Config{Client: client})
	if err != nil {
		return err
	}
	s.spawn(func() {
		if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
			slog.Error("scheduler stopped", "err", err)
		}
	})
	return nil
}

// startControllers runs the controller manager with the selected
// controllers, unless none are selected.
func (s *Server) startControllers(ctx context.Context, cfg Config, port int) {
	caKey, err := os.ReadFile(s.PKI.Paths.CAKey)
	if err != nil {
		slog.Warn("no CA key: certificate signing requests will not be signed", "err", err)
	}
	descriptors := controllers.Descriptors(controllers.Config{CAPEM: s.PKI.CAPEM, CAKeyPEM: caKey, NodeMonitorGracePeriod: cfg.NodeMonitorGracePeriod})
	any := false
	for _, d := range descriptors {
		if controller.Enabled(d.Name, cfg.Controllers, d.DisabledByDefault) {
			any = true
		}
	}
	if !any {
		return
	}
	rc := s.componentConfig(cfg, port, controller.ManagerUserAgent)
	s.spawn(func() {
		err := controller.RunManager(ctx, controller.ManagerConfig{RestConfig: rc, Controllers: cfg.Controllers, Descriptors: descriptors})
		if err != nil && ctx.Err() == nil {
			slog.Error("controller manager stopped", "err", err)
		}
	})
}

// startSimNodes runs the simulated nodes.
func (s *Server) startSimNodes(ctx context.Context, cfg Config, port int) error {
	client, err := kubernetes.NewForConfig(s.componentConfig(cfg, port, "rudder-simnode"))
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
