package registry

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pvValid() *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1", UID: "6b1d4c2e-0d7f-4f57-9a41-0a8d3f2c7e11"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
		}}
}

func storedPV(t *testing.T, mutate func(*corev1.PersistentVolume)) *corev1.PersistentVolume {
	t.Helper()
	pv := pvValid()
	mutate(pv)
	if errs := runCreate(mustResource(t, "", "persistentvolumes"), pv); len(errs) != 0 {
		t.Fatalf("stored pv does not validate: %v", errs.ToAggregate())
	}
	markStored(&pv.ObjectMeta)
	return pv
}

func TestPVDefaults(t *testing.T) {
	pv := pvValid()
	pv.Status.Phase = corev1.VolumeBound
	pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("0.5m")
	runCreate(mustResource(t, "", "persistentvolumes"), pv)
	for _, c := range []struct {
		name      string
		got, want interface{}
	}{
		{"reclaim policy", pv.Spec.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimRetain},
		{"volume mode", *pv.Spec.VolumeMode, corev1.PersistentVolumeFilesystem},
		{"phase reset to Pending", pv.Status.Phase, corev1.VolumePending},
		{"phase transition stamped", pv.Status.LastPhaseTransitionTime != nil, true},
		{"hostPath type", *pv.Spec.HostPath.Type, corev1.HostPathUnset},
		{"capacity rounded up to milli", pv.Spec.Capacity.Storage().String(), "1m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
	t.Run("backend defaults", func(t *testing.T) {
		src := corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{}}
		pvDefaultSource(&src)
		if src.RBD.RBDPool != "rbd" || src.RBD.RadosUser != "admin" || src.RBD.Keyring != "/etc/ceph/keyring" {
			t.Errorf("rbd defaults: %+v", src.RBD)
		}
		src = corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{}, ISCSI: &corev1.ISCSIPersistentVolumeSource{}}
		pvDefaultSource(&src)
		if *src.AzureDisk.CachingMode != corev1.AzureDataDiskCachingReadWrite || *src.AzureDisk.Kind != corev1.AzureSharedBlobDisk ||
			*src.AzureDisk.FSType != "ext4" || *src.AzureDisk.ReadOnly || src.ISCSI.ISCSIInterface != "default" {
			t.Errorf("azureDisk/iscsi defaults: %+v %+v", src.AzureDisk, src.ISCSI)
		}
	})
}

func TestPVValidate(t *testing.T) {
	r := mustResource(t, "", "persistentvolumes")
	gi := resource.MustParse("1Gi")
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PersistentVolume)
		want   []string
	}{
		{"valid", func(*corev1.PersistentVolume) {}, nil},
		{"bad name", func(pv *corev1.PersistentVolume) { pv.Name = "PV_1" }, []string{"metadata.name: Invalid value"}},
		{"no capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity = nil },
			[]string{"spec.capacity: Required value", "spec.capacity: Unsupported value"}},
		{"capacity of cpu", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceCPU] = gi },
			[]string{"spec.capacity: Unsupported value"}},
		{"zero capacity", func(pv *corev1.PersistentVolume) { pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("0") },
			[]string{"spec.capacity[storage]: Invalid value"}},
		{"negative capacity", func(pv *corev1.PersistentVolume) {
			pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("-1Gi")
		}, []string{"spec.capacity[storage]: Invalid value", "spec.capacity[storage]: Invalid value"}},
		{"no access modes", func(pv *corev1.PersistentVolume) { pv.Spec.AccessModes = nil },
			[]string{"spec.accessModes: Required value"}},
		{"unknown access mode", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		}, []string{"spec.accessModes: Unsupported value"}},
		{"ReadWriteOncePod with others", func(pv *corev1.PersistentVolume) {
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadOnlyMany}
		}, []string{"spec.accessModes: Forbidden"}},
		{"no volume source", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath = nil },
			[]string{"spec: Required value"}},
		{"two volume sources", func(pv *corev1.PersistentVolume) { pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"} },
			[]string{"spec.nfs: Forbidden"}},
		{"hostPath without path", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "" },
			[]string{"spec.hostPath.path: Required value"}},
		{"hostPath backsteps", func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "/a/../b" },
			[]string{"spec.hostPath.path: Invalid value"}},
		{"nfs relative path", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.NFS = nil, &corev1.NFSVolumeSource{Server: "nfs", Path: "x"}
		}, []string{"spec.nfs.path: Invalid value"}},
		{"local without node affinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.Local = nil, &corev1.LocalVolumeSource{Path: "/mnt/disk1"}
		}, []string{"spec.nodeAffinity: Required value"}},
		{"local with node affinity", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.Local = nil, &corev1.LocalVolumeSource{Path: "/mnt/disk1"}
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}}}}}}
		}, nil},
		{"node affinity without required", func(pv *corev1.PersistentVolume) { pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{} },
			[]string{"spec.nodeAffinity.required: Required value"}},
		{"csi without driver and handle", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.CSI = nil, &corev1.CSIPersistentVolumeSource{}
		}, []string{"spec.csi.driver: Required value", "spec.csi.driver: Invalid value", "spec.csi.volumeHandle: Required value"}},
		{"csi secret without namespace", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.CSI = nil, &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "v1",
				NodePublishSecretRef: &corev1.SecretReference{Name: "creds"}}
		}, []string{"spec.csi.nodePublishSecretRef.namespace: Required value"}},
		{"unknown reclaim policy", func(pv *corev1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			[]string{"spec.persistentVolumeReclaimPolicy: Unsupported value"}},
		{"recycling /", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath.Path = "/"
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}, []string{"spec.persistentVolumeReclaimPolicy: Forbidden"}},
		{"unknown volume mode", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeMode = new(corev1.PersistentVolumeMode("Raw")) },
			[]string{"spec.volumeMode: Unsupported value"}},
		{"bad storage class", func(pv *corev1.PersistentVolume) { pv.Spec.StorageClassName = "Fast_SSD" },
			[]string{"spec.storageClassName: Invalid value"}},
		{"empty volume attributes class without csi", func(pv *corev1.PersistentVolume) { pv.Spec.VolumeAttributesClassName = new("") },
			[]string{"spec.volumeAttributesClassName: Required value", "spec.csi: Required value"}},
		{"mount options on hostPath", func(pv *corev1.PersistentVolume) {
			pv.Annotations = map[string]string{pvMountOptionsAnnotation: "ro"}
		}, []string{"metadata.annotations.volume.beta.kubernetes.io/mount-options: Forbidden"}},
		{"mount options on nfs", func(pv *corev1.PersistentVolume) {
			pv.Annotations = map[string]string{pvMountOptionsAnnotation: "ro"}
			pv.Spec.HostPath, pv.Spec.NFS = nil, &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
		}, nil},
		{"iscsi bad iqn", func(pv *corev1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.ISCSI = nil, &corev1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.bad", Lun: 300}
		}, []string{"spec.iscsi.iqn: Invalid value", "spec.iscsi.lun: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pv := pvValid()
			tc.mutate(pv)
			expectErrs(t, runCreate(r, pv), tc.want...)
		})
	}
	t.Run("messages", func(t *testing.T) {
		pv := pvValid()
		pv.Spec.HostPath = nil
		pv.Spec.Capacity = nil
		errs := runCreate(r, pv)
		expectErrWith(t, errs, "spec: Required value", "must specify a volume type")
		expectErrWith(t, errs, "spec.capacity: Unsupported value", `supported values: "storage"`)
	})
}

func TestPVUpdate(t *testing.T) {
	r := mustResource(t, "", "persistentvolumes")
	csi := func(pv *corev1.PersistentVolume) {
		pv.Spec.HostPath = nil
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com", VolumeHandle: "vol-1"}
	}
	for _, tc := range []struct {
		name   string
		base   func(*corev1.PersistentVolume)
		mutate func(*corev1.PersistentVolume)
		want   []string
	}{
		{"capacity, policy and claimRef may change", func(*corev1.PersistentVolume) {}, func(pv *corev1.PersistentVolume) {
			pv.Spec.Capacity[corev1.ResourceStorage] = resource.MustParse("2Gi")
			pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
		}, nil},
		{"source is immutable", func(*corev1.PersistentVolume) {}, func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "/other" },
			[]string{"spec.persistentvolumesource: Forbidden"}},
		{"volume mode is immutable", func(*corev1.PersistentVolume) {}, func(pv *corev1.PersistentVolume) {
			pv.Spec.VolumeMode = new(corev1.PersistentVolumeBlock)
		}, []string{"volumeMode: Invalid value"}},
		{"csi may gain an expand secret", csi, func(pv *corev1.PersistentVolume) {
			pv.Spec.CSI.ControllerExpandSecretRef = &corev1.SecretReference{Name: "s", Namespace: "kube-system"}
		}, nil},
		{"csi handle is immutable", csi, func(pv *corev1.PersistentVolume) { pv.Spec.CSI.VolumeHandle = "vol-2" },
			[]string{"spec.persistentvolumesource: Forbidden"}},
		{"volume attributes class may not be unset", func(pv *corev1.PersistentVolume) {
			csi(pv)
			pv.Spec.VolumeAttributesClassName = new("gold")
		}, func(pv *corev1.PersistentVolume) { pv.Spec.VolumeAttributesClassName = nil },
			[]string{"spec.volumeAttributesClassName: Forbidden"}},
		{"node affinity is immutable once set", func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpExists}}}}}}
		}, func(pv *corev1.PersistentVolume) {
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Key = "rack"
		}, []string{"nodeAffinity: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := storedPV(t, tc.base)
			pv := old.DeepCopy()
			tc.mutate(pv)
			expectErrs(t, runUpdate(r, pv, old), tc.want...)
		})
	}
	t.Run("status update accepts any phase", func(t *testing.T) {
		old := storedPV(t, func(*corev1.PersistentVolume) {})
		pv := old.DeepCopy()
		pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeFailed, Reason: "Broken"}
		expectErrs(t, r.ValidateStatusUpdate(pv, old))
	})
}

func pvcValid() *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
}

func TestPVCDefaults(t *testing.T) {
	r := mustResource(t, "", "persistentvolumeclaims")
	t.Run("mode and phase", func(t *testing.T) {
		pvc := pvcValid()
		pvc.Status.Phase = corev1.ClaimBound
		if errs := runCreate(r, pvc); len(errs) != 0 {
			t.Fatalf("defaulted pvc does not validate: %v", errs.ToAggregate())
		}
		if *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || pvc.Status.Phase != corev1.ClaimPending {
			t.Errorf("volumeMode %v, phase %v", *pvc.Spec.VolumeMode, pvc.Status.Phase)
		}
	})
	t.Run("dataSource fills dataSourceRef", func(t *testing.T) {
		pvc := pvcValid()
		pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
		runCreate(r, pvc)
		if ref := pvc.Spec.DataSourceRef; ref == nil || ref.Kind != "PersistentVolumeClaim" || ref.Name != "src" {
			t.Errorf("dataSourceRef = %+v", ref)
		}
	})
	t.Run("dataSourceRef fills dataSource", func(t *testing.T) {
		pvc := pvcValid()
		group := "snapshot.storage.k8s.io"
		pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: "snap"}
		runCreate(r, pvc)
		if ds := pvc.Spec.DataSource; ds == nil || *ds.APIGroup != group || ds.Name != "snap" {
			t.Errorf("dataSource = %+v", ds)
		}
	})
	t.Run("unknown dataSource dropped", func(t *testing.T) {
		pvc := pvcValid()
		group := "example.com"
		pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "Backup", Name: "b"}
		runCreate(r, pvc)
		if pvc.Spec.DataSource != nil || pvc.Spec.DataSourceRef != nil {
			t.Errorf("dataSource kept: %+v %+v", pvc.Spec.DataSource, pvc.Spec.DataSourceRef)
		}
	})
}

func TestPVCValidate(t *testing.T) {
	r := mustResource(t, "", "persistentvolumeclaims")
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim)
		want   []string
	}{
		{"valid", func(*corev1.PersistentVolumeClaim) {}, nil},
		{"no access modes", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.AccessModes = nil },
			[]string{"spec.accessModes: Required value"}},
		{"unknown access mode", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadWriteAll"}
		}, []string{"spec.accessModes: Unsupported value"}},
		{"no storage request", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.Resources.Requests = nil },
			[]string{"spec.resources[storage]: Required value"}},
		{"zero storage request", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}, []string{"spec.resources[storage]: Invalid value"}},
		{"unknown volume mode", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeMode = new(corev1.PersistentVolumeMode("Raw")) },
			[]string{"spec.volumeMode: Unsupported value"}},
		{"bad selector", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"bad key": "x"}}
		}, []string{"spec.selector.matchLabels: Invalid value"}},
		{"bad storage class", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("Fast_SSD") },
			[]string{"spec.storageClassName: Invalid value"}},
		{"dataSource and dataSourceRef differ", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "a"}
			pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "b"}
		}, []string{"spec: Invalid value"}},
		{"dataSourceRef of other kind in core group", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.DataSourceRef = &corev1.TypedObjectReference{Kind: "Secret", Name: "s"}
		}, []string{"spec.dataSource: Invalid value", "spec.dataSourceRef: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pvc := pvcValid()
			tc.mutate(pvc)
			expectErrs(t, runCreate(r, pvc), tc.want...)
		})
	}
	t.Run("message", func(t *testing.T) {
		pvc := pvcValid()
		pvc.Spec.AccessModes = nil
		expectErrWith(t, runCreate(r, pvc), "spec.accessModes: Required value", "at least 1 access mode is required")
	})
}

func TestPVCUpdate(t *testing.T) {
	r := mustResource(t, "", "persistentvolumeclaims")
	storage := func(q string) func(*corev1.PersistentVolumeClaim) {
		return func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(q)
		}
	}
	bound := func(capacity string) func(*corev1.PersistentVolumeClaim) {
		return func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.VolumeName = "pv1"
			pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}}
		}
	}
	for _, tc := range []struct {
		name   string
		base   func(*corev1.PersistentVolumeClaim)
		mutate func(*corev1.PersistentVolumeClaim)
		want   []string
	}{
		{"bound claim may grow", bound("1Gi"), storage("2Gi"), nil},
		{"unbound claim may not grow", func(*corev1.PersistentVolumeClaim) {}, storage("2Gi"), []string{"spec: Forbidden"}},
		{"bound claim may not shrink below capacity", bound("1Gi"), storage("512Mi"),
			[]string{"spec.resources.requests.storage: Forbidden"}},
		{"failed expansion may be walked back", func(pvc *corev1.PersistentVolumeClaim) {
			bound("1Gi")(pvc)
			storage("4Gi")(pvc)
		}, storage("2Gi"), nil},
		{"access modes are immutable", bound("1Gi"), func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}, []string{"spec: Forbidden"}},
		{"volumeName may be set once", func(*corev1.PersistentVolumeClaim) {}, func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "pv9" }, nil},
		{"volumeName may not change", bound("1Gi"), func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeName = "pv9" },
			[]string{"spec: Forbidden"}},
		{"bound claim may switch attributes class", func(pvc *corev1.PersistentVolumeClaim) {
			bound("1Gi")(pvc)
			pvc.Spec.VolumeAttributesClassName = new("silver")
		}, func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeAttributesClassName = new("gold") }, nil},
		{"attributes class may not be unset", func(pvc *corev1.PersistentVolumeClaim) {
			bound("1Gi")(pvc)
			pvc.Spec.VolumeAttributesClassName = new("silver")
		}, func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.VolumeAttributesClassName = nil },
			[]string{"spec: Forbidden", "spec.volumeAttributesClassName: Forbidden"}},
		{"storage class may be set when unset", func(*corev1.PersistentVolumeClaim) {}, func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.StorageClassName = new("standard")
		}, nil},
		{"storage class may not change", func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("standard") },
			func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("fast") }, []string{"spec: Forbidden"}},
		{"class moves from beta annotation", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "gold"}
		}, func(pvc *corev1.PersistentVolumeClaim) { pvc.Spec.StorageClassName = new("gold") }, nil},
		{"beta annotation is immutable", func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "gold"}
		}, func(pvc *corev1.PersistentVolumeClaim) { pvc.Annotations[corev1.BetaStorageClassAnnotation] = "silver" },
			[]string{"metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value"}},
		{"volume mode is immutable", bound("1Gi"), func(pvc *corev1.PersistentVolumeClaim) {
			pvc.Spec.VolumeMode = new(corev1.PersistentVolumeBlock)
		}, []string{"spec: Forbidden", "volumeMode: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := pvcValid()
			tc.base(old)
			status := old.Status
			runCreate(r, old)
			old.Status = status
			markStored(&old.ObjectMeta)
			pvc := old.DeepCopy()
			tc.mutate(pvc)
			expectErrs(t, runUpdate(r, pvc, old), tc.want...)
		})
	}
	t.Run("message", func(t *testing.T) {
		old := pvcValid()
		runCreate(r, old)
		markStored(&old.ObjectMeta)
		pvc := old.DeepCopy()
		storage("5Gi")(pvc)
		errs := runUpdate(r, pvc, old)
		if len(errs) != 1 || !strings.HasPrefix(errs[0].Detail, "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n") {
			t.Errorf("errors: %v", errs.ToAggregate())
		}
	})
}

func TestPVCStatusUpdate(t *testing.T) {
	r := mustResource(t, "", "persistentvolumeclaims")
	for _, tc := range []struct {
		name   string
		status corev1.PersistentVolumeClaimStatus
		want   []string
	}{
		{"bound", corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound,
			Capacity:                  corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AllocatedResources:        corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
			AllocatedResourceStatuses: map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress}}, nil},
		{"negative capacity", corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("-1Gi")}},
			[]string{"status.capacity[storage]: Invalid value"}},
		{"unknown resize status", corev1.PersistentVolumeClaimStatus{
			AllocatedResourceStatuses: map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: "Resizing"}},
			[]string{"status.allocatedResourceStatus: Unsupported value"}},
		{"allocated cpu", corev1.PersistentVolumeClaimStatus{AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			[]string{"status.allocatedResources: Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := pvcValid()
			runCreate(r, old)
			markStored(&old.ObjectMeta)
			pvc := old.DeepCopy()
			pvc.Status = tc.status
			expectErrs(t, r.ValidateStatusUpdate(pvc, old), tc.want...)
		})
	}
}
