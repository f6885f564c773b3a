package plugins

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// ImageLocalityName is the ImageLocality plugin's name.
const ImageLocalityName = "ImageLocality"

const (
	imageMiB int64 = 1024 * 1024
	// The score rises linearly from 23 MiB of present images to 1000 MiB
	// per image the pod uses; most registry images fall in that range.
	imageMinThreshold          = 23 * imageMiB
	imageMaxContainerThreshold = 1000 * imageMiB

	imagePreScoreKey framework.StateKey = "PreScore" + ImageLocalityName
)

// ImageLocality favours nodes that already have the pod's images, so
// the pod starts without a pull. Each present image counts its size
// times the share of nodes that have it: an image on one node in a
// hundred adds little, which keeps every such pod from piling onto the
// one node that happens to have it ("node heating").
//
//	sum   = Σ size(img) * numNodes(img) / totalNodes   over present images
//	score = 100 * (clamp(sum, 23Mi, 1000Mi*n) - 23Mi) / (1000Mi*n - 23Mi)
//
// n counts init containers, containers and image volumes.
type ImageLocality struct {
	handle framework.Handle
}

var (
	_ framework.PreScorePlugin = (*ImageLocality)(nil)
	_ framework.ScorePlugin    = (*ImageLocality)(nil)
	_ framework.BatchScorer    = (*ImageLocality)(nil)
)

// NewImageLocality builds the plugin; it takes no arguments.
func NewImageLocality(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &ImageLocality{handle: h}, nil
}

func (p *ImageLocality) Name() string { return ImageLocalityName }

// imageState is the pod's normalized image names (one per container or
// image volume, repeats kept, as upstream counts them) and the cluster's
// node count.
type imageState struct {
	images     []string
	totalNodes int
}

func (s *imageState) Clone() framework.StateData { return s }

// PreScore normalizes the image names once rather than per node. When
// no node reports any of the pod's images every node scores 0 (a new
// image, or nodes that report none), so the plugin skips the cycle:
// the totals are the same without a pass over the nodes.
func (p *ImageLocality) PreScore(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	s := p.computeState(pod, len(nodes))
	if p.handle != nil {
		if snap := p.handle.Snapshot(); snap != nil && snap.Images != nil && !anyKnown(snap.Images, s.images) {
			return skipImageLocality
		}
	}
	state.Write(imagePreScoreKey, s)
	return nil
}

// anyKnown says whether some node reports one of images.
func anyKnown(known map[string]*framework.ImageState, images []string) bool {
	for _, name := range images {
		if _, ok := known[name]; ok {
			return true
		}
	}
	return false
}

// computeState counts all nodes of the snapshot, not only the feasible
// ones, since spread is about the cluster.
func (p *ImageLocality) computeState(pod *corev1.Pod, fallbackNodes int) *imageState {
	s := &imageState{totalNodes: fallbackNodes}
	if p.handle != nil {
		if snap := p.handle.Snapshot(); snap != nil && snap.NumNodes() > 0 {
			s.totalNodes = snap.NumNodes()
		}
	}
	s.images = make([]string, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		s.images = append(s.images, imageNormalize(pod.Spec.InitContainers[i].Image))
	}
	for i := range pod.Spec.Containers {
		s.images = append(s.images, imageNormalize(pod.Spec.Containers[i].Image))
	}
	for i := range pod.Spec.Volumes {
		if v := pod.Spec.Volumes[i].Image; v != nil && v.Reference != "" {
			s.images = append(s.images, imageNormalize(v.Reference))
		}
	}
	return s
}

// Score sums the present images' spread-scaled sizes.
func (p *ImageLocality) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := state.Read(imagePreScoreKey).(*imageState)
	if !ok {
		s = p.computeState(pod, 1)
	}
	return imageScore(ni.ImageStates, s.images, s.totalNodes), nil
}

// ScoreNodes is Score over a range of nodes, reading the state once.
func (p *ImageLocality) ScoreNodes(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo, scores []framework.NodeScore) *framework.Status {
	s, ok := state.Read(imagePreScoreKey).(*imageState)
	if !ok {
		s = p.computeState(pod, 1)
	}
	for i, ni := range nodes {
		scores[i].Score = imageScore(ni.ImageStates, s.images, s.totalNodes)
	}
	return nil
}

func (p *ImageLocality) ScoreExtensions() framework.ScoreExtensions { return nil }

// imageScore is the pure scoring function; it allocates nothing.
func imageScore(states map[string]*framework.ImageState, images []string, totalNodes int) int64 {
	if len(images) == 0 || totalNodes <= 0 {
		return 0
	}
	var sum int64
	for _, name := range images {
		if st, ok := states[name]; ok {
			spread := float64(st.NumNodes) / float64(totalNodes)
			sum += int64(float64(st.Size) * spread)
		}
	}
	maxThreshold := imageMaxContainerThreshold * int64(len(images))
	sum = min(max(sum, imageMinThreshold), maxThreshold)
	return framework.MaxNodeScore * (sum - imageMinThreshold) / (maxThreshold - imageMinThreshold)
}

// imageNormalize adds the implicit ":latest" tag the runtime reports, so
// "nginx" in a pod matches "nginx:latest" on the node. A name whose last
// ':' is in the registry host ("host:5000/app") has no tag; a digest
// reference ("app@sha256:…") keeps its form.
func imageNormalize(name string) string {
	if strings.LastIndex(name, ":") <= strings.LastIndex(name, "/") {
		return name + ":latest"
	}
	return name
}
