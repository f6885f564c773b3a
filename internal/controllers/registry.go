// Package controllers lists rudder's controllers, one package each under
// this directory, for the controller manager (internal/controller) to
// run. Each controller is named as upstream's kube-controller-manager
// names it, so --controllers flags carry over.
package controllers

import (
	"time"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers/bootstrap"
	"github.com/rudder-dev/rudder/internal/controllers/certificates"
	"github.com/rudder-dev/rudder/internal/controllers/clusterroleaggregation"
	"github.com/rudder-dev/rudder/internal/controllers/cronjob"
	"github.com/rudder-dev/rudder/internal/controllers/daemonset"
	"github.com/rudder-dev/rudder/internal/controllers/deployment"
	"github.com/rudder-dev/rudder/internal/controllers/disruption"
	"github.com/rudder-dev/rudder/internal/controllers/endpoints"
	"github.com/rudder-dev/rudder/internal/controllers/endpointslice"
	"github.com/rudder-dev/rudder/internal/controllers/garbagecollector"
	"github.com/rudder-dev/rudder/internal/controllers/job"
	"github.com/rudder-dev/rudder/internal/controllers/namespace"
	"github.com/rudder-dev/rudder/internal/controllers/nodeipam"
	"github.com/rudder-dev/rudder/internal/controllers/nodelifecycle"
	"github.com/rudder-dev/rudder/internal/controllers/podgc"
	"github.com/rudder-dev/rudder/internal/controllers/pvcprotection"
	"github.com/rudder-dev/rudder/internal/controllers/pvprotection"
	"github.com/rudder-dev/rudder/internal/controllers/replicaset"
	"github.com/rudder-dev/rudder/internal/controllers/resourcequota"
	"github.com/rudder-dev/rudder/internal/controllers/rootcacert"
	"github.com/rudder-dev/rudder/internal/controllers/serviceaccount"
	"github.com/rudder-dev/rudder/internal/controllers/servicelb"
	"github.com/rudder-dev/rudder/internal/controllers/statefulset"
	"github.com/rudder-dev/rudder/internal/controllers/ttlafterfinished"
)

// Config carries what some controllers need from the cluster's setup.
type Config struct {
	// CAPEM is the cluster CA, published in every namespace as
	// kube-root-ca.crt; with CAKeyPEM it signs approved certificate
	// signing requests (without the key, no signer runs).
	CAPEM, CAKeyPEM []byte
	// NodeMonitorGracePeriod is the node lifecycle controller's grace
	// period (its default when 0).
	NodeMonitorGracePeriod time.Duration
	// ClusterCIDRs is the pod network the node IPAM controller cuts into
	// node subnets of NodeCIDRMaskSizeIPv4/IPv6 (/24, /64 when 0); empty:
	// nodes get no pod CIDR.
	ClusterCIDRs                               []string
	NodeCIDRMaskSizeIPv4, NodeCIDRMaskSizeIPv6 int
}

// Descriptors returns every controller, in upstream's order. The list is
// a literal: adding a controller means adding a line here.
func Descriptors(cfg Config) []controller.Descriptor {
	all := []controller.Descriptor{
		deployment.Descriptor,
		replicaset.Descriptor,
		replicaset.RCDescriptor,
		statefulset.Descriptor,
		daemonset.Descriptor,
		job.Descriptor,
		cronjob.Descriptor,
		endpoints.Descriptor,
		endpointslice.Descriptor,
		garbagecollector.Descriptor,
		namespace.Descriptor,
		nodeipam.NewDescriptor(nodeipam.Config{ClusterCIDRs: cfg.ClusterCIDRs, NodeMaskIPv4: cfg.NodeCIDRMaskSizeIPv4, NodeMaskIPv6: cfg.NodeCIDRMaskSizeIPv6}),
		nodelifecycle.NewDescriptor(nodelifecycle.Config{NodeMonitorGracePeriod: cfg.NodeMonitorGracePeriod}),
		nodelifecycle.TaintEvictionDescriptor,
		serviceaccount.Descriptor,
		rootcacert.NewDescriptor(cfg.CAPEM),
		podgc.Descriptor,
		disruption.Descriptor,
		resourcequota.Descriptor,
		clusterroleaggregation.Descriptor,
		pvcprotection.Descriptor,
		pvprotection.Descriptor,
		ttlafterfinished.Descriptor,
		// rudder's load balancer: LoadBalancer Services get the nodes' IPs.
		servicelb.Descriptor,
		certificates.ApprovingDescriptor,
		// Off by default upstream, where kubeadm turns them on; rudder
		// issues bootstrap tokens itself (rudder token create), so on.
		bootstrap.SignerDescriptor,
		bootstrap.CleanerDescriptor,
	}
	if len(cfg.CAKeyPEM) > 0 {
		all = append(all, certificates.NewSigningDescriptor(cfg.CAPEM, cfg.CAKeyPEM))
	}
	return all
}
