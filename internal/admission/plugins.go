package admission

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/rudder-dev/rudder/internal/cel"
)

// The plugin registry: every admission plugin kube-apiserver knows, in
// its recommended order, which is the order they always run in, however
// the flags list them. Which ones run follows kube-apiserver's flags:
//
//	--enable-admission-plugins   turn on plugins that are off by default
//	--disable-admission-plugins  turn off plugins that are on by default
//
// A name neither flag mentions runs if it is on by default. Upstream
// names we do not implement yet are accepted and skipped (with a warning
// when asked for by name), so that command lines written for
// kube-apiserver keep working; names upstream does not know are refused.
//
// RBACEscalation is ours, not upstream's (upstream checks escalation in
// its RBAC storage): it always runs, right after NamespaceLifecycle, when
// the server provides an EscalationChecker.

// Deps is what the plugins read and how they are tuned.
type Deps struct {
	// Namespaces backs NamespaceLifecycle; ImmortalNamespaces can never
	// be deleted.
	Namespaces         NamespaceGetter
	ImmortalNamespaces []string
	// Objects backs ServiceAccount, Priority, LimitRanger, PodSecurity,
	// ResourceQuota and the webhook plugins (their configurations, and
	// the Services and EndpointSlices behind service references).
	Objects ObjectSource
	// Status stores quota usage; without it ResourceQuota is left out.
	Status StatusWriter
	// Escalation, when set, adds RBACEscalation.
	Escalation EscalationChecker
	// NotReadyTolerationSeconds and UnreachableTolerationSeconds tune
	// DefaultTolerationSeconds (300 when nil).
	NotReadyTolerationSeconds    *int64
	UnreachableTolerationSeconds *int64
	// PodSecurity configures PodSecurity (its Namespaces and Objects are
	// filled from the fields above); the zero value is upstream's
	// default, privileged everywhere unless a namespace says otherwise.
	PodSecurity PodSecurityConfig
	// Authorizer backs CertificateApproval and CertificateSigning (the
	// server passes its authorizer chain); without it they are left out.
	Authorizer SignerAuthorizer
	// StorageProtectionControllers says the pvc-protection and
	// pv-protection controllers run somewhere and remove the finalizers
	// StorageObjectInUseProtection adds; without them it is left out, or
	// claims and volumes could never be deleted.
	StorageProtectionControllers bool
	// Resources are the served resources by kind: ValidatingAdmissionPolicy
	// resolves paramKind and type-checks its expressions with them.
	Resources []ResourceKind
	// Types gives those kinds their CEL types for type checking (the
	// server builds it from its OpenAPI schemas); nil checks nothing.
	Types *cel.Types
	// Context bounds the plugins' background work (ValidatingAdmissionPolicy
	// type checking); nil runs none.
	Context context.Context
	// Served backs the webhook plugins' matchPolicy Equivalent (the
	// other versions of a resource) and the defaults a webhook-patched
	// object gets again; without it webhooks match exactly and patched
	// objects are not re-defaulted.
	Served []ServedResource
}

// webhookConfig is what both webhook plugins read from Deps.
func (d Deps) webhookConfig() WebhookConfig {
	cfg := WebhookConfig{Objects: d.Objects, Namespaces: d.Namespaces, Served: d.Served}
	if d.Authorizer != nil {
		cfg.Authorizer = d.Authorizer
	}
	return cfg
}

type registryEntry struct {
	name      string
	defaultOn bool
	// build makes the plugin; nil for upstream plugins not implemented.
	// It returns nil when Deps lack what the plugin needs.
	build func(d Deps) Plugin
}

// registry is upstream's recommended order (kube-apiserver's
// AllOrderedPlugins) with its default-on set. Adding a plugin means
// giving its line a build function.
var registry = []registryEntry{
	{name: "AlwaysAdmit"},
	{name: "NamespaceAutoProvision"},
	{name: "NamespaceLifecycle", defaultOn: true, build: func(d Deps) Plugin {
		return NamespaceLifecycle{Namespaces: d.Namespaces, Immortal: d.ImmortalNamespaces}
	}},
	{name: "NamespaceExists"},
	{name: "LimitPodHardAntiAffinityTopology"},
	{name: "LimitRanger", defaultOn: true, build: func(d Deps) Plugin { return &LimitRanger{Objects: d.Objects} }},
	{name: "ServiceAccount", defaultOn: true, build: func(d Deps) Plugin { return ServiceAccount{Objects: d.Objects} }},
	{name: "NodeRestriction", build: func(d Deps) Plugin { return NodeRestriction{Objects: d.Objects} }},
	{name: "TaintNodesByCondition", defaultOn: true, build: func(Deps) Plugin { return TaintNodesByCondition{} }},
	{name: "AlwaysPullImages"},
	{name: "ImagePolicyWebhook"},
	{name: "PodSecurity", defaultOn: true, build: func(d Deps) Plugin {
		cfg := d.PodSecurity
		cfg.Namespaces, cfg.Objects = d.Namespaces, d.Objects
		return NewPodSecurity(cfg)
	}},
	{name: "PodNodeSelector"},
	{name: "Priority", defaultOn: true, build: func(d Deps) Plugin { return Priority{Objects: d.Objects} }},
	{name: "DefaultTolerationSeconds", defaultOn: true, build: func(d Deps) Plugin {
		return DefaultTolerationSeconds{NotReadySeconds: d.NotReadyTolerationSeconds, UnreachableSeconds: d.UnreachableTolerationSeconds}
	}},
	{name: "PodTolerationRestriction"},
	{name: "EventRateLimit"},
	{name: "ExtendedResourceToleration"},
	{name: "DefaultStorageClass", defaultOn: true, build: func(d Deps) Plugin { return DefaultStorageClass{Objects: d.Objects} }},
	{name: "StorageObjectInUseProtection", defaultOn: true, build: func(d Deps) Plugin {
		if !d.StorageProtectionControllers {
			return nil
		}
		return StorageObjectInUseProtection{}
	}},
	{name: "OwnerReferencesPermissionEnforcement"},
	{name: "PersistentVolumeClaimResize", defaultOn: true, build: func(d Deps) Plugin { return PersistentVolumeClaimResize{Objects: d.Objects} }},
	{name: "RuntimeClass", defaultOn: true, build: func(d Deps) Plugin { return RuntimeClass{Objects: d.Objects} }},
	{name: "CertificateApproval", defaultOn: true, build: func(d Deps) Plugin {
		if d.Authorizer == nil {
			return nil
		}
		return CertificateApproval{Authorizer: d.Authorizer}
	}},
	{name: "CertificateSigning", defaultOn: true, build: func(d Deps) Plugin {
		if d.Authorizer == nil {
			return nil
		}
		return CertificateSigning{Authorizer: d.Authorizer}
	}},
	{name: "ClusterTrustBundleAttest", defaultOn: true},
	{name: "CertificateSubjectRestriction", defaultOn: true, build: func(Deps) Plugin { return CertificateSubjectRestriction{} }},
	{name: "DefaultIngressClass", defaultOn: true, build: func(d Deps) Plugin { return DefaultIngressClass{Objects: d.Objects} }},
	{name: "DenyServiceExternalIPs"},
	{name: "PodTopologyLabels", defaultOn: true, build: func(d Deps) Plugin {
		if d.Objects == nil {
			return nil
		}
		return PodTopologyLabels{Objects: d.Objects}
	}},
	{name: "MutatingAdmissionPolicy", defaultOn: true},
	{name: "MutatingAdmissionWebhook", defaultOn: true, build: func(d Deps) Plugin {
		if d.Objects == nil {
			return nil
		}
		return NewMutatingWebhook(d.webhookConfig())
	}},
	{name: "ValidatingAdmissionPolicy", defaultOn: true, build: func(d Deps) Plugin {
		p := NewValidatingPolicy(ValidatingPolicyConfig{Objects: d.Objects, Namespaces: d.Namespaces, Authorizer: d.Authorizer,
			Resources: d.Resources, Status: d.Status, Types: d.Types})
		if d.Context != nil {
			go p.RunTypeChecking(d.Context)
		}
		return p
	}},
	{name: "ValidatingAdmissionWebhook", defaultOn: true, build: func(d Deps) Plugin {
		if d.Objects == nil {
			return nil
		}
		return NewValidatingWebhook(d.webhookConfig())
	}},
	{name: "ResourceQuota", defaultOn: true, build: func(d Deps) Plugin {
		if d.Status == nil {
			return nil
		}
		return NewResourceQuota(ResourceQuotaConfig{Objects: d.Objects, Status: d.Status})
	}},
	{name: "AlwaysDeny"},
}

// AllPlugins returns every plugin name in the order they run.
func AllPlugins() []string {
	out := make([]string, len(registry))
	for i, e := range registry {
		out[i] = e.name
	}
	return out
}

// DefaultPlugins returns the names on by default that run here, in order.
func DefaultPlugins() []string {
	var out []string
	for _, e := range registry {
		if e.defaultOn && e.build != nil {
			out = append(out, e.name)
		}
	}
	return out
}

// NotImplemented returns the upstream names accepted on the command line
// that do nothing here, in order.
func NotImplemented() []string {
	var out []string
	for _, e := range registry {
		if e.build == nil {
			out = append(out, e.name)
		}
	}
	return out
}

// Implemented reports whether a plugin exists here, not only upstream.
func Implemented(name string) bool {
	i := slices.IndexFunc(registry, func(e registryEntry) bool { return e.name == name })
	return i >= 0 && registry[i].build != nil
}

// EnabledPlugins resolves the two flags into the names that run, in
// order, with kube-apiserver's checks and messages: unknown names and
// names in both lists are errors.
func EnabledPlugins(enable, disable []string) ([]string, error) {
	known := map[string]bool{}
	for _, e := range registry {
		known[e.name] = true
	}
	var errs []error
	for _, n := range enable {
		if !known[n] {
			errs = append(errs, fmt.Errorf("enable-admission-plugins plugin %q is unknown", n))
		}
	}
	for _, n := range disable {
		if !known[n] {
			errs = append(errs, fmt.Errorf("disable-admission-plugins plugin %q is unknown", n))
		}
	}
	var both []string
	for _, n := range enable {
		if slices.Contains(disable, n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		sort.Strings(both)
		errs = append(errs, fmt.Errorf("%v in enable-admission-plugins and disable-admission-plugins overlapped", both))
	}
	if len(errs) > 0 {
		return nil, utilerrors.NewAggregate(errs)
	}
	var out []string
	for _, e := range registry {
		on := e.defaultOn
		if slices.Contains(enable, e.name) {
			on = true
		}
		if slices.Contains(disable, e.name) {
			on = false
		}
		if on {
			out = append(out, e.name)
		}
	}
	return out, nil
}

// Build makes the chain of the named plugins (as EnabledPlugins returns
// them), in registry order. Names not implemented here are skipped, with
// a warning for those in explicit, the names a user asked for.
func Build(names, explicit []string, d Deps) *Chain {
	var plugins []Plugin
	for _, e := range registry {
		if !slices.Contains(names, e.name) {
			continue
		}
		if e.build == nil {
			if slices.Contains(explicit, e.name) {
				slog.Warn("admission plugin not implemented; ignored", "plugin", e.name)
			}
			continue
		}
		if p := e.build(d); p != nil {
			plugins = append(plugins, p)
		}
		if e.name == "NamespaceLifecycle" && d.Escalation != nil {
			plugins = append(plugins, RBACEscalation{Checker: d.Escalation})
		}
	}
	if d.Escalation != nil && !slices.Contains(names, "NamespaceLifecycle") {
		plugins = append([]Plugin{RBACEscalation{Checker: d.Escalation}}, plugins...)
	}
	return NewChain(plugins...)
}

// Names returns the names of the chain's plugins, in order.
func (c *Chain) Names() []string {
	if c == nil {
		return nil
	}
	out := make([]string, len(c.plugins))
	for i, p := range c.plugins {
		out[i] = p.Name()
	}
	return out
}
