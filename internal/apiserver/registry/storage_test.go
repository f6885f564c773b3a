package registry

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const storageGroup = "storage.k8s.io"

func storageClass(mutate func(*storagev1.StorageClass)) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example.com",
		Parameters: map[string]string{"type": "ssd"}}
	mutate(sc)
	return sc
}

func TestStorageClassDefaults(t *testing.T) {
	sc := storageClass(func(*storagev1.StorageClass) {})
	mustResource(t, storageGroup, "storageclasses").Default(sc)
	if sc.ReclaimPolicy == nil || *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaimPolicy = %v, want Delete", sc.ReclaimPolicy)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("volumeBindingMode = %v, want Immediate", sc.VolumeBindingMode)
	}
	kept := storageClass(func(sc *storagev1.StorageClass) {
		sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRetain)
		sc.VolumeBindingMode = new(storagev1.VolumeBindingWaitForFirstConsumer)
	})
	mustResource(t, storageGroup, "storageclasses").Default(kept)
	if *kept.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *kept.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("explicit values overwritten: %v %v", *kept.ReclaimPolicy, *kept.VolumeBindingMode)
	}
}

func TestStorageClassValidate(t *testing.T) {
	term := func(reqs ...corev1.TopologySelectorLabelRequirement) corev1.TopologySelectorTerm {
		return corev1.TopologySelectorTerm{MatchLabelExpressions: reqs}
	}
	zone := corev1.TopologySelectorLabelRequirement{Key: "topology.kubernetes.io/zone", Values: []string{"a", "b"}}
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
	}{
		{name: "valid", mutate: func(*storagev1.StorageClass) {}},
		{name: "upper-case provisioner", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "kubernetes.io/AWS-EBS" }},
		{name: "no provisioner", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "" },
			want: []string{"provisioner: Required value"}},
		{name: "bad provisioner", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "not a name" },
			want: []string{"provisioner: Invalid value"}},
		{name: "empty parameter key", mutate: func(sc *storagev1.StorageClass) { sc.Parameters[""] = "x" },
			want: []string{"parameters: Invalid value"}},
		{name: "huge parameters", mutate: func(sc *storagev1.StorageClass) { sc.Parameters["blob"] = strings.Repeat("x", 256<<10) },
			want: []string{"parameters: Too long"}},
		{name: "retain", mutate: func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRetain) }},
		{name: "recycle", mutate: func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRecycle) },
			want: []string{"reclaimPolicy: Unsupported value"}},
		{name: "wait for consumer", mutate: func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = new(storagev1.VolumeBindingWaitForFirstConsumer)
		}},
		{name: "bad binding mode", mutate: func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = new(storagev1.VolumeBindingMode("Later")) },
			want: []string{"volumeBindingMode: Unsupported value"}},
		{name: "topologies", mutate: func(sc *storagev1.StorageClass) { sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(zone)} }},
		{name: "topology without values", mutate: func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(corev1.TopologySelectorLabelRequirement{Key: "zone"})}
		}, want: []string{"allowedTopologies[0].matchLabelExpressions[0].values: Required value"}},
		{name: "topology key twice", mutate: func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(zone, zone)}
		}, want: []string{"allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value"}},
		{name: "topology term twice", mutate: func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(zone), term(zone)}
		}, want: []string{"allowedTopologies[1].matchLabelExpressions: Duplicate value"}},
		{name: "bad name", mutate: func(sc *storagev1.StorageClass) { sc.Name = "Fast" }, want: []string{"metadata.name: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, storageGroup, "storageclasses"), storageClass(tc.mutate)), tc.want...)
		})
	}
}

func TestStorageClassUpdate(t *testing.T) {
	r := mustResource(t, storageGroup, "storageclasses")
	old := storageClass(func(*storagev1.StorageClass) {})
	r.Default(old)
	markStored(&old.ObjectMeta)
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
		detail string
	}{
		{name: "expansion and mount options", mutate: func(sc *storagev1.StorageClass) {
			sc.AllowVolumeExpansion, sc.MountOptions = new(true), []string{"noatime"}
		}},
		{name: "provisioner", mutate: func(sc *storagev1.StorageClass) { sc.Provisioner = "other.example.com" },
			want: []string{"provisioner: Forbidden"}, detail: "updates to provisioner are forbidden."},
		{name: "parameters", mutate: func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"type": "hdd"} },
			want: []string{"parameters: Forbidden"}, detail: "updates to parameters are forbidden."},
		{name: "reclaim policy", mutate: func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimRetain) },
			want: []string{"reclaimPolicy: Forbidden"}, detail: "updates to reclaimPolicy are forbidden."},
		{name: "binding mode", mutate: func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = new(storagev1.VolumeBindingWaitForFirstConsumer)
		}, want: []string{"volumeBindingMode: Invalid value"}, detail: "field is immutable"},
		// Omitted defaulted fields are defaulted again, so they are no change.
		{name: "omitted defaults", mutate: func(sc *storagev1.StorageClass) { sc.ReclaimPolicy, sc.VolumeBindingMode = nil, nil }},
		// Update validation checks metadata twice (as a new object and as a
		// change); the client hears of each problem once.
		{name: "bad label reported once", mutate: func(sc *storagev1.StorageClass) { sc.Labels = map[string]string{"a": "no spaces"} },
			want: []string{"metadata.labels: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := old.DeepCopy()
			tc.mutate(sc)
			errs := runUpdate(r, sc, old)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}

func csiDriver(mutate func(*storagev1.CSIDriver)) *storagev1.CSIDriver {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"}}
	mutate(d)
	return d
}

func TestCSIDriverDefaults(t *testing.T) {
	d := csiDriver(func(d *storagev1.CSIDriver) { d.Spec.PreventPodSchedulingIfMissing = new(true) })
	r := mustResource(t, storageGroup, "csidrivers")
	expectErrs(t, runCreate(r, d))
	s := d.Spec
	if !*s.AttachRequired || *s.PodInfoOnMount || *s.StorageCapacity || *s.RequiresRepublish || *s.SELinuxMount {
		t.Errorf("booleans: %+v", s)
	}
	if *s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy {
		t.Errorf("fsGroupPolicy = %s", *s.FSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("volumeLifecycleModes = %v", s.VolumeLifecycleModes)
	}
	if s.PreventPodSchedulingIfMissing != nil {
		t.Error("alpha field preventPodSchedulingIfMissing stored")
	}
}

func TestCSIDriverValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.CSIDriver)
		want   []string
	}{
		{name: "defaults", mutate: func(*storagev1.CSIDriver) {}},
		{name: "tokens", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "", ExpirationSeconds: new(int64(3600))}}
			d.Spec.ServiceAccountTokenInSecrets = new(true)
		}},
		{name: "audience twice", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "vault"}}
		}, want: []string{"spec.tokenRequests[1].audience: Duplicate value"}},
		{name: "short token", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.TokenRequests = []storagev1.TokenRequest{{Audience: "vault", ExpirationSeconds: new(int64(60))}}
		}, want: []string{"spec.tokenRequests[0].expirationSeconds: Invalid value"}},
		{name: "tokens in secrets without tokens", mutate: func(d *storagev1.CSIDriver) { d.Spec.ServiceAccountTokenInSecrets = new(false) },
			want: []string{"spec.serviceAccountTokenInSecrets: Invalid value"}},
		{name: "unknown lifecycle mode", mutate: func(d *storagev1.CSIDriver) {
			d.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{"Ephemeral", "Forever"}
		}, want: []string{"spec.volumeLifecycleModes: Unsupported value"}},
		{name: "unknown fsGroupPolicy", mutate: func(d *storagev1.CSIDriver) { d.Spec.FSGroupPolicy = new(storagev1.FSGroupPolicy("Some")) },
			want: []string{"spec.fsGroupPolicy: Unsupported value"}},
		{name: "fast allocatable updates", mutate: func(d *storagev1.CSIDriver) { d.Spec.NodeAllocatableUpdatePeriodSeconds = new(int64(5)) },
			want: []string{"spec.nodeAllocatableUpdatePeriodSeconds: Invalid value"}},
		{name: "bad name", mutate: func(d *storagev1.CSIDriver) { d.Name = "csi_driver" }, want: []string{"metadata.name: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, storageGroup, "csidrivers"), csiDriver(tc.mutate)), tc.want...)
		})
	}
}

func TestCSIDriverUpdate(t *testing.T) {
	r := mustResource(t, storageGroup, "csidrivers")
	old := csiDriver(func(*storagev1.CSIDriver) {})
	r.Default(old)
	markStored(&old.ObjectMeta)
	ok := old.DeepCopy()
	ok.Spec.PodInfoOnMount, ok.Spec.RequiresRepublish = new(true), new(true)
	expectErrs(t, runUpdate(r, ok, old))

	attach := old.DeepCopy()
	attach.Spec.AttachRequired = new(false)
	expectErrs(t, runUpdate(r, attach, old), "spec.attachedRequired: Invalid value")

	modes := old.DeepCopy()
	modes.Spec.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecycleEphemeral}
	expectErrs(t, runUpdate(r, modes, old), "spec.volumeLifecycleModes: Invalid value")
}

func csiNode(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
}

func TestCSINodeValidate(t *testing.T) {
	ebs := storagev1.CSINodeDriver{Name: "ebs.csi.aws.com", NodeID: "i-0123", TopologyKeys: []string{"topology.ebs.csi.aws.com/zone"}}
	for _, tc := range []struct {
		name string
		node *storagev1.CSINode
		want []string
	}{
		{name: "one driver", node: csiNode(ebs)},
		{name: "no drivers", node: csiNode()},
		{name: "driver twice", node: csiNode(ebs, ebs), want: []string{"spec.drivers[1].name: Duplicate value"}},
		{name: "no name", node: csiNode(storagev1.CSINodeDriver{NodeID: "x"}), want: []string{"spec.drivers[0].name: Required value"}},
		{name: "long name", node: csiNode(storagev1.CSINodeDriver{Name: strings.Repeat("a", 64), NodeID: "x"}),
			want: []string{"spec.drivers[0].name: Too long"}},
		{name: "no node id", node: csiNode(storagev1.CSINodeDriver{Name: "d.example.com"}), want: []string{"spec.drivers[0].nodeID: Required value"}},
		{name: "long node id", node: csiNode(storagev1.CSINodeDriver{Name: "d.example.com", NodeID: strings.Repeat("x", 257)}),
			want: []string{"spec.drivers[0].nodeID: Invalid value"}},
		{name: "negative limit", node: csiNode(storagev1.CSINodeDriver{Name: "d.example.com", NodeID: "x",
			Allocatable: &storagev1.VolumeNodeResources{Count: new(int32(-1))}}), want: []string{"spec.drivers[0].allocatable.count: Invalid value"}},
		{name: "bad topology key", node: csiNode(storagev1.CSINodeDriver{Name: "d.example.com", NodeID: "x", TopologyKeys: []string{"a b"}}),
			want: []string{"spec.drivers[0]: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, storageGroup, "csinodes"), tc.node), tc.want...)
		})
	}
}

func TestCSINodeUpdate(t *testing.T) {
	r := mustResource(t, storageGroup, "csinodes")
	old := csiNode(storagev1.CSINodeDriver{Name: "ebs.csi.aws.com", NodeID: "i-0123"})
	markStored(&old.ObjectMeta)

	limit := old.DeepCopy()
	limit.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: new(int32(25))}
	limit.Spec.Drivers = append(limit.Spec.Drivers, storagev1.CSINodeDriver{Name: "efs.csi.aws.com", NodeID: "i-0123"})
	expectErrs(t, runUpdate(r, limit, old))

	moved := old.DeepCopy()
	moved.Spec.Drivers[0].NodeID = "i-9999"
	expectErrs(t, runUpdate(r, moved, old), "spec.drivers: Invalid value")
}

func TestCSIStorageCapacity(t *testing.T) {
	r := mustResource(t, storageGroup, "csistoragecapacities")
	capacity := func(mutate func(*storagev1.CSIStorageCapacity)) *storagev1.CSIStorageCapacity {
		c := &storagev1.CSIStorageCapacity{ObjectMeta: objMeta("csisc-1"), StorageClassName: "fast",
			NodeTopology: matchLabels(map[string]string{"topology.kubernetes.io/zone": "a"}), Capacity: new(resource.MustParse("100Gi"))}
		mutate(c)
		return c
	}
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.CSIStorageCapacity)
		want   []string
	}{
		{name: "valid", mutate: func(*storagev1.CSIStorageCapacity) {}},
		{name: "unknown capacity", mutate: func(c *storagev1.CSIStorageCapacity) { c.Capacity = nil }},
		{name: "negative", mutate: func(c *storagev1.CSIStorageCapacity) { c.Capacity = new(resource.MustParse("-1")) },
			want: []string{"capacity: Invalid value"}},
		{name: "no class", mutate: func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "" },
			want: []string{"storageClassName: Invalid value"}},
		{name: "bad topology", mutate: func(c *storagev1.CSIStorageCapacity) { c.NodeTopology = matchLabels(map[string]string{"zone": "a b"}) },
			want: []string{"nodeTopology.matchLabels: Invalid value"}},
		{name: "no namespace", mutate: func(c *storagev1.CSIStorageCapacity) { c.Namespace = "" },
			want: []string{"metadata.namespace: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, capacity(tc.mutate)), tc.want...)
		})
	}

	old := capacity(func(*storagev1.CSIStorageCapacity) {})
	markStored(&old.ObjectMeta)
	t.Run("capacity may change", func(t *testing.T) {
		c := old.DeepCopy()
		c.Capacity, c.MaximumVolumeSize = new(resource.MustParse("50Gi")), new(resource.MustParse("10Gi"))
		expectErrs(t, runUpdate(r, c, old))
	})
	t.Run("class and topology may not", func(t *testing.T) {
		c := old.DeepCopy()
		c.StorageClassName = "slow"
		c.NodeTopology = matchLabels(map[string]string{"topology.kubernetes.io/zone": "b"})
		expectErrs(t, runUpdate(r, c, old), "storageClassName: Invalid value", "nodeTopology: Invalid value")
	})
}

func volumeAttachment(mutate func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-0a1b2c"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "ebs.csi.aws.com", NodeName: "node-1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: new("pv-1")}}}
	mutate(va)
	return va
}

func TestVolumeAttachmentValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.VolumeAttachment)
		want   []string
	}{
		{name: "valid", mutate: func(*storagev1.VolumeAttachment) {}},
		{name: "inline volume", mutate: func(va *storagev1.VolumeAttachment) {
			va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &corev1.PersistentVolumeSpec{}}
		}},
		{name: "no source", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source = storagev1.VolumeAttachmentSource{} },
			want: []string{"spec.source: Required value"}},
		{name: "both sources", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source.InlineVolumeSpec = &corev1.PersistentVolumeSpec{} },
			want: []string{"spec.source: Forbidden"}},
		{name: "empty pv name", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = new("") },
			want: []string{"spec.source.persistentVolumeName: Required value"}},
		{name: "no attacher", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "" },
			want: []string{"spec.attacher: Required value"}},
		{name: "bad attacher", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "ebs csi" },
			want: []string{"spec.attacher: Invalid value"}},
		{name: "bad node", mutate: func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "Node_1" },
			want: []string{"spec.nodeName: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, storageGroup, "volumeattachments"), volumeAttachment(tc.mutate)), tc.want...)
		})
	}
}

func TestVolumeAttachmentStatus(t *testing.T) {
	r := mustResource(t, storageGroup, "volumeattachments")
	va := volumeAttachment(func(va *storagev1.VolumeAttachment) { va.Status.Attached = true })
	expectErrs(t, runCreate(r, va))
	if va.Status.Attached {
		t.Error("status kept on create")
	}
	markStored(&va.ObjectMeta)

	moved := va.DeepCopy()
	moved.Spec.NodeName = "node-2"
	expectErrs(t, runUpdate(r, moved, va), "spec: Invalid value")

	attached := va.DeepCopy()
	attached.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/xvdba"}}
	expectErrs(t, r.ValidateStatusUpdate(attached, va))

	failed := va.DeepCopy()
	failed.Status.DetachError = &storagev1.VolumeError{Message: strings.Repeat("x", 1025), ErrorCode: new(int32(-1))}
	expectErrs(t, r.ValidateStatusUpdate(failed, va), "status.detachError.message: Too long", "status.detachError.errorCode: Invalid value")
}
