package registry

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func volumeAttributesClass(mutate func(*storagev1.VolumeAttributesClass)) *storagev1.VolumeAttributesClass {
	c := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "ebs.csi.aws.com",
		Parameters: map[string]string{"iops": "3000"}}
	mutate(c)
	return c
}

func TestVolumeAttributesClassValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.VolumeAttributesClass)
		want   []string
	}{
		{name: "valid", mutate: func(*storagev1.VolumeAttributesClass) {}},
		{name: "no driver", mutate: func(c *storagev1.VolumeAttributesClass) { c.DriverName = "" },
			want: []string{"driverName: Required value"}},
		{name: "bad driver", mutate: func(c *storagev1.VolumeAttributesClass) { c.DriverName = "not a driver" },
			want: []string{"driverName: Invalid value"}},
		{name: "no parameters", mutate: func(c *storagev1.VolumeAttributesClass) { c.Parameters = nil },
			want: []string{"parameters: Required value"}},
		{name: "empty key", mutate: func(c *storagev1.VolumeAttributesClass) { c.Parameters[""] = "x" },
			want: []string{"parameters: Invalid value"}},
		{name: "huge", mutate: func(c *storagev1.VolumeAttributesClass) { c.Parameters["blob"] = strings.Repeat("x", 256<<10) },
			want: []string{"parameters: Too long"}},
		{name: "bad name", mutate: func(c *storagev1.VolumeAttributesClass) { c.Name = "Gold" },
			want: []string{"metadata.name: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, storageGroup, "volumeattributesclasses"), volumeAttributesClass(tc.mutate)), tc.want...)
		})
	}
}

func TestVolumeAttributesClassUpdate(t *testing.T) {
	r := mustResource(t, storageGroup, "volumeattributesclasses")
	old := volumeAttributesClass(func(*storagev1.VolumeAttributesClass) {})
	markStored(&old.ObjectMeta)
	for _, tc := range []struct {
		name   string
		mutate func(*storagev1.VolumeAttributesClass)
		want   []string
		detail string
	}{
		{name: "labels", mutate: func(c *storagev1.VolumeAttributesClass) { c.Labels = map[string]string{"tier": "gold"} }},
		{name: "driver", mutate: func(c *storagev1.VolumeAttributesClass) { c.DriverName = "other.example.com" },
			want: []string{"driverName: Forbidden"}, detail: "updates to driverName are forbidden."},
		{name: "parameters", mutate: func(c *storagev1.VolumeAttributesClass) { c.Parameters = map[string]string{"iops": "6000"} },
			want: []string{"parameters: Forbidden"}, detail: "updates to parameters are forbidden."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := old.DeepCopy()
			tc.mutate(c)
			errs := runUpdate(r, c, old)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}
