package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The restricted checks: current hardening practice, at the cost of
// changes to most images' pod specs (non-root, no privilege escalation,
// seccomp, all capabilities dropped, only inert volume types).

func psRestrictedChecks() []psCheck {
	return []psCheck{
		{id: "allowPrivilegeEscalation", level: psRestricted, revisions: []psRevision{
			{minor: 8, fn: psNoPrivilegeEscalation},
			// From v1.25 a pod declaring spec.os.name=windows is exempt from
			// the Linux-only fields (the API refuses them on Windows pods).
			{minor: 25, fn: psUnlessWindows(psNoPrivilegeEscalation)},
		}},
		{id: "capabilities_restricted", level: psRestricted, revisions: []psRevision{
			{minor: 22, fn: psCapabilitiesRestricted, overrides: []string{"capabilities_baseline"}},
			{minor: 25, fn: psUnlessWindows(psCapabilitiesRestricted), overrides: []string{"capabilities_baseline"}},
		}},
		{id: "procMount_restricted", level: psRestricted, revisions: []psRevision{
			// v1.35 relaxed baseline procMount for user-namespace pods;
			// restricted keeps the unconditional rule.
			{minor: 35, fn: psProcMount, overrides: []string{"procMount"}},
		}},
		{id: "restrictedVolumes", level: psRestricted, revisions: []psRevision{
			{minor: 0, fn: psRestrictedVolumes, overrides: []string{"hostPathVolumes"}},
		}},
		{id: "runAsNonRoot", level: psRestricted, revisions: []psRevision{
			{minor: 0, fn: psRunAsNonRoot},
			// v1.35: root in a user namespace is not root on the node.
			{minor: 35, fn: psUnlessUserNamespace(psRunAsNonRoot)},
		}},
		{id: "runAsUser", level: psRestricted, revisions: []psRevision{
			{minor: 23, fn: psRunAsUser},
			{minor: 35, fn: psUnlessUserNamespace(psRunAsUser)},
		}},
		{id: "seccompProfile_restricted", level: psRestricted, revisions: []psRevision{
			{minor: 19, fn: psSeccompRestricted, overrides: []string{"seccompProfile_baseline"}},
			{minor: 25, fn: psUnlessWindows(psSeccompRestricted), overrides: []string{"seccompProfile_baseline"}},
		}},
	}
}

func psUnlessWindows(fn psCheckFn) psCheckFn {
	return func(meta *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
		if spec.OS != nil && spec.OS.Name == corev1.Windows {
			return nil
		}
		return fn(meta, spec)
	}
}

func psNoPrivilegeEscalation(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	psEachContainer(spec, func(c *corev1.Container) {
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad = append(bad, c.Name)
		}
	})
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"allowPrivilegeEscalation != false",
		psNamed("container", "containers", bad) + " must set securityContext.allowPrivilegeEscalation=false"}
}

// psCapabilitiesRestricted requires every container to drop ALL and to add
// back nothing but NET_BIND_SERVICE.
func psCapabilitiesRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var noDropAll, adding []string
	added := map[string]bool{}
	psEachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			noDropAll = append(noDropAll, c.Name)
			return
		}
		caps := c.SecurityContext.Capabilities
		dropsAll := false
		for _, d := range caps.Drop {
			if d == "ALL" {
				dropsAll = true
			}
		}
		if !dropsAll {
			noDropAll = append(noDropAll, c.Name)
		}
		bad := false
		for _, a := range caps.Add {
			if a != "NET_BIND_SERVICE" {
				bad = true
				added[string(a)] = true
			}
		}
		if bad {
			adding = append(adding, c.Name)
		}
	})
	var details []string
	if len(noDropAll) > 0 {
		details = append(details, psNamed("container", "containers", noDropAll)+` must set securityContext.capabilities.drop=["ALL"]`)
	}
	if len(adding) > 0 {
		details = append(details, fmt.Sprintf("%s must not include %s in securityContext.capabilities.add",
			psNamed("container", "containers", adding), psQuote(psSorted(added))))
	}
	if len(details) == 0 {
		return nil
	}
	return &psViolation{"unrestricted capabilities", strings.Join(details, "; ")}
}

// psVolumeType names a volume's source as the API spells it, for the
// sources restricted forbids.
func psVolumeType(v *corev1.Volume) (string, bool) {
	switch s := v.VolumeSource; {
	case s.ConfigMap != nil, s.CSI != nil, s.DownwardAPI != nil, s.EmptyDir != nil, s.Ephemeral != nil,
		s.Image != nil, s.PersistentVolumeClaim != nil, s.Projected != nil, s.Secret != nil:
		return "", true
	case s.HostPath != nil:
		return "hostPath", false
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk", false
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore", false
	case s.GitRepo != nil:
		return "gitRepo", false
	case s.NFS != nil:
		return "nfs", false
	case s.ISCSI != nil:
		return "iscsi", false
	case s.Glusterfs != nil:
		return "glusterfs", false
	case s.RBD != nil:
		return "rbd", false
	case s.FlexVolume != nil:
		return "flexVolume", false
	case s.Cinder != nil:
		return "cinder", false
	case s.CephFS != nil:
		return "cephfs", false
	case s.Flocker != nil:
		return "flocker", false
	case s.FC != nil:
		return "fc", false
	case s.AzureFile != nil:
		return "azureFile", false
	case s.VsphereVolume != nil:
		return "vsphereVolume", false
	case s.Quobyte != nil:
		return "quobyte", false
	case s.AzureDisk != nil:
		return "azureDisk", false
	case s.PhotonPersistentDisk != nil:
		return "photonPersistentDisk", false
	case s.PortworxVolume != nil:
		return "portworxVolume", false
	case s.ScaleIO != nil:
		return "scaleIO", false
	case s.StorageOS != nil:
		return "storageos", false
	}
	return "unknown", false
}

// psRestrictedVolumes allows only volumes whose contents the cluster
// controls: config, secrets, projections, scratch space and claims.
func psRestrictedVolumes(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	var bad []string
	types := map[string]bool{}
	for i := range spec.Volumes {
		if t, ok := psVolumeType(&spec.Volumes[i]); !ok {
			bad = append(bad, spec.Volumes[i].Name)
			types[t] = true
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &psViolation{"restricted volume types", fmt.Sprintf("%s %s %s", psNamed("volume", "volumes", bad),
		psPlural(len(bad), "uses", "use"), psNamed("restricted volume type", "restricted volume types", psSorted(types)))}
}

// psRunAsNonRoot needs runAsNonRoot=true on the pod, or on every container
// the pod does not cover; an explicit false anywhere is named first.
func psRunAsNonRoot(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	podFalse, podTrue := false, false
	if sc := spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		podTrue, podFalse = *sc.RunAsNonRoot, !*sc.RunAsNonRoot
	}
	var explicit, implicit []string
	psEachContainer(spec, func(c *corev1.Container) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.RunAsNonRoot != nil:
			if !*sc.RunAsNonRoot {
				explicit = append(explicit, c.Name)
			}
		case !podTrue:
			implicit = append(implicit, c.Name)
		}
	})
	if setters := psSetters(podFalse, explicit); len(setters) > 0 {
		return &psViolation{"runAsNonRoot != true", strings.Join(setters, " and ") + " must not set securityContext.runAsNonRoot=false"}
	}
	if len(implicit) > 0 {
		return &psViolation{"runAsNonRoot != true", "pod or " + psNamed("container", "containers", implicit) + " must set securityContext.runAsNonRoot=true"}
	}
	return nil
}

func psRunAsUser(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	root := func(sc *int64) bool { return sc != nil && *sc == 0 }
	var containers []string
	psEachContainer(spec, func(c *corev1.Container) {
		if c.SecurityContext != nil && root(c.SecurityContext.RunAsUser) {
			containers = append(containers, c.Name)
		}
	})
	setters := psSetters(spec.SecurityContext != nil && root(spec.SecurityContext.RunAsUser), containers)
	if len(setters) == 0 {
		return nil
	}
	return &psViolation{"runAsUser=0", strings.Join(setters, " and ") + " must not set runAsUser=0"}
}

// psSeccompRestricted needs a RuntimeDefault or Localhost profile on the
// pod, or on every container the pod does not cover.
func psSeccompRestricted(_ *metav1.ObjectMeta, spec *corev1.PodSpec) *psViolation {
	if v := psSeccompExplicit(spec); v != nil {
		return v
	}
	podSet := spec.SecurityContext != nil && spec.SecurityContext.SeccompProfile != nil
	var unset []string
	psEachContainer(spec, func(c *corev1.Container) {
		if (c.SecurityContext == nil || c.SecurityContext.SeccompProfile == nil) && !podSet {
			unset = append(unset, c.Name)
		}
	})
	if len(unset) == 0 {
		return nil
	}
	return &psViolation{"seccompProfile", "pod or " + psNamed("container", "containers", unset) +
		` must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`}
}
