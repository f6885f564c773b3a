package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultPodSpec fills the defaults upstream sets on every pod spec, in a
// Pod or in a workload's pod template: restartPolicy, dnsPolicy,
// schedulerName, terminationGracePeriodSeconds, securityContext, and per
// container terminationMessagePath/Policy, imagePullPolicy, port protocols,
// probe and lifecycle handler fields, env fieldRef apiVersion, and volume
// sources (emptyDir when none is set, file modes, hostPath type).
//
// Defaults that upstream applies to Pods only (requests from limits,
// enableServiceLinks, host ports under hostNetwork) are not set here, so a
// Deployment's template reads back the way it does against Kubernetes; the
// pod strategy adds them. It is idempotent: it runs on every update too.
func DefaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		period := int64(corev1.DefaultTerminationGracePeriodSeconds)
		spec.TerminationGracePeriodSeconds = &period
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	defaultResourceList(spec.Overhead)
	if spec.Resources != nil {
		defaultResourceList(spec.Resources.Limits)
		defaultResourceList(spec.Resources.Requests)
	}
}

// ValidatePodSpec checks a pod spec as upstream validation does for the
// fields users commonly get wrong. fldPath is where the spec sits
// (spec, or spec.template.spec).
func ValidatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	return validatePodSpec(spec, fldPath, false)
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTagIsLatest(c.Image) {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if vf := c.Env[i].ValueFrom; vf != nil && vf.FieldRef != nil && vf.FieldRef.APIVersion == "" {
			vf.FieldRef.APIVersion = "v1"
		}
	}
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		defaultLifecycleHandler(c.Lifecycle.PostStart)
		defaultLifecycleHandler(c.Lifecycle.PreStop)
	}
	defaultResourceList(c.Resources.Limits)
	defaultResourceList(c.Resources.Requests)
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		// Upstream's declarative default materialises an empty service name.
		empty := ""
		p.GRPC.Service = &empty
	}
}

func defaultLifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		defaultHTTPGet(h.HTTPGet)
	}
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// defaultResourceList rounds quantities up to milli precision, as upstream
// does, so that "0.1m" CPU is stored as "1m" rather than rejected later.
func defaultResourceList(list corev1.ResourceList) {
	for name, q := range list {
		// RoundUp reports false when it had to round; either way q now
		// holds the rounded value, in whole milli-units as upstream stores.
		q.RoundUp(-3)
		list[name] = q
	}
}

func defaultVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if volumeSourceCount(src) == 0 {
		src.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	mode := func(m **int32, def int32) {
		if *m == nil {
			d := def
			*m = &d
		}
	}
	if src.Secret != nil {
		mode(&src.Secret.DefaultMode, corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ConfigMap != nil {
		mode(&src.ConfigMap.DefaultMode, corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.DownwardAPI != nil {
		mode(&src.DownwardAPI.DefaultMode, corev1.DownwardAPIVolumeSourceDefaultMode)
		defaultDownwardAPIItems(src.DownwardAPI.Items)
	}
	if src.Projected != nil {
		mode(&src.Projected.DefaultMode, corev1.ProjectedVolumeSourceDefaultMode)
		for i := range src.Projected.Sources {
			ps := &src.Projected.Sources[i]
			if ps.ServiceAccountToken != nil && ps.ServiceAccountToken.ExpirationSeconds == nil {
				hour := int64(3600)
				ps.ServiceAccountToken.ExpirationSeconds = &hour
			}
			if ps.DownwardAPI != nil {
				defaultDownwardAPIItems(ps.DownwardAPI.Items)
			}
		}
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		unset := corev1.HostPathUnset
		src.HostPath.Type = &unset
	}
	if src.Image != nil && src.Image.PullPolicy == "" {
		if imageTagIsLatest(src.Image.Reference) {
			src.Image.PullPolicy = corev1.PullAlways
		} else {
			src.Image.PullPolicy = corev1.PullIfNotPresent
		}
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
}

func defaultDownwardAPIItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if fr := items[i].FieldRef; fr != nil && fr.APIVersion == "" {
			fr.APIVersion = "v1"
		}
	}
}

// imageTagIsLatest reports whether a reference names the "latest" tag,
// explicitly or by carrying neither tag nor digest. A reference that does
// not parse counts as not latest, matching upstream, which then picks
// IfNotPresent.
func imageTagIsLatest(image string) bool {
	if image == "" || strings.TrimSpace(image) != image || strings.ContainsAny(image, " \t\n") {
		return false
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && digest == "" {
		return false
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
		if tag == "" {
			return false
		}
	}
	if name == "" || strings.HasSuffix(name, "/") {
		return false
	}
	// Repository paths must be lower case; the registry host may not be.
	path := name
	if i := strings.Index(name, "/"); i >= 0 {
		host := name[:i]
		if strings.ContainsAny(host, ".:") || host == "localhost" || strings.ToLower(host) != host {
			path = name[i+1:]
		}
	}
	if strings.ToLower(path) != path {
		return false
	}
	if tag == "" {
		return !hasDigest
	}
	return tag == "latest"
}
