package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Container validation: regular, init and ephemeral containers share
// validateContainerCommon; each list adds its own rules, as upstream does.

func validateContainers(containers []corev1.Container, vols map[string]corev1.VolumeSource, gracePeriod *int64, fldPath *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, vols, p, podRestart)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if c.Lifecycle != nil {
			allErrs = append(allErrs, validateLifecycle(c.Lifecycle, gracePeriod, p.Child("lifecycle"))...)
		}
		allErrs = append(allErrs, validateProbes(c, p)...)
		allErrs = append(allErrs, validateContainerRestartRules(c, p, false)...)
	}
	return append(allErrs, checkHostPortConflicts(containers, fldPath)...)
}

func validateInitContainers(containers, regular []corev1.Container, vols map[string]corev1.VolumeSource, gracePeriod *int64, fldPath *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range containers {
		c := &containers[i]
		p := fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, vols, p, podRestart)...)
		allErrs = append(allErrs, validateContainerRestartRules(c, p, true)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Init containers run one at a time, so only clashes within one count.
		allErrs = append(allErrs, checkHostPortConflicts([]corev1.Container{*c}, fldPath)...)
		if isRestartableInitContainer(c) {
			if c.Lifecycle != nil {
				allErrs = append(allErrs, validateLifecycle(c.Lifecycle, gracePeriod, p.Child("lifecycle"))...)
			}
			allErrs = append(allErrs, validateProbes(c, p)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		if c.Lifecycle != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("lifecycle"), msg))
		}
		if c.LivenessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("livenessProbe"), msg))
		}
		if c.ReadinessProbe != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("readinessProbe"), msg))
		}
		if c.StartupProbe != nil {
			allErrs = append(allErrs, field.Forbidden(p.Child("startupProbe"), msg))
		}
		if len(c.ResizePolicy) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("resizePolicy"), c.ResizePolicy, "must not be set for init containers"))
		}
	}
	return allErrs
}

// validateEphemeralContainers checks what the ephemeralcontainers
// subresource would let through; on create and in templates they are
// rejected outright by the callers.
func validateEphemeralContainers(spec *corev1.PodSpec, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	others := sets.New[string]()
	for _, c := range spec.Containers {
		others.Insert(c.Name)
	}
	for _, c := range spec.InitContainers {
		others.Insert(c.Name)
	}
	all := others.Clone()
	for i := range spec.EphemeralContainers {
		ec := &spec.EphemeralContainers[i]
		p := fldPath.Index(i)
		c := (*corev1.Container)(&ec.EphemeralContainerCommon)
		allErrs = append(allErrs, validateContainerCommon(c, vols, p, spec.RestartPolicy)...)
		if all.Has(ec.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), ec.Name))
		} else {
			all.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		const msg = "cannot be set for an Ephemeral Container"
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(ec.Ports) > 0},
			{"resources", len(ec.Resources.Limits)+len(ec.Resources.Requests) > 0},
			{"lifecycle", ec.Lifecycle != nil},
			{"livenessProbe", ec.LivenessProbe != nil},
			{"readinessProbe", ec.ReadinessProbe != nil},
			{"startupProbe", ec.StartupProbe != nil},
		} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(p.Child(f.name), msg))
			}
		}
	}
	return allErrs
}

func isRestartableInitContainer(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func validateContainerCommon(c *corev1.Container, vols map[string]corev1.VolumeSource, p *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	var allErrs field.ErrorList
	namePath := p.Child("name")
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(namePath, ""))
	} else {
		allErrs = append(allErrs, validateDNS1123Label(c.Name, namePath)...)
	}
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(p.Child("image"), ""))
	}
	allErrs = append(allErrs, validateEnum(c.TerminationMessagePolicy, p.Child("terminationMessagePolicy"),
		corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError)...)
	allErrs = append(allErrs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, p.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c.VolumeMounts, vols, p.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateEnum(c.ImagePullPolicy, p.Child("imagePullPolicy"),
		corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	allErrs = append(allErrs, validateResourceRequirements(&c.Resources, p.Child("resources"))...)
	allErrs = append(allErrs, validateResizePolicy(c.ResizePolicy, p.Child("resizePolicy"), podRestart)...)
	allErrs = append(allErrs, validateContainerSecurityContext(c.SecurityContext, p.Child("securityContext"))...)
	return allErrs
}

func validateContainerRestartRules(c *corev1.Container, p *field.Path, isInit bool) field.ErrorList {
	var allErrs field.ErrorList
	if c.RestartPolicy != nil {
		allErrs = append(allErrs, validateEnum(*c.RestartPolicy, p.Child("restartPolicy"),
			corev1.ContainerRestartPolicyAlways, corev1.ContainerRestartPolicyOnFailure, corev1.ContainerRestartPolicyNever)...)
	}
	if len(c.RestartPolicyRules) == 0 {
		return allErrs
	}
	rp := p.Child("restartPolicyRules")
	if c.RestartPolicy == nil {
		allErrs = append(allErrs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	} else if isInit && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
		allErrs = append(allErrs, field.Forbidden(rp, "restartPolicyRules are not allowed for sidecar containers"))
	}
	for i, r := range c.RestartPolicyRules {
		ip := rp.Index(i)
		allErrs = append(allErrs, validateEnum(r.Action, ip.Child("action"), corev1.ContainerRestartRuleActionRestart)...)
		if r.ExitCodes == nil {
			allErrs = append(allErrs, field.Required(ip.Child("exitCodes"), "must be specified"))
			continue
		}
		allErrs = append(allErrs, validateEnum(r.ExitCodes.Operator, ip.Child("exitCodes", "operator"),
			corev1.ContainerRestartRuleOnExitCodesOpIn, corev1.ContainerRestartRuleOnExitCodesOpNotIn)...)
		if len(r.ExitCodes.Values) > 255 {
			allErrs = append(allErrs, field.TooMany(ip.Child("exitCodes", "values"), len(r.ExitCodes.Values), 255))
		}
	}
	return allErrs
}

func validateContainerPorts(ports []corev1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(p.Child("containerPort"), ""))
		} else {
			allErrs = append(allErrs, validatePortNum(port.ContainerPort, p.Child("containerPort"))...)
		}
		if port.HostPort != 0 {
			allErrs = append(allErrs, validatePortNum(port.HostPort, p.Child("hostPort"))...)
		}
		allErrs = append(allErrs, validateProtocol(port.Protocol, p.Child("protocol"))...)
	}
	return allErrs
}

func validateProtocol(proto corev1.Protocol, fldPath *field.Path) field.ErrorList {
	// Upstream lists the supported protocols sorted.
	return validateEnum(proto, fldPath, corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP)
}

func checkHostPortConflicts(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return allErrs
}

// The downward API paths a pod may read: env vars get single values,
// volumes may also project all labels or annotations.
var (
	envDownwardAPIFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
	volumeDownwardAPIFieldPaths = sets.New("metadata.annotations", "metadata.labels", "metadata.name",
		"metadata.namespace", "metadata.uid")
	resourceFieldPaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage")
)

func validateEnv(vars []corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range vars {
		p := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			// Relaxed names are the rule since RelaxedEnvironmentVariableValidation went GA.
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		allErrs = append(allErrs, validateEnvVarValueFrom(ev, p.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fldPath *field.Path) field.ErrorList {
	vf := ev.ValueFrom
	if vf == nil {
		return nil
	}
	var allErrs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		allErrs = append(allErrs, validateObjectFieldSelector(vf.FieldRef, envDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		allErrs = append(allErrs, validateResourceFieldSelector(vf.ResourceFieldRef, fldPath.Child("resourceFieldRef"), false)...)
	}
	if vf.ConfigMapKeyRef != nil {
		n++
		allErrs = append(allErrs, validateKeySelector(vf.ConfigMapKeyRef.Name, vf.ConfigMapKeyRef.Key, fldPath.Child("configMapKeyRef"))...)
	}
	if vf.SecretKeyRef != nil {
		n++
		allErrs = append(allErrs, validateKeySelector(vf.SecretKeyRef.Name, vf.SecretKeyRef.Key, fldPath.Child("secretKeyRef"))...)
	}
	if vf.FileKeyRef != nil {
		n++
		if vf.FileKeyRef.VolumeName == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("fileKeyRef", "volumeName"), ""))
		}
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not be specified when `value` is not empty"))
	case n > 1:
		allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

func validateKeySelector(name, key string, fldPath *field.Path) field.ErrorList {
	allErrs := nameErrors(apivalidation.NameIsDNSSubdomain, name, fldPath.Child("name"))
	if key == "" {
		return append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("key"), key, msg))
	}
	return allErrs
}

func validateObjectFieldSelector(fs *corev1.ObjectFieldSelector, paths sets.Set[string], fldPath *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(fldPath.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(fldPath.Child("fieldPath"), "")}
	}
	if fs.APIVersion != "v1" {
		return field.ErrorList{field.Invalid(fldPath.Child("fieldPath"), fs.FieldPath,
			fmt.Sprintf("error converting fieldPath: unsupported pod version: %s", fs.APIVersion))}
	}
	if p, subscript, ok := splitSubscriptedPath(fs.FieldPath); ok {
		switch p {
		case "metadata.annotations":
			return validateQualifiedName(strings.ToLower(subscript), fldPath)
		case "metadata.labels":
			return validateQualifiedName(subscript, fldPath)
		default:
			return field.ErrorList{field.Invalid(fldPath, p, "does not support subscript")}
		}
	}
	if !paths.Has(fs.FieldPath) {
		return field.ErrorList{field.NotSupported(fldPath.Child("fieldPath"), fs.FieldPath, sets.List(paths))}
	}
	return nil
}

// splitSubscriptedPath splits "metadata.labels['key']" into its path and key.
func splitSubscriptedPath(p string) (string, string, bool) {
	if !strings.HasSuffix(p, "']") {
		return p, "", false
	}
	parts := strings.SplitN(p, "['", 2)
	if len(parts) != 2 || parts[0] == "" {
		return p, "", false
	}
	sub := strings.TrimSuffix(parts[1], "']")
	if sub == "" {
		return p, "", false
	}
	return parts[0], sub, true
}

func validateResourceFieldSelector(fs *corev1.ResourceFieldSelector, fldPath *field.Path, volume bool) field.ErrorList {
	switch {
	case volume && fs.ContainerName == "":
		return field.ErrorList{field.Required(fldPath.Child("containerName"), "")}
	case fs.Resource == "":
		return field.ErrorList{field.Required(fldPath.Child("resource"), "")}
	case !resourceFieldPaths.Has(fs.Resource) &&
		!strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		return field.ErrorList{field.NotSupported(fldPath.Child("resource"), fs.Resource, sets.List(resourceFieldPaths))}
	}
	return nil
}

func validateEnvFrom(sources []corev1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range sources {
		p := fldPath.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				allErrs = append(allErrs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, ev.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if ev.SecretRef != nil {
			n++
			allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, ev.SecretRef.Name, p.Child("secretRef", "name"))...)
		}
		if n == 0 {
			allErrs = append(allErrs, field.Invalid(p, "", "must specify one of: `configMapRef` or `secretRef`"))
		} else if n > 1 {
			allErrs = append(allErrs, field.Invalid(p, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, vols map[string]corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	points := sets.New[string]()
	for i, m := range mounts {
		p := fldPath.Index(i)
		if m.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			allErrs = append(allErrs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			allErrs = append(allErrs, field.Required(p.Child("mountPath"), ""))
		}
		if points.Has(m.MountPath) {
			allErrs = append(allErrs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		points.Insert(m.MountPath)
		if m.SubPath != "" {
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPath, fldPath.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			allErrs = append(allErrs, validateLocalDescendingPath(m.SubPathExpr, fldPath.Child("subPathExpr"))...)
		}
		if m.MountPropagation != nil {
			allErrs = append(allErrs, validateEnum(*m.MountPropagation, fldPath.Child("mountPropagation"),
				corev1.MountPropagationBidirectional, corev1.MountPropagationHostToContainer, corev1.MountPropagationNone)...)
		}
	}
	return allErrs
}

func validateProbes(c *corev1.Container, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if pr := c.LivenessProbe; pr != nil {
		allErrs = append(allErrs, validateProbe(pr, p.Child("livenessProbe"))...)
		if pr.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(p.Child("livenessProbe", "successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	if pr := c.ReadinessProbe; pr != nil {
		allErrs = append(allErrs, validateProbe(pr, p.Child("readinessProbe"))...)
		if pr.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	if pr := c.StartupProbe; pr != nil {
		allErrs = append(allErrs, validateProbe(pr, p.Child("startupProbe"))...)
		if pr.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(p.Child("startupProbe", "successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
	}
	return allErrs
}

func validateProbe(pr *corev1.Probe, p *field.Path) field.ErrorList {
	h := &pr.ProbeHandler
	allErrs := validateHandler(h.Exec, h.HTTPGet, h.TCPSocket, h.GRPC, nil, nil, p)
	allErrs = append(allErrs, validateNonnegative(int64(pr.InitialDelaySeconds), p.Child("initialDelaySeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(pr.TimeoutSeconds), p.Child("timeoutSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(pr.PeriodSeconds), p.Child("periodSeconds"))...)
	allErrs = append(allErrs, validateNonnegative(int64(pr.SuccessThreshold), p.Child("successThreshold"))...)
	allErrs = append(allErrs, validateNonnegative(int64(pr.FailureThreshold), p.Child("failureThreshold"))...)
	if pr.TerminationGracePeriodSeconds != nil && *pr.TerminationGracePeriodSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *pr.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	return allErrs
}

func validateLifecycle(l *corev1.Lifecycle, gracePeriod *int64, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if h := l.PostStart; h != nil {
		allErrs = append(allErrs, validateHandler(h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep, gracePeriod, p.Child("postStart"))...)
	}
	if h := l.PreStop; h != nil {
		allErrs = append(allErrs, validateHandler(h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep, gracePeriod, p.Child("preStop"))...)
	}
	return allErrs
}

// validateHandler checks that exactly one action is set and that it is
// well formed; probes and lifecycle hooks allow different actions.
func validateHandler(exec *corev1.ExecAction, get *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction, gracePeriod *int64, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	one := func(name string) bool {
		if n > 0 {
			allErrs = append(allErrs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return false
		}
		n++
		return true
	}
	if exec != nil && one("exec") && len(exec.Command) == 0 {
		allErrs = append(allErrs, field.Required(p.Child("exec", "command"), ""))
	}
	if get != nil && one("httpGet") {
		gp := p.Child("httpGet")
		if get.Path == "" {
			allErrs = append(allErrs, field.Required(gp.Child("path"), ""))
		}
		allErrs = append(allErrs, validatePortNumOrName(get.Port, gp.Child("port"))...)
		if get.Scheme != corev1.URISchemeHTTP && get.Scheme != corev1.URISchemeHTTPS {
			allErrs = append(allErrs, field.NotSupported(gp.Child("scheme"), get.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
		for _, hdr := range get.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
				allErrs = append(allErrs, field.Invalid(gp.Child("httpHeaders"), hdr.Name, msg))
			}
		}
	}
	if tcp != nil && one("tcpSocket") {
		allErrs = append(allErrs, validatePortNumOrName(tcp.Port, p.Child("tcpSocket", "port"))...)
	}
	if grpc != nil && one("grpc") {
		allErrs = append(allErrs, validatePortNum(grpc.Port, p.Child("grpc", "port"))...)
	}
	if sleep != nil && one("sleep") && gracePeriod != nil && (sleep.Seconds < 0 || sleep.Seconds > *gracePeriod) {
		allErrs = append(allErrs, field.Invalid(p.Child("sleep"), sleep.Seconds,
			fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *gracePeriod)))
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(p, "must specify a handler type"))
	}
	return allErrs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, port.StrVal, msg))
		}
		return allErrs
	}
	for _, msg := range validation.IsValidPortNum(port.IntValue()) {
		allErrs = append(allErrs, field.Invalid(fldPath, port.IntValue(), msg))
	}
	return allErrs
}

func validateResizePolicy(policies []corev1.ContainerResizePolicy, fldPath *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[corev1.ResourceName]()
	for i, p := range policies {
		if seen.Has(p.ResourceName) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), p.ResourceName))
		}
		seen.Insert(p.ResourceName)
		allErrs = append(allErrs, validateEnum(p.ResourceName, fldPath, corev1.ResourceCPU, corev1.ResourceMemory)...)
		allErrs = append(allErrs, validateEnum(p.RestartPolicy, fldPath, corev1.NotRequired, corev1.RestartContainer)...)
		if podRestart == corev1.RestartPolicyNever && p.RestartPolicy != corev1.NotRequired {
			allErrs = append(allErrs, field.Invalid(fldPath, p.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
	}
	return allErrs
}

func validateContainerSecurityContext(sc *corev1.SecurityContext, fldPath *field.Path) field.ErrorList {
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateID(sc.RunAsUser, fldPath.Child("runAsUser"))...)
	allErrs = append(allErrs, validateID(sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				if c == "SYS_ADMIN" || c == "CAP_SYS_ADMIN" {
					allErrs = append(allErrs, field.Invalid(fldPath, sc, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
				}
			}
		}
	}
	if sc.ProcMount != nil {
		allErrs = append(allErrs, validateEnum(*sc.ProcMount, fldPath.Child("procMount"), corev1.DefaultProcMount, corev1.UnmaskedProcMount)...)
	}
	return allErrs
}
