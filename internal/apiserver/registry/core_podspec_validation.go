package registry

import (
	"fmt"
	"math"
	"path"
	"reflect"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod spec validation, following upstream's ValidatePodSpec in the order it
// reports errors. isPod is upstream's ResourceIsPod: a few rules are
// stricter for a Pod than for a template that is defaulted again when its
// pods are created.

func validatePodSpec(spec *corev1.PodSpec, fldPath *field.Path, isPod bool) field.ErrorList {
	var allErrs field.ErrorList

	if spec.TerminationGracePeriodSeconds == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("terminationGracePeriodSeconds"), ""))
	}
	gracePeriod := spec.TerminationGracePeriodSeconds

	vols, vErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	allErrs = append(allErrs, vErrs...)
	allErrs = append(allErrs, validateContainers(spec.Containers, vols, gracePeriod, fldPath.Child("containers"), spec.RestartPolicy)...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, spec.Containers, vols, gracePeriod, fldPath.Child("initContainers"), spec.RestartPolicy)...)
	allErrs = append(allErrs, validateEphemeralContainers(spec, vols, fldPath.Child("ephemeralContainers"))...)
	allErrs = append(allErrs, validateHostNetworkPorts(spec, fldPath, isPod)...)

	allErrs = append(allErrs, validateEnum(spec.RestartPolicy, fldPath.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, fldPath.Child("dnsPolicy"),
		corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	allErrs = append(allErrs, validatePodSecurityContext(spec, fldPath.Child("securityContext"))...)
	for i, s := range spec.ImagePullSecrets {
		if s != (corev1.LocalObjectReference{Name: s.Name}) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("imagePullSecrets").Index(i), s, "only name may be set"))
		}
	}
	allErrs = append(allErrs, validateAffinity(spec.Affinity, fldPath.Child("affinity"))...)
	allErrs = append(allErrs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fldPath.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		allErrs = append(allErrs, validateQualifiedName(string(g.ConditionType), fldPath.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	seenGates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		p := fldPath.Child("schedulingGates").Index(i)
		allErrs = append(allErrs, validateQualifiedName(g.Name, p)...)
		if seenGates.Has(g.Name) {
			allErrs = append(allErrs, field.Duplicate(p, g.Name))
		}
		seenGates.Insert(g.Name)
	}
	allErrs = append(allErrs, validateTopologySpreadConstraints(spec.TopologySpreadConstraints, fldPath.Child("topologySpreadConstraints"))...)

	if spec.ServiceAccountName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.ValidateServiceAccountName, spec.ServiceAccountName, fldPath.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.NodeName, fldPath.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		allErrs = append(allErrs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	}
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	for i, ha := range spec.HostAliases {
		p := fldPath.Child("hostAliases").Index(i)
		allErrs = append(allErrs, validation.IsValidIP(p.Child("ip"), ha.IP)...)
		for j, h := range ha.Hostnames {
			allErrs = append(allErrs, validateDNS1123Subdomain(h, p.Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, spec.PriorityClassName, fldPath.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		allErrs = append(allErrs, nameErrors(apivalidation.NameIsDNSSubdomain, *spec.RuntimeClassName, fldPath.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		allErrs = append(allErrs, validateEnum(*spec.PreemptionPolicy, fldPath.Child("preemptionPolicy"),
			corev1.PreemptLowerPriority, corev1.PreemptNever)...)
	}
	if spec.Resources != nil {
		allErrs = append(allErrs, validatePodLevelResources(spec.Resources, fldPath.Child("resources"))...)
	}
	if spec.Overhead != nil {
		allErrs = append(allErrs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: spec.Overhead}, fldPath.Child("overhead"))...)
	}
	if spec.OS != nil && spec.OS.Name != corev1.Linux && spec.OS.Name != corev1.Windows {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("os").Child("name"), spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
	}
	return allErrs
}

// validateEnum reports Required for an empty value and NotSupported for an
// unknown one, listing the values in the order upstream lists them.
func validateEnum[T ~string](value T, fldPath *field.Path, valid ...T) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	for _, v := range valid {
		if v == value {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, value, valid)}
}

func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	vols := make(map[string]corev1.VolumeSource, len(volumes))
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		el := validateVolumeSource(&vol.VolumeSource, idxPath)
		if vol.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(vol.Name, namePath)...)
		}
		if names.Has(vol.Name) {
			el = append(el, field.Duplicate(namePath, vol.Name))
		}
		if len(el) == 0 {
			names.Insert(vol.Name)
			vols[vol.Name] = vol.VolumeSource
		} else {
			allErrs = append(allErrs, el...)
		}
	}
	return vols, allErrs
}

// volumeSourceCount counts the volume types set, whatever types the API
// grows; a volume must have exactly one.
func volumeSourceCount(src *corev1.VolumeSource) int {
	n := 0
	v := reflect.ValueOf(src).Elem()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	v := reflect.ValueOf(src).Elem()
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
			if n > 1 {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
				allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
			}
		}
	}
	if n == 0 {
		return append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	if n > 1 {
		return allErrs
	}
	switch {
	case src.EmptyDir != nil:
		if src.EmptyDir.SizeLimit != nil && src.EmptyDir.SizeLimit.Sign() < 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("emptyDir").Child("sizeLimit"), "SizeLimit field must be a valid resource quantity"))
		}
	case src.HostPath != nil:
		p := fldPath.Child("hostPath")
		if src.HostPath.Path == "" {
			allErrs = append(allErrs, field.Required(p.Child("path"), ""))
		} else {
			allErrs = append(allErrs, validatePathNoBacksteps(src.HostPath.Path, p.Child("path"))...)
		}
		if src.HostPath.Type != nil {
			allErrs = append(allErrs, validateHostPathType(*src.HostPath.Type, p.Child("type"))...)
		}
	case src.Secret != nil:
		p := fldPath.Child("secret")
		if src.Secret.SecretName == "" {
			allErrs = append(allErrs, field.Required(p.Child("secretName"), ""))
		}
		allErrs = append(allErrs, validateFileMode(src.Secret.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.Secret.Items {
			allErrs = append(allErrs, validateKeyToPath(&src.Secret.Items[j], p.Child("items").Index(j))...)
		}
	case src.ConfigMap != nil:
		p := fldPath.Child("configMap")
		if src.ConfigMap.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		}
		allErrs = append(allErrs, validateFileMode(src.ConfigMap.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.ConfigMap.Items {
			allErrs = append(allErrs, validateKeyToPath(&src.ConfigMap.Items[j], p.Child("items").Index(j))...)
		}
	case src.PersistentVolumeClaim != nil:
		if strings.TrimSpace(src.PersistentVolumeClaim.ClaimName) == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("persistentVolumeClaim").Child("claimName"), ""))
		}
	case src.DownwardAPI != nil:
		p := fldPath.Child("downwardAPI")
		allErrs = append(allErrs, validateFileMode(src.DownwardAPI.DefaultMode, p.Child("defaultMode"))...)
		for j := range src.DownwardAPI.Items {
			allErrs = append(allErrs, validateDownwardAPIFile(&src.DownwardAPI.Items[j], p.Child("items").Index(j))...)
		}
	case src.Projected != nil:
		allErrs = append(allErrs, validateProjected(src.Projected, fldPath.Child("projected"))...)
	case src.NFS != nil:
		p := fldPath.Child("nfs")
		if src.NFS.Server == "" {
			allErrs = append(allErrs, field.Required(p.Child("server"), ""))
		}
		if src.NFS.Path == "" {
			allErrs = append(allErrs, field.Required(p.Child("path"), ""))
		} else if !path.IsAbs(src.NFS.Path) {
			allErrs = append(allErrs, field.Invalid(p.Child("path"), src.NFS.Path, "must be an absolute path"))
		}
	case src.CSI != nil:
		if src.CSI.Driver == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("csi").Child("driver"), ""))
		}
	case src.Ephemeral != nil:
		if src.Ephemeral.VolumeClaimTemplate == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("ephemeral").Child("volumeClaimTemplate"), ""))
		}
	case src.Image != nil:
		p := fldPath.Child("image")
		if src.Image.Reference == "" {
			allErrs = append(allErrs, field.Required(p.Child("reference"), ""))
		}
		allErrs = append(allErrs, validateEnum(src.Image.PullPolicy, p.Child("pullPolicy"),
			corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)...)
	}
	return allErrs
}

func validateHostPathType(t corev1.HostPathType, fldPath *field.Path) field.ErrorList {
	// Sorted, as upstream lists them.
	valid := []corev1.HostPathType{corev1.HostPathUnset, corev1.HostPathBlockDev, corev1.HostPathCharDev, corev1.HostPathDirectory,
		corev1.HostPathDirectoryOrCreate, corev1.HostPathFile, corev1.HostPathFileOrCreate, corev1.HostPathSocket}
	for _, v := range valid {
		if t == v {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(fldPath, t, valid)}
}

func validateProjected(p *corev1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateFileMode(p.DefaultMode, fldPath.Child("defaultMode"))...)
	paths := sets.New[string]()
	for i, src := range p.Sources {
		sp := fldPath.Child("sources").Index(i)
		n := 0
		if src.Secret != nil {
			n++
			for j := range src.Secret.Items {
				allErrs = append(allErrs, validateKeyToPath(&src.Secret.Items[j], sp.Child("secret", "items").Index(j))...)
				allErrs = append(allErrs, uniqueProjectedPath(paths, src.Secret.Items[j].Path, sp.Child("secret", "items").Index(j).Child("path"))...)
			}
		}
		if src.ConfigMap != nil {
			n++
			for j := range src.ConfigMap.Items {
				allErrs = append(allErrs, validateKeyToPath(&src.ConfigMap.Items[j], sp.Child("configMap", "items").Index(j))...)
				allErrs = append(allErrs, uniqueProjectedPath(paths, src.ConfigMap.Items[j].Path, sp.Child("configMap", "items").Index(j).Child("path"))...)
			}
		}
		if src.DownwardAPI != nil {
			n++
			for j := range src.DownwardAPI.Items {
				allErrs = append(allErrs, validateDownwardAPIFile(&src.DownwardAPI.Items[j], sp.Child("downwardAPI", "items").Index(j))...)
				allErrs = append(allErrs, uniqueProjectedPath(paths, src.DownwardAPI.Items[j].Path, sp.Child("downwardAPI", "items").Index(j).Child("path"))...)
			}
		}
		if sat := src.ServiceAccountToken; sat != nil {
			n++
			tp := sp.Child("serviceAccountToken")
			if sat.ExpirationSeconds != nil {
				if *sat.ExpirationSeconds < 600 {
					allErrs = append(allErrs, field.Invalid(tp.Child("expirationSeconds"), *sat.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
				} else if *sat.ExpirationSeconds > 1<<32 {
					allErrs = append(allErrs, field.Invalid(tp.Child("expirationSeconds"), *sat.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
				}
			}
			if sat.Path == "" {
				allErrs = append(allErrs, field.Required(tp.Child("path"), ""))
			}
			allErrs = append(allErrs, uniqueProjectedPath(paths, sat.Path, tp.Child("path"))...)
		}
		if src.ClusterTrustBundle != nil {
			n++
		}
		if src.PodCertificate != nil {
			n++
		}
		if n != 1 {
			allErrs = append(allErrs, field.Forbidden(sp, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

func uniqueProjectedPath(paths sets.Set[string], p string, fldPath *field.Path) field.ErrorList {
	if p == "" {
		return nil
	}
	if paths.Has(p) {
		return field.ErrorList{field.Invalid(fldPath, p, "conflicting duplicate paths")}
	}
	paths.Insert(p)
	return nil
}

func validateFileMode(mode *int32, fldPath *field.Path) field.ErrorList {
	if mode != nil && (*mode > 0o777 || *mode < 0) {
		return field.ErrorList{field.Invalid(fldPath, *mode, fileModeErrorMsg)}
	}
	return nil
}

func validateKeyToPath(kp *corev1.KeyToPath, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if kp.Key == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("key"), ""))
	}
	if kp.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	return append(allErrs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
}

func validateDownwardAPIFile(f *corev1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if f.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("path"), ""))
	}
	allErrs = append(allErrs, validateLocalNonReservedPath(f.Path, fldPath.Child("path"))...)
	switch {
	case f.FieldRef != nil && f.ResourceFieldRef != nil:
		allErrs = append(allErrs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
	case f.FieldRef != nil:
		allErrs = append(allErrs, validateObjectFieldSelector(f.FieldRef, volumeDownwardAPIFieldPaths, fldPath.Child("fieldRef"))...)
	case f.ResourceFieldRef != nil:
		allErrs = append(allErrs, validateResourceFieldSelector(f.ResourceFieldRef, fldPath.Child("resourceFieldRef"), true)...)
	default:
		allErrs = append(allErrs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(allErrs, validateFileMode(f.Mode, fldPath.Child("mode"))...)
}

func validatePathNoBacksteps(p string, fldPath *field.Path) field.ErrorList {
	for _, part := range strings.Split(strings.ReplaceAll(p, `\`, "/"), "/") {
		if part == ".." {
			return field.ErrorList{field.Invalid(fldPath, p, "must not contain '..'")}
		}
	}
	return nil
}

func validateLocalDescendingPath(p string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if path.IsAbs(p) || strings.HasPrefix(p, `\`) {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must be a relative path"))
	}
	return append(allErrs, validatePathNoBacksteps(p, fldPath)...)
}

func validateLocalNonReservedPath(p string, fldPath *field.Path) field.ErrorList {
	allErrs := validateLocalDescendingPath(p, fldPath)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		allErrs = append(allErrs, field.Invalid(fldPath, p, "must not start with '..'"))
	}
	return allErrs
}

func validateHostNetworkPorts(spec *corev1.PodSpec, fldPath *field.Path, isPod bool) field.ErrorList {
	if !spec.HostNetwork {
		return nil
	}
	var allErrs field.ErrorList
	for i, c := range spec.Containers {
		for j, port := range c.Ports {
			// A template may leave hostPort unset: pod defaulting fills it in.
			if (isPod || port.HostPort != 0) && port.HostPort != port.ContainerPort {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"),
					port.HostPort, "must match `containerPort` when `hostNetwork` is true"))
			}
		}
	}
	return allErrs
}

func validatePodSecurityContext(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	sc := spec.SecurityContext
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateID(sc.RunAsUser, fldPath.Child("runAsUser"))...)
	allErrs = append(allErrs, validateID(sc.RunAsGroup, fldPath.Child("runAsGroup"))...)
	allErrs = append(allErrs, validateID(sc.FSGroup, fldPath.Child("fsGroup"))...)
	for i, g := range sc.SupplementalGroups {
		g := g
		allErrs = append(allErrs, validateID(&g, fldPath.Child("supplementalGroups").Index(i))...)
	}
	allErrs = append(allErrs, validateSysctls(spec, fldPath.Child("sysctls"))...)
	if sc.FSGroupChangePolicy != nil {
		allErrs = append(allErrs, validateEnum(*sc.FSGroupChangePolicy, fldPath.Child("fsGroupChangePolicy"),
			corev1.FSGroupChangeAlways, corev1.FSGroupChangeOnRootMismatch)...)
	}
	return allErrs
}

// sysctlName is upstream's sysctl name: segments of lower-case letters,
// digits, '-' and '_' (starting and ending alphanumeric), joined by '.' or
// '/'. The error message prints the regexp, anchors included, as upstream.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

const sysctlMaxLength = 253

// validateSysctls checks the pod's sysctl names, their uniqueness, and
// that a pod sharing the host's network or IPC namespace sets none of that
// namespace's sysctls (they would change the host).
func validateSysctls(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	if spec.SecurityContext == nil {
		return nil
	}
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, s := range spec.SecurityContext.Sysctls {
		p := fldPath.Index(i).Child("name")
		switch {
		case s.Name == "":
			allErrs = append(allErrs, field.Required(p, ""))
		case len(s.Name) > sysctlMaxLength || !sysctlName.MatchString(s.Name):
			allErrs = append(allErrs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most %d characters and match regex %s", sysctlMaxLength, sysctlName)))
		case seen.Has(s.Name):
			allErrs = append(allErrs, field.Duplicate(p, s.Name))
		}
		seen.Insert(s.Name)
		switch ns := sysctlNamespace(s.Name); {
		case spec.HostNetwork && ns == "net":
			allErrs = append(allErrs, field.Invalid(p, s.Name, "may not be specified when 'hostNetwork' is true"))
		case spec.HostIPC && ns == "ipc":
			allErrs = append(allErrs, field.Invalid(p, s.Name, "may not be specified when 'hostIPC' is true"))
		}
	}
	return allErrs
}

// sysctlNamespace names the kernel namespace a sysctl belongs to ("net",
// "ipc", "uts"), or "" for a node-wide one.
func sysctlNamespace(name string) string {
	name = normalizeSysctl(name)
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.msgmax",
		"kernel.msgmnb", "kernel.msgmni", "kernel.shm_rmid_forced":
		return "ipc"
	case "kernel.hostname", "kernel.domainname":
		return "uts"
	}
	switch {
	case strings.HasPrefix(name, "fs.mqueue."):
		return "ipc"
	case strings.HasPrefix(name, "net."):
		return "net"
	}
	return ""
}

// normalizeSysctl turns the slash form (net/ipv4/ip_forward) into the dot
// form; in the slash form a dot is part of a segment (an interface name)
// and becomes a slash, as sysctl(8) reads it.
func normalizeSysctl(name string) string {
	i := strings.IndexAny(name, "./")
	if i < 0 || name[i] == '.' {
		return name
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, name)
}

func validateID(id *int64, fldPath *field.Path) field.ErrorList {
	if id == nil {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidUserID(*id) {
		allErrs = append(allErrs, field.Invalid(fldPath, *id, msg))
	}
	return allErrs
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(t.Key, idxPath.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if errs := validation.IsValidLabelValue(t.Value); len(errs) != 0 {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, strings.Join(errs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			allErrs = append(allErrs, validateTaintEffect(t.Effect, idxPath.Child("effect"))...)
		}
	}
	return allErrs
}

func validateTaintEffect(effect corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	return validateEnum(effect, fldPath, corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)
}

func validatePodDNSConfig(cfg *corev1.PodDNSConfig, policy corev1.DNSPolicy, fldPath *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if cfg == nil {
			return field.ErrorList{field.Required(fldPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(cfg.Nameservers) == 0 {
			return field.ErrorList{field.Required(fldPath.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if cfg == nil {
		return nil
	}
	var allErrs field.ErrorList
	if len(cfg.Nameservers) > 3 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nameservers"), cfg.Nameservers, "must not have more than 3 nameservers"))
	}
	for i, ns := range cfg.Nameservers {
		allErrs = append(allErrs, validation.IsValidIP(fldPath.Child("nameservers").Index(i), ns)...)
	}
	if len(cfg.Searches) > 32 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, "must not have more than 32 search paths"))
	}
	if len(strings.Join(cfg.Searches, " ")) > 2048 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("searches"), cfg.Searches, "must not have more than 2048 characters (including spaces) in the search list"))
	}
	for i, s := range cfg.Searches {
		if s == "." {
			continue
		}
		s = strings.TrimSuffix(s, ".")
		for _, msg := range validation.IsDNS1123SubdomainWithUnderscore(s) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("searches").Index(i), s, msg))
		}
	}
	for i, o := range cfg.Options {
		if o.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("options").Index(i), "must not be empty"))
		}
	}
	return allErrs
}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var allErrs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			allErrs = append(allErrs, validateNodeSelector(req, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			if term.Weight <= 0 || term.Weight > 100 {
				allErrs = append(allErrs, field.Invalid(tp.Child("weight"), term.Weight, "must be in the range 1-100"))
			}
			allErrs = append(allErrs, validateNodeSelectorTerm(term.Preference, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		allErrs = append(allErrs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return allErrs
}

func validateNodeSelector(ns *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(ns.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var allErrs field.ErrorList
	for i, t := range ns.NodeSelectorTerms {
		allErrs = append(allErrs, validateNodeSelectorTerm(t, termsPath.Index(i))...)
	}
	return allErrs
}

func validateNodeSelectorTerm(t corev1.NodeSelectorTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, r := range t.MatchExpressions {
		allErrs = append(allErrs, validateNodeSelectorRequirement(r, fldPath.Child("matchExpressions").Index(i), true)...)
	}
	for i, r := range t.MatchFields {
		allErrs = append(allErrs, validateNodeSelectorRequirement(r, fldPath.Child("matchFields").Index(i), false)...)
	}
	return allErrs
}

func validateNodeSelectorRequirement(r corev1.NodeSelectorRequirement, fldPath *field.Path, isLabel bool) field.ErrorList {
	var allErrs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			allErrs = append(allErrs, field.Required(fldPath.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	if isLabel {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(r.Key, fldPath.Child("key"))...)
	} else if r.Key != "metadata.name" {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("key"), r.Key, []string{"metadata.name"}))
	}
	return allErrs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range required {
		allErrs = append(allErrs, validatePodAffinityTerm(t, fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, w := range preferred {
		p := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if w.Weight <= 0 || w.Weight > 100 {
			allErrs = append(allErrs, field.Invalid(p.Child("weight"), w.Weight, "must be in the range 1-100"))
		}
		allErrs = append(allErrs, validatePodAffinityTerm(w.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return allErrs
}

func validatePodAffinityTerm(t corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	opts := metav1validation.LabelSelectorValidationOptions{}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(t.LabelSelector, opts, fldPath.Child("labelSelector"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(t.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	for _, ns := range t.Namespaces {
		allErrs = append(allErrs, nameErrors(apivalidation.ValidateNamespaceName, ns, fldPath.Child("namespace"))...)
	}
	if t.TopologyKey == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelName(t.TopologyKey, fldPath.Child("topologyKey"))...)
	}
	return allErrs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range constraints {
		p := fldPath.Index(i)
		if c.MaxSkew <= 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, isNotPositiveMsg))
		}
		if c.TopologyKey == "" {
			allErrs = append(allErrs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			allErrs = append(allErrs, metav1validation.ValidateLabelName(c.TopologyKey, p.Child("topologyKey"))...)
		}
		allErrs = append(allErrs, validateEnum(c.WhenUnsatisfiable, p.Child("whenUnsatisfiable"),
			corev1.DoNotSchedule, corev1.ScheduleAnyway)...)
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be greater than 0"))
			} else if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				allErrs = append(allErrs, field.Invalid(p.Child("minDomains"), *c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		pair := fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)
		if seen.Has(pair) {
			allErrs = append(allErrs, field.Duplicate(p, pair))
		}
		seen.Insert(pair)
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
	}
	return allErrs
}
