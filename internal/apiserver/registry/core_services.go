package registry

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The service strategy. The server allocates cluster IPs and node ports
// after PrepareForCreate; this strategy only keeps clusterIP and clusterIPs
// in step, and on update carries allocated values over when a client
// replaces the object without them (kubectl replace, a stale manifest),
// as upstream's REST layer does.

func defaultService(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	spec := &svc.Spec
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		if c := spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			timeout := corev1.DefaultClientIPServiceAffinitySeconds
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &timeout}}
		}
	}
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		p := &spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if intOrStringIsZero(p.TargetPort) {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if externallyAccessible(svc) && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if spec.InternalTrafficPolicy == nil && spec.Type != corev1.ServiceTypeExternalName {
		cluster := corev1.ServiceInternalTrafficPolicyCluster
		spec.InternalTrafficPolicy = &cluster
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			allocate := true
			spec.AllocateLoadBalancerNodePorts = &allocate
		}
		vip := corev1.LoadBalancerIPModeVIP
		for i, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" && ing.IPMode == nil {
				svc.Status.LoadBalancer.Ingress[i].IPMode = &vip
			}
		}
	}
}

// intOrStringIsZero reports whether a target port was left unset.
func intOrStringIsZero(v intstr.IntOrString) bool {
	return v == intstr.FromInt32(0) || v == intstr.FromString("")
}

func externallyAccessible(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeClusterIP && len(svc.Spec.ExternalIPs) > 0)
}

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone || (len(svc.Spec.ClusterIPs) > 0 && svc.Spec.ClusterIPs[0] == corev1.ClusterIPNone)
}

// normalizeClusterIPs fills whichever of clusterIP and clusterIPs the
// client left out from the other.
func normalizeClusterIPs(spec *corev1.ServiceSpec) {
	switch {
	case spec.ClusterIP != "" && len(spec.ClusterIPs) == 0:
		spec.ClusterIPs = []string{spec.ClusterIP}
	case spec.ClusterIP == "" && len(spec.ClusterIPs) > 0:
		spec.ClusterIP = spec.ClusterIPs[0]
	}
}

func prepareCreateService(obj runtime.Object) {
	svc := obj.(*corev1.Service)
	svc.Status = corev1.ServiceStatus{}
	normalizeClusterIPs(&svc.Spec)
}

func prepareUpdateService(obj, old runtime.Object) {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	spec, oldSpec := &svc.Spec, &oldSvc.Spec
	if spec.Type != corev1.ServiceTypeExternalName && oldSpec.Type != corev1.ServiceTypeExternalName {
		if spec.ClusterIP == "" && len(spec.ClusterIPs) == 0 {
			spec.ClusterIP, spec.ClusterIPs = oldSpec.ClusterIP, append([]string(nil), oldSpec.ClusterIPs...)
		}
		if len(spec.IPFamilies) == 0 {
			spec.IPFamilies = append([]corev1.IPFamily(nil), oldSpec.IPFamilies...)
		}
		if spec.IPFamilyPolicy == nil {
			spec.IPFamilyPolicy = oldSpec.IPFamilyPolicy
		}
	}
	normalizeClusterIPs(spec)
	if needsNodePorts(svc) && needsNodePorts(oldSvc) {
		for i := range spec.Ports {
			if spec.Ports[i].NodePort != 0 {
				continue
			}
			for _, op := range oldSpec.Ports {
				if op.Port == spec.Ports[i].Port && op.Protocol == spec.Ports[i].Protocol {
					spec.Ports[i].NodePort = op.NodePort
					break
				}
			}
		}
	}
	if needsHealthCheck(svc) && needsHealthCheck(oldSvc) && spec.HealthCheckNodePort == 0 {
		spec.HealthCheckNodePort = oldSpec.HealthCheckNodePort
	}
	// Leaving a type behind drops what it had allocated, unless the client
	// changed those values itself.
	if !needsNodePorts(svc) && needsNodePorts(oldSvc) {
		for i := range spec.Ports {
			for _, op := range oldSpec.Ports {
				if op.Port == spec.Ports[i].Port && op.NodePort == spec.Ports[i].NodePort {
					spec.Ports[i].NodePort = 0
				}
			}
		}
	}
	if !needsHealthCheck(svc) && needsHealthCheck(oldSvc) && spec.HealthCheckNodePort == oldSpec.HealthCheckNodePort {
		spec.HealthCheckNodePort = 0
	}
	if !externallyAccessible(svc) && spec.ExternalTrafficPolicy == oldSpec.ExternalTrafficPolicy {
		spec.ExternalTrafficPolicy = ""
	}
	if spec.Type == corev1.ServiceTypeExternalName && spec.InternalTrafficPolicy != nil && oldSpec.InternalTrafficPolicy != nil &&
		*spec.InternalTrafficPolicy == *oldSpec.InternalTrafficPolicy {
		spec.InternalTrafficPolicy = nil
	}
	if spec.Type != corev1.ServiceTypeLoadBalancer && oldSpec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts != nil && oldSpec.AllocateLoadBalancerNodePorts != nil &&
			*spec.AllocateLoadBalancerNodePorts == *oldSpec.AllocateLoadBalancerNodePorts {
			spec.AllocateLoadBalancerNodePorts = nil
		}
		if spec.LoadBalancerClass != nil && oldSpec.LoadBalancerClass != nil && *spec.LoadBalancerClass == *oldSpec.LoadBalancerClass {
			spec.LoadBalancerClass = nil
		}
	}
	if spec.Type == corev1.ServiceTypeExternalName && oldSpec.Type != corev1.ServiceTypeExternalName {
		if sameStrings(spec.ClusterIPs, oldSpec.ClusterIPs) {
			spec.ClusterIP, spec.ClusterIPs = "", nil
		}
		if len(spec.IPFamilies) == len(oldSpec.IPFamilies) {
			spec.IPFamilies = nil
		}
		if spec.IPFamilyPolicy != nil && oldSpec.IPFamilyPolicy != nil && *spec.IPFamilyPolicy == *oldSpec.IPFamilyPolicy {
			spec.IPFamilyPolicy = nil
		}
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort ||
		(svc.Spec.Type == corev1.ServiceTypeLoadBalancer && (svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts))
}

func needsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func validateService(obj runtime.Object) field.ErrorList {
	svc := obj.(*corev1.Service)
	spec := &svc.Spec
	specPath := field.NewPath("spec")
	allErrs := validateCoreMeta(&svc.ObjectMeta, true, apivalidation.NameIsDNS1035Label)

	headless := isHeadless(svc)
	if len(spec.Ports) == 0 && !headless && spec.Type != corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, field.Required(specPath.Child("ports"), ""))
	}
	switch spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if headless {
			allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs").Index(0), corev1.ClusterIPNone,
				fmt.Sprintf("may not be set to 'None' for %s services", spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(spec.ClusterIPs) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(spec.IPFamilies) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if spec.IPFamilyPolicy != nil {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(spec.ExternalName, "."); cname != "" {
			allErrs = append(allErrs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			allErrs = append(allErrs, field.Required(specPath.Child("externalName"), ""))
		}
	}

	portNames := sets.New[string]()
	portsPath := specPath.Child("ports")
	for i := range spec.Ports {
		allErrs = append(allErrs, validateServicePort(&spec.Ports[i], len(spec.Ports) > 1, portNames, portsPath.Index(i))...)
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	if spec.SessionAffinity == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("sessionAffinity"), ""))
	} else if spec.SessionAffinity != corev1.ServiceAffinityClientIP && spec.SessionAffinity != corev1.ServiceAffinityNone {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity,
			[]corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}))
	}
	allErrs = append(allErrs, validateSessionAffinityConfig(spec, specPath.Child("sessionAffinityConfig"))...)
	allErrs = append(allErrs, validateClusterIPs(spec, specPath)...)
	for i, ip := range spec.ExternalIPs {
		allErrs = append(allErrs, validation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}
	allErrs = append(allErrs, validateEnum(spec.Type, specPath.Child("type"), corev1.ServiceTypeClusterIP,
		corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort)...)
	nodePorts := sets.New[string]()
	ports := sets.New[string]()
	for i, p := range spec.Ports {
		pp := portsPath.Index(i)
		if p.NodePort != 0 {
			if spec.Type == corev1.ServiceTypeClusterIP {
				allErrs = append(allErrs, field.Forbidden(pp.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
			key := fmt.Sprintf("%s/%d", p.Protocol, p.NodePort)
			if nodePorts.Has(key) {
				allErrs = append(allErrs, field.Duplicate(pp.Child("nodePort"), p.NodePort))
			}
			nodePorts.Insert(key)
		}
		key := fmt.Sprintf("%s/%d", p.Protocol, p.Port)
		if ports.Has(key) {
			allErrs = append(allErrs, field.Duplicate(pp, corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}))
		}
		ports.Insert(key)
	}
	if len(spec.LoadBalancerSourceRanges) > 0 {
		p := specPath.Child("LoadBalancerSourceRanges")
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Forbidden(p, "may only be used when `type` is 'LoadBalancer'"))
		}
		for i, r := range spec.LoadBalancerSourceRanges {
			allErrs = append(allErrs, validation.IsValidCIDR(p.Index(i), strings.TrimSpace(r))...)
		}
	}
	if spec.AllocateLoadBalancerNodePorts != nil && spec.Type != corev1.ServiceTypeLoadBalancer {
		allErrs = append(allErrs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer && spec.AllocateLoadBalancerNodePorts == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("allocateLoadBalancerNodePorts"), ""))
	}
	if spec.LoadBalancerClass != nil {
		if spec.Type != corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("loadBalancerClass"), "may only be used when `type` is 'LoadBalancer'"))
		} else {
			allErrs = append(allErrs, validateQualifiedName(*spec.LoadBalancerClass, specPath.Child("loadBalancerClass"))...)
		}
	}
	allErrs = append(allErrs, validateTrafficPolicies(svc, specPath)...)
	return allErrs
}

func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if requireName && sp.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if sp.Name != "" {
		allErrs = append(allErrs, validateDNS1123Label(sp.Name, fldPath.Child("name"))...)
		if names.Has(sp.Name) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	allErrs = append(allErrs, validatePortNum(sp.Port, fldPath.Child("port"))...)
	allErrs = append(allErrs, validateProtocol(sp.Protocol, fldPath.Child("protocol"))...)
	allErrs = append(allErrs, validatePortNumOrName(sp.TargetPort, fldPath.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		allErrs = append(allErrs, validateQualifiedName(*sp.AppProtocol, fldPath.Child("appProtocol"))...)
	}
	return allErrs
}

func validateSessionAffinityConfig(spec *corev1.ServiceSpec, fldPath *field.Path) field.ErrorList {
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		if spec.SessionAffinityConfig != nil {
			return field.ErrorList{field.Forbidden(fldPath, fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone))}
		}
	case corev1.ServiceAffinityClientIP:
		msg := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
		c := spec.SessionAffinityConfig
		switch {
		case c == nil:
			return field.ErrorList{field.Required(fldPath, msg)}
		case c.ClientIP == nil:
			return field.ErrorList{field.Required(fldPath.Child("clientIP"), msg)}
		case c.ClientIP.TimeoutSeconds == nil:
			return field.ErrorList{field.Required(fldPath.Child("clientIP", "timeoutSeconds"), msg)}
		case *c.ClientIP.TimeoutSeconds <= 0 || *c.ClientIP.TimeoutSeconds > maxClientIPAffinity:
			return field.ErrorList{field.Invalid(fldPath.Child("clientIP", "timeoutSeconds"), c.ClientIP.TimeoutSeconds,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPAffinity))}
		}
	}
	return nil
}

func validateClusterIPs(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	ipsPath := specPath.Child("clusterIPs")
	if len(spec.ClusterIPs) > 0 && spec.ClusterIP != spec.ClusterIPs[0] {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	if len(spec.ClusterIPs) > 2 {
		allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "may only hold up to 2 values"))
	}
	for i, ip := range spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			if i != 0 || len(spec.ClusterIPs) > 1 {
				allErrs = append(allErrs, field.Invalid(ipsPath, spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		allErrs = append(allErrs, validation.IsValidIP(ipsPath.Index(i), ip)...)
	}
	if spec.IPFamilyPolicy != nil {
		allErrs = append(allErrs, validateEnum(*spec.IPFamilyPolicy, specPath.Child("ipFamilyPolicy"),
			corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack)...)
	}
	for i, f := range spec.IPFamilies {
		allErrs = append(allErrs, validateEnum(f, specPath.Child("ipFamilies").Index(i), corev1.IPv4Protocol, corev1.IPv6Protocol)...)
	}
	return allErrs
}

func validateTrafficPolicies(svc *corev1.Service, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	spec := &svc.Spec
	if !externallyAccessible(svc) {
		if spec.ExternalTrafficPolicy != "" {
			allErrs = append(allErrs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy,
				"may only be set for externally-accessible services"))
		}
	} else {
		allErrs = append(allErrs, validateEnum(spec.ExternalTrafficPolicy, specPath.Child("externalTrafficPolicy"),
			corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal)...)
	}
	if !needsHealthCheck(svc) {
		if spec.HealthCheckNodePort != 0 {
			allErrs = append(allErrs, field.Invalid(specPath.Child("healthCheckNodePort"), spec.HealthCheckNodePort,
				"may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
		}
	} else if spec.HealthCheckNodePort != 0 {
		allErrs = append(allErrs, validatePortNum(spec.HealthCheckNodePort, specPath.Child("healthCheckNodePort"))...)
	}
	if spec.InternalTrafficPolicy == nil {
		if spec.Type == corev1.ServiceTypeNodePort || spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeClusterIP {
			allErrs = append(allErrs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else {
		allErrs = append(allErrs, validateEnum(*spec.InternalTrafficPolicy, specPath.Child("internalTrafficPolicy"),
			corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal)...)
	}
	if td := spec.TrafficDistribution; td != nil {
		allErrs = append(allErrs, validateEnum(*td, specPath.Child("trafficDistribution"),
			corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone, corev1.ServiceTrafficDistributionPreferSameNode)...)
	}
	return allErrs
}

func validateServiceUpdate(obj, old runtime.Object) field.ErrorList {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	allErrs := validateCoreMetaUpdate(&svc.ObjectMeta, &oldSvc.ObjectMeta)
	allErrs = append(allErrs, validateClusterIPChange(oldSvc, svc)...)
	if needsHealthCheck(oldSvc) && needsHealthCheck(svc) && svc.Spec.HealthCheckNodePort != oldSvc.Spec.HealthCheckNodePort {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec", "healthCheckNodePort"), fieldImmutableMsg))
	}
	if oldSvc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		oldSvc.Spec.LoadBalancerClass != nil && (svc.Spec.LoadBalancerClass == nil || *svc.Spec.LoadBalancerClass != *oldSvc.Spec.LoadBalancerClass) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "loadBalancerClass"), svc.Spec.LoadBalancerClass,
			"may not change once set"))
	}
	return append(allErrs, validateService(obj)...)
}

// validateClusterIPChange lets a service gain or drop its secondary IP
// family but never change the primary cluster IP, except to or from
// ExternalName.
func validateClusterIPChange(oldSvc, svc *corev1.Service) field.ErrorList {
	if svc.Spec.Type == corev1.ServiceTypeExternalName || oldSvc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadless(oldSvc) && isHeadless(svc) {
		return nil
	}
	var allErrs field.ErrorList
	path := field.NewPath("spec", "clusterIPs")
	newIPs, oldIPs := svc.Spec.ClusterIPs, oldSvc.Spec.ClusterIPs
	switch {
	case len(oldIPs) == len(newIPs):
		for i := range oldIPs {
			if oldIPs[i] != newIPs[i] {
				allErrs = append(allErrs, field.Invalid(path.Index(i), newIPs, "may not change once set"))
			}
		}
	case len(oldIPs) > len(newIPs):
		if len(newIPs) == 0 {
			allErrs = append(allErrs, field.Invalid(path.Index(0), newIPs, "primary clusterIP can not be unset"))
		} else if newIPs[0] != oldIPs[0] {
			allErrs = append(allErrs, field.Invalid(path.Index(0), newIPs, "may not change once set"))
		}
		if len(newIPs) == 1 && (svc.Spec.IPFamilyPolicy == nil || *svc.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack) {
			allErrs = append(allErrs, field.Invalid(path.Index(0), newIPs, "`ipFamilyPolicy` must be set to 'SingleStack' when releasing the secondary clusterIP"))
		}
	default:
		if len(oldIPs) > 0 && newIPs[0] != oldIPs[0] {
			allErrs = append(allErrs, field.Invalid(path.Index(0), newIPs, "may not change once set"))
		}
	}
	return allErrs
}

func validateServiceStatusUpdate(obj, old runtime.Object) field.ErrorList {
	svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
	allErrs := validateCoreMetaUpdate(&svc.ObjectMeta, &oldSvc.ObjectMeta)
	ingPath := field.NewPath("status", "loadBalancer", "ingress")
	for i, ing := range svc.Status.LoadBalancer.Ingress {
		p := ingPath.Index(i)
		if ing.IP != "" {
			allErrs = append(allErrs, validation.IsValidIP(p.Child("ip"), ing.IP)...)
		}
		if ing.Hostname != "" {
			allErrs = append(allErrs, validateDNS1123Subdomain(ing.Hostname, p.Child("hostname"))...)
			if net.ParseIP(ing.Hostname) != nil {
				allErrs = append(allErrs, field.Invalid(p.Child("hostname"), ing.Hostname, "must be a DNS name, not an IP address"))
			}
		}
		if ing.IPMode != nil {
			if ing.IP == "" {
				allErrs = append(allErrs, field.Forbidden(p.Child("ipMode"), "may not be specified when `ip` is not set"))
			}
			allErrs = append(allErrs, validateEnum(*ing.IPMode, p.Child("ipMode"), corev1.LoadBalancerIPModeProxy, corev1.LoadBalancerIPModeVIP)...)
		} else if ing.IP != "" {
			allErrs = append(allErrs, field.Required(p.Child("ipMode"), "must be specified when `ip` is set"))
		}
	}
	return allErrs
}

func serviceFields(obj runtime.Object) fields.Set {
	svc := obj.(*corev1.Service)
	return fields.Set{
		"spec.clusterIP": svc.Spec.ClusterIP,
		"spec.type":      string(svc.Spec.Type),
	}
}

var serviceTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Type", "string", corev1.ServiceSpec{}.SwaggerDoc()["type"], 0),
		column("Cluster-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["clusterIP"], 0),
		column("External-IP", "string", corev1.ServiceSpec{}.SwaggerDoc()["externalIPs"], 0),
		column("Port(s)", "string", corev1.ServiceSpec{}.SwaggerDoc()["ports"], 0),
		ageColumn,
		column("Selector", "string", corev1.ServiceSpec{}.SwaggerDoc()["selector"], 1),
	},
	Row: func(obj runtime.Object) []interface{} {
		svc := obj.(*corev1.Service)
		clusterIP := "<none>"
		if len(svc.Spec.ClusterIPs) > 0 {
			clusterIP = svc.Spec.ClusterIPs[0]
		}
		pieces := make([]string, len(svc.Spec.Ports))
		for i, p := range svc.Spec.Ports {
			if p.NodePort > 0 {
				pieces[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
			} else {
				pieces[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
			}
		}
		// The server always renders wide rows, so addresses are never clipped.
		return []interface{}{svc.Name, string(svc.Spec.Type), clusterIP, serviceExternalIP(svc),
			orNone(strings.Join(pieces, ",")), Age(svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector)}
	},
}

func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		lb := sets.New[string]()
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				lb.Insert(ing.IP)
			} else if ing.Hostname != "" {
				lb.Insert(ing.Hostname)
			}
		}
		all := append(sets.List(lb), svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

// Endpoints.

func defaultEndpoints(obj runtime.Object) {
	ep := obj.(*corev1.Endpoints)
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func validateEndpoints(obj runtime.Object) field.ErrorList {
	ep := obj.(*corev1.Endpoints)
	allErrs := validateCoreMeta(&ep.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	subsetsPath := field.NewPath("subsets")
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		p := subsetsPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j, port := range ss.Ports {
			pp := p.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				allErrs = append(allErrs, field.Required(pp.Child("name"), ""))
			} else if port.Name != "" {
				allErrs = append(allErrs, validateDNS1123Label(port.Name, pp.Child("name"))...)
			}
			allErrs = append(allErrs, validatePortNum(port.Port, pp.Child("port"))...)
			allErrs = append(allErrs, validateProtocol(port.Protocol, pp.Child("protocol"))...)
			if port.AppProtocol != nil {
				allErrs = append(allErrs, validateQualifiedName(*port.AppProtocol, pp.Child("appProtocol"))...)
			}
		}
	}
	return allErrs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	allErrs := validation.IsValidIP(fldPath.Child("ip"), a.IP)
	if len(allErrs) == 0 {
		ip := net.ParseIP(a.IP)
		switch {
		case ip.IsUnspecified():
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ip"), a.IP, "may not be unspecified (0.0.0.0)"))
		case ip.IsLoopback():
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ip"), a.IP, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
		case ip.IsLinkLocalUnicast():
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ip"), a.IP, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
		case ip.IsLinkLocalMulticast():
			allErrs = append(allErrs, field.Invalid(fldPath.Child("ip"), a.IP, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
		}
	}
	if a.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(a.Hostname, fldPath.Child("hostname"))...)
	}
	if a.NodeName != nil {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *a.NodeName, fldPath.Child("nodeName"))...)
	}
	return allErrs
}

var endpointsTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Endpoints", "string", corev1.Endpoints{}.SwaggerDoc()["subsets"], 0),
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		ep := obj.(*corev1.Endpoints)
		return []interface{}{ep.Name, formatEndpoints(ep), Age(ep.CreationTimestamp)}
	},
}

// formatEndpoints lists the first three ip:port pairs and counts the rest.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			// A headless service's endpoints may carry no ports.
			for _, a := range ss.Addresses {
				count++
				if len(list) < max {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, port := range ss.Ports {
			for _, a := range ss.Addresses {
				count++
				if len(list) < max {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
				}
			}
		}
	}
	s := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", s, count-max)
	}
	return s
}

// sortedKeys returns a map's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
