package plugins

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func imagePod(initImages, images, volumeImages []string) *corev1.Pod {
	p := fitPod()
	for i, img := range initImages {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("i%d", i), Image: img})
	}
	for i, img := range images {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", i), Image: img})
	}
	for i, img := range volumeImages {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", i),
			VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: img}}})
	}
	return p
}

// imageNodes builds a snapshot of n nodes; images[i] are node i's images
// as name → MiB, and every image's NumNodes is how many nodes have it.
func imageNodes(n int, images ...map[string]int64) *framework.Snapshot {
	count := map[string]int{}
	for _, m := range images {
		for name := range m {
			count[name]++
		}
	}
	var infos []*framework.NodeInfo
	for i := 0; i < n; i++ {
		ni := fitNodeInfo(fitNode(fmt.Sprintf("node-%d", i), fitRL("pods", "10")))
		ni.ImageStates = map[string]*framework.ImageState{}
		if i < len(images) {
			for name, mib := range images[i] {
				ni.ImageStates[name] = &framework.ImageState{Size: mib * imageMiB, NumNodes: count[name]}
			}
		}
		infos = append(infos, ni)
	}
	return framework.NewSnapshot(infos...)
}

func TestImageLocalityScore(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		snap *framework.Snapshot
		want int64
	}{
		// 40 + 300 MiB of 2 images: 100*(340-23)/(2000-23) = 16
		{name: "two present images",
			pod:  imagePod(nil, []string{"gcr.io/40", "gcr.io/300"}, nil),
			snap: imageNodes(1, map[string]int64{"gcr.io/40:latest": 40, "gcr.io/300:latest": 300}), want: 16},
		{name: "below 23 MiB scores 0",
			pod:  imagePod(nil, []string{"gcr.io/10"}, nil),
			snap: imageNodes(1, map[string]int64{"gcr.io/10:latest": 10}), want: 0},
		{name: "above 1000 MiB per container scores 100",
			pod:  imagePod(nil, []string{"gcr.io/2000"}, nil),
			snap: imageNodes(1, map[string]int64{"gcr.io/2000:latest": 2000}), want: 100},
		{name: "image missing on the node scores 0",
			pod:  imagePod(nil, []string{"gcr.io/other"}, nil),
			snap: imageNodes(1, map[string]int64{"gcr.io/2000:latest": 2000}), want: 0},
		// 500 MiB on 2 of 4 nodes counts 250: 100*(250-23)/977 = 23
		{name: "spread scales the size",
			pod:  imagePod(nil, []string{"gcr.io/500"}, nil),
			snap: imageNodes(4, map[string]int64{"gcr.io/500:latest": 500}, map[string]int64{"gcr.io/500:latest": 500}), want: 23},
		{name: "untagged name gets :latest",
			pod:  imagePod(nil, []string{"nginx"}, nil),
			snap: imageNodes(1, map[string]int64{"nginx:latest": 2000}), want: 100},
		{name: "tagged name is kept",
			pod:  imagePod(nil, []string{"nginx:1.25"}, nil),
			snap: imageNodes(1, map[string]int64{"nginx:latest": 2000}), want: 0},
		{name: "registry port is not a tag",
			pod:  imagePod(nil, []string{"registry:5000/app"}, nil),
			snap: imageNodes(1, map[string]int64{"registry:5000/app:latest": 2000}), want: 100},
		{name: "digest reference is kept",
			pod:  imagePod(nil, []string{"app@sha256:0123"}, nil),
			snap: imageNodes(1, map[string]int64{"app@sha256:0123": 2000}), want: 100},
		// init 500 + app 500 of 2 images: 100*(1000-23)/1977 = 49
		{name: "init containers count",
			pod:  imagePod([]string{"init:1"}, []string{"app:1"}, nil),
			snap: imageNodes(1, map[string]int64{"init:1": 500, "app:1": 500}), want: 49},
		{name: "init image counts toward the threshold even when absent",
			pod:  imagePod([]string{"init:1"}, []string{"app:1"}, nil),
			snap: imageNodes(1, map[string]int64{"app:1": 1000}), want: 49},
		{name: "image volumes count",
			pod:  imagePod(nil, []string{"app:1"}, []string{"data:1"}),
			snap: imageNodes(1, map[string]int64{"data:1": 1000}), want: 49},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewImageLocality(context.Background(), nil, newTestHandle(tc.snap))
			p := pl.(*ImageLocality)
			state := framework.NewCycleState()
			// Only the first node is feasible; spread still counts all.
			ni := tc.snap.List()[0]
			s := p.PreScore(context.Background(), state, tc.pod, []*framework.NodeInfo{ni})
			if s.IsSkip() {
				// No node has any of the pod's images: every node
				// would score 0, which Score confirms on its own.
				if tc.want != 0 {
					t.Fatalf("PreScore skipped, want score %d", tc.want)
				}
				if got, _ := p.Score(context.Background(), framework.NewCycleState(), tc.pod, ni); got != 0 {
					t.Fatalf("skipped, yet Score = %d", got)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			got, s := p.Score(context.Background(), state, tc.pod, ni)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if got != tc.want {
				t.Errorf("score = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestImageNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nginx", "nginx:latest"},
		{"nginx:1.25", "nginx:1.25"},
		{"gcr.io/project/app", "gcr.io/project/app:latest"},
		{"localhost:5000/app", "localhost:5000/app:latest"},
		{"localhost:5000/app:v2", "localhost:5000/app:v2"},
		{"app@sha256:abcd", "app@sha256:abcd"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := imageNormalize(tc.in); got != tc.want {
				t.Errorf("imageNormalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
