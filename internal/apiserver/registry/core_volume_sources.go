package registry

import (
	"net"
	"path"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The storage backend of a PersistentVolume: its defaults and upstream's
// per-backend checks. Most backends are in-tree plugins long since
// replaced by CSI, but their objects still exist and are still validated,
// so a manifest rejected upstream is rejected here with the same words.

// pvDefaultSource fills the per-backend defaults upstream declares on the
// source types.
func pvDefaultSource(src *corev1.PersistentVolumeSource) {
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = new(corev1.HostPathUnset)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if rbd := src.RBD; rbd != nil {
		pvSetIfEmpty(&rbd.RBDPool, "rbd")
		pvSetIfEmpty(&rbd.RadosUser, "admin")
		pvSetIfEmpty(&rbd.Keyring, "/etc/ceph/keyring")
	}
	if az := src.AzureDisk; az != nil {
		if az.CachingMode == nil {
			az.CachingMode = new(corev1.AzureDataDiskCachingReadWrite)
		}
		if az.Kind == nil {
			az.Kind = new(corev1.AzureSharedBlobDisk)
		}
		if az.FSType == nil {
			az.FSType = new("ext4")
		}
		if az.ReadOnly == nil {
			az.ReadOnly = new(false)
		}
	}
	if sio := src.ScaleIO; sio != nil {
		pvSetIfEmpty(&sio.StorageMode, "ThinProvisioned")
		pvSetIfEmpty(&sio.FSType, "xfs")
	}
}

func pvSetIfEmpty(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// pvSource is one backend in the order upstream checks them; forbid is the
// name used when a second backend is set (a few differ from the path of
// the backend's own errors, as upstream).
type pvSource struct {
	forbid   string
	set      bool
	validate func() field.ErrorList
}

// pvValidateSource checks that exactly one backend is set and validates
// it. A flexVolume never counts as "more than one", as upstream.
func pvValidateSource(s *corev1.PersistentVolumeSource, pvName string, hasNodeAffinity bool, fldPath *field.Path) field.ErrorList {
	req := func(p *field.Path, v string) field.ErrorList {
		if v == "" {
			return field.ErrorList{field.Required(p, "")}
		}
		return nil
	}
	sources := []pvSource{
		{"hostPath", s.HostPath != nil, func() field.ErrorList {
			p := fldPath.Child("hostPath")
			if s.HostPath.Path == "" {
				return field.ErrorList{field.Required(p.Child("path"), "")}
			}
			errs := validatePathNoBacksteps(s.HostPath.Path, p.Child("path"))
			if s.HostPath.Type != nil {
				errs = append(errs, validateHostPathType(*s.HostPath.Type, p.Child("type"))...)
			}
			return errs
		}},
		{"gcePersistentDisk", s.GCEPersistentDisk != nil, func() field.ErrorList {
			p := fldPath.Child("persistentDisk")
			return append(req(p.Child("pdName"), s.GCEPersistentDisk.PDName), pvPartition(s.GCEPersistentDisk.Partition, p.Child("partition"))...)
		}},
		{"awsElasticBlockStore", s.AWSElasticBlockStore != nil, func() field.ErrorList {
			p := fldPath.Child("awsElasticBlockStore")
			return append(req(p.Child("volumeID"), s.AWSElasticBlockStore.VolumeID), pvPartition(s.AWSElasticBlockStore.Partition, p.Child("partition"))...)
		}},
		{"glusterfs", s.Glusterfs != nil, func() field.ErrorList {
			g, p := s.Glusterfs, fldPath.Child("glusterfs")
			errs := append(req(p.Child("endpoints"), g.EndpointsName), req(p.Child("path"), g.Path)...)
			if ns := g.EndpointsNamespace; ns != nil {
				if *ns == "" {
					errs = append(errs, field.Invalid(p.Child("endpointsNamespace"), *ns, "if the endpointnamespace is set, it must be a valid namespace name"))
				} else {
					errs = append(errs, validateDNS1123Label(*ns, p.Child("endpointsNamespace"))...)
				}
			}
			return errs
		}},
		{"flocker", s.Flocker != nil, func() field.ErrorList {
			f, p := s.Flocker, fldPath.Child("flocker")
			var errs field.ErrorList
			if f.DatasetName == "" && f.DatasetUUID == "" {
				errs = append(errs, field.Required(p, "one of datasetName and datasetUUID is required"))
			}
			if f.DatasetName != "" && f.DatasetUUID != "" {
				errs = append(errs, field.Invalid(p, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
			}
			if strings.Contains(f.DatasetName, "/") {
				errs = append(errs, field.Invalid(p.Child("datasetName"), f.DatasetName, "must not contain '/'"))
			}
			return errs
		}},
		{"nfs", s.NFS != nil, func() field.ErrorList {
			p := fldPath.Child("nfs")
			errs := append(req(p.Child("server"), s.NFS.Server), req(p.Child("path"), s.NFS.Path)...)
			if !path.IsAbs(s.NFS.Path) {
				errs = append(errs, field.Invalid(p.Child("path"), s.NFS.Path, "must be an absolute path"))
			}
			return errs
		}},
		{"rbd", s.RBD != nil, func() field.ErrorList {
			p := fldPath.Child("rbd")
			var errs field.ErrorList
			if len(s.RBD.CephMonitors) == 0 {
				errs = append(errs, field.Required(p.Child("monitors"), ""))
			}
			return append(errs, req(p.Child("image"), s.RBD.RBDImage)...)
		}},
		{"quobyte", s.Quobyte != nil, func() field.ErrorList { return pvValidateQuobyte(s.Quobyte, fldPath.Child("quobyte")) }},
		{"cephFS", s.CephFS != nil, func() field.ErrorList {
			if len(s.CephFS.Monitors) == 0 {
				return field.ErrorList{field.Required(fldPath.Child("cephfs", "monitors"), "")}
			}
			return nil
		}},
		{"iscsi", s.ISCSI != nil, func() field.ErrorList { return pvValidateISCSI(s.ISCSI, pvName, fldPath.Child("iscsi")) }},
		{"cinder", s.Cinder != nil, func() field.ErrorList {
			p := fldPath.Child("cinder")
			errs := req(p.Child("volumeID"), s.Cinder.VolumeID)
			if ref := s.Cinder.SecretRef; ref != nil {
				errs = append(errs, req(p.Child("secretRef", "name"), ref.Name)...)
				errs = append(errs, req(p.Child("secretRef", "namespace"), ref.Namespace)...)
			}
			return errs
		}},
		{"fc", s.FC != nil, func() field.ErrorList { return pvValidateFC(s.FC, fldPath.Child("fc")) }},
		{"", s.FlexVolume != nil, func() field.ErrorList {
			p := fldPath.Child("flexVolume")
			errs := req(p.Child("driver"), s.FlexVolume.Driver)
			for _, k := range sortedKeys(s.FlexVolume.Options) {
				ns := k
				if before, _, ok := strings.Cut(k, "/"); ok {
					ns = before
				}
				if n := "." + strings.ToLower(ns); strings.HasSuffix(n, ".kubernetes.io") || strings.HasSuffix(n, ".k8s.io") {
					errs = append(errs, field.Invalid(p.Child("options").Key(k), k, "kubernetes.io and k8s.io namespaces are reserved"))
				}
			}
			return errs
		}},
		{"azureFile", s.AzureFile != nil, func() field.ErrorList {
			a, p := s.AzureFile, fldPath.Child("azureFile")
			errs := append(req(p.Child("secretName"), a.SecretName), req(p.Child("shareName"), a.ShareName)...)
			if a.SecretNamespace != nil {
				errs = append(errs, req(p.Child("secretNamespace"), *a.SecretNamespace)...)
			}
			return errs
		}},
		{"vsphereVolume", s.VsphereVolume != nil, func() field.ErrorList {
			return req(fldPath.Child("vsphereVolume", "volumePath"), s.VsphereVolume.VolumePath)
		}},
		{"photonPersistentDisk", s.PhotonPersistentDisk != nil, func() field.ErrorList {
			return req(fldPath.Child("photonPersistentDisk", "pdID"), s.PhotonPersistentDisk.PdID)
		}},
		{"portworxVolume", s.PortworxVolume != nil, func() field.ErrorList {
			return req(fldPath.Child("portworxVolume", "volumeID"), s.PortworxVolume.VolumeID)
		}},
		{"azureDisk", s.AzureDisk != nil, func() field.ErrorList { return pvValidateAzureDisk(s.AzureDisk, fldPath.Child("azureDisk")) }},
		{"scaleIO", s.ScaleIO != nil, func() field.ErrorList {
			sio, p := s.ScaleIO, fldPath.Child("scaleIO")
			errs := append(req(p.Child("gateway"), sio.Gateway), req(p.Child("system"), sio.System)...)
			return append(errs, req(p.Child("volumeName"), sio.VolumeName)...)
		}},
		{"local", s.Local != nil, func() field.ErrorList {
			p := fldPath.Child("local")
			var errs field.ErrorList
			if s.Local.Path == "" {
				errs = append(errs, field.Required(p.Child("path"), ""))
			} else {
				errs = append(errs, validatePathNoBacksteps(s.Local.Path, p.Child("path"))...)
			}
			if !hasNodeAffinity {
				errs = append(errs, field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity"))
			}
			return errs
		}},
		{"storageos", s.StorageOS != nil, func() field.ErrorList {
			so, p := s.StorageOS, fldPath.Child("storageos")
			var errs field.ErrorList
			if so.VolumeName == "" {
				errs = append(errs, field.Required(p.Child("volumeName"), ""))
			} else {
				errs = append(errs, validateDNS1123Label(so.VolumeName, p.Child("volumeName"))...)
			}
			if so.VolumeNamespace != "" {
				errs = append(errs, validateDNS1123Label(so.VolumeNamespace, p.Child("volumeNamespace"))...)
			}
			if ref := so.SecretRef; ref != nil {
				errs = append(errs, req(p.Child("secretRef", "name"), ref.Name)...)
				errs = append(errs, req(p.Child("secretRef", "namespace"), ref.Namespace)...)
			}
			return errs
		}},
		{"csi", s.CSI != nil, func() field.ErrorList { return pvValidateCSI(s.CSI, fldPath.Child("csi")) }},
	}

	var allErrs field.ErrorList
	n := 0
	for _, src := range sources {
		switch {
		case !src.set:
		case src.forbid == "":
			n++
			allErrs = append(allErrs, src.validate()...)
		case n > 0:
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(src.forbid), "may not specify more than 1 volume type"))
		default:
			n++
			allErrs = append(allErrs, src.validate()...)
		}
	}
	if n == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return allErrs
}

func pvPartition(p int32, fldPath *field.Path) field.ErrorList {
	if p < 0 || p > 255 {
		return field.ErrorList{field.Invalid(fldPath, p, validation.InclusiveRangeError(1, 255))}
	}
	return nil
}

func pvValidateQuobyte(q *corev1.QuobyteVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	const hostPorts = "must be a host:port pair or multiple pairs separated by commas"
	switch {
	case q.Registry == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("registry"), hostPorts))
	case len(q.Tenant) >= 65:
		allErrs = append(allErrs, field.Required(fldPath.Child("tenant"), "must be a UUID and may not exceed a length of 64 characters"))
	default:
		for _, hp := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("registry"), q.Registry, hostPorts))
			}
		}
	}
	if q.Volume == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("volume"), ""))
	}
	return allErrs
}

var (
	pvISCSIIqn = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	pvISCSIEui = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	pvISCSINaa = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

// pvISCSIName checks an iSCSI qualified name: iqn, eui or naa format.
func pvISCSIName(name string, fldPath *field.Path) field.ErrorList {
	const msg = "must be valid format"
	switch {
	case strings.HasPrefix(name, "iqn"):
		if !pvISCSIIqn.MatchString(name) {
			return field.ErrorList{field.Invalid(fldPath, name, msg)}
		}
	case strings.HasPrefix(name, "eui"):
		if !pvISCSIEui.MatchString(name) {
			return field.ErrorList{field.Invalid(fldPath, name, msg)}
		}
	case strings.HasPrefix(name, "naa"):
		if !pvISCSINaa.MatchString(name) {
			return field.ErrorList{field.Invalid(fldPath, name, msg)}
		}
	default:
		return field.ErrorList{field.Invalid(fldPath, name, msg)}
	}
	return nil
}

func pvValidateISCSI(s *corev1.ISCSIPersistentVolumeSource, pvName string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s.TargetPortal == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("targetPortal"), ""))
	}
	if s.InitiatorName != nil && len(pvName+":"+s.TargetPortal) > 64 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("targetportal"), s.TargetPortal,
			"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
	}
	if s.IQN == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("iqn"), ""))
	} else {
		allErrs = append(allErrs, pvISCSIName(s.IQN, fldPath.Child("iqn"))...)
	}
	if s.Lun < 0 || s.Lun > 255 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("lun"), s.Lun, validation.InclusiveRangeError(0, 255)))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretRef"), ""))
	}
	if s.SecretRef != nil && s.SecretRef.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretRef", "name"), ""))
	}
	if s.InitiatorName != nil {
		allErrs = append(allErrs, pvISCSIName(*s.InitiatorName, fldPath.Child("initiatorname"))...)
	}
	return allErrs
}

func pvValidateFC(fc *corev1.FCVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(fc.TargetWWNs) == 0 && len(fc.WWIDs) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
	}
	if len(fc.TargetWWNs) != 0 && len(fc.WWIDs) != 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("targetWWNs"), fc.TargetWWNs, "targetWWNs and wwids can not be specified simultaneously"))
	}
	if len(fc.TargetWWNs) != 0 {
		if fc.Lun == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("lun"), "lun is required if targetWWNs is specified"))
		} else if *fc.Lun < 0 || *fc.Lun > 255 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("lun"), fc.Lun, validation.InclusiveRangeError(0, 255)))
		}
	}
	return allErrs
}

func pvValidateAzureDisk(az *corev1.AzureDiskVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if az.DiskName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("diskName"), ""))
	}
	if az.DataDiskURI == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("diskURI"), ""))
	}
	if m := az.CachingMode; m != nil && *m != corev1.AzureDataDiskCachingNone && *m != corev1.AzureDataDiskCachingReadOnly && *m != corev1.AzureDataDiskCachingReadWrite {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("cachingMode"), *m, []corev1.AzureDataDiskCachingMode{
			corev1.AzureDataDiskCachingNone, corev1.AzureDataDiskCachingReadOnly, corev1.AzureDataDiskCachingReadWrite}))
	}
	if k := az.Kind; k != nil && *k != corev1.AzureSharedBlobDisk && *k != corev1.AzureDedicatedBlobDisk && *k != corev1.AzureManagedDisk {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("kind"), *k, []corev1.AzureDataDiskKind{
			corev1.AzureDedicatedBlobDisk, corev1.AzureManagedDisk, corev1.AzureSharedBlobDisk}))
	}
	if k := az.Kind; k != nil {
		if *k == corev1.AzureManagedDisk && !strings.HasPrefix(az.DataDiskURI, "/subscriptions/") {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("diskURI"), az.DataDiskURI,
				[]string{"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}"}))
		}
		if *k != corev1.AzureManagedDisk && !strings.HasPrefix(az.DataDiskURI, "https://") {
			allErrs = append(allErrs, field.NotSupported(fldPath.Child("diskURI"), az.DataDiskURI,
				[]string{"https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"}))
		}
	}
	return allErrs
}

func pvValidateCSI(csi *corev1.CSIPersistentVolumeSource, fldPath *field.Path) field.ErrorList {
	driverPath := fldPath.Child("driver")
	var allErrs field.ErrorList
	if csi.Driver == "" {
		allErrs = append(allErrs, field.Required(driverPath, ""))
	}
	if len(csi.Driver) > 63 {
		allErrs = append(allErrs, field.TooLong(driverPath, csi.Driver, 63))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(csi.Driver)) {
		allErrs = append(allErrs, field.Invalid(driverPath, csi.Driver, msg))
	}
	if csi.VolumeHandle == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("volumeHandle"), ""))
	}
	for _, ref := range []struct {
		name string
		ref  *corev1.SecretReference
	}{
		{"controllerPublishSecretRef", csi.ControllerPublishSecretRef},
		{"controllerExpandSecretRef", csi.ControllerExpandSecretRef},
		{"nodePublishSecretRef", csi.NodePublishSecretRef},
		{"nodeExpandSecretRef", csi.NodeExpandSecretRef},
	} {
		if ref.ref == nil {
			continue
		}
		p := fldPath.Child(ref.name)
		if ref.ref.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			allErrs = append(allErrs, validateDNS1123Subdomain(ref.ref.Name, p.Child("name"))...)
		}
		if ref.ref.Namespace == "" {
			allErrs = append(allErrs, field.Required(p.Child("namespace"), ""))
		} else {
			allErrs = append(allErrs, validateDNS1123Label(ref.ref.Namespace, p.Child("namespace"))...)
		}
	}
	return allErrs
}

// pvMountOptionsAnnotation is the annotation that carried mount options
// before spec.mountOptions existed; backends that cannot take options
// reject it.
const pvMountOptionsAnnotation = "volume.beta.kubernetes.io/mount-options"

func pvValidateMountOptions(pv *corev1.PersistentVolume) field.ErrorList {
	s := pv.Spec
	if s.GCEPersistentDisk != nil || s.AWSElasticBlockStore != nil || s.Glusterfs != nil || s.NFS != nil || s.RBD != nil ||
		s.Quobyte != nil || s.ISCSI != nil || s.Cinder != nil || s.CephFS != nil || s.AzureFile != nil ||
		s.VsphereVolume != nil || s.AzureDisk != nil || s.PhotonPersistentDisk != nil {
		return nil
	}
	if _, ok := pv.Annotations[pvMountOptionsAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations", pvMountOptionsAnnotation),
			"may not specify mount options for this volume type")}
	}
	return nil
}
