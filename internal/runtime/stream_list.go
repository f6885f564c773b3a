package runtime

import (
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// streamChunk is how many items one message of a streamed list holds,
// so no message nears gRPC's size limit however many items there are.
const streamChunk = 500

// sendChunks sends items in messages of at most streamChunk; an empty
// list is one empty message.
func sendChunks[T any](items []T, send func([]T) error) error {
	if len(items) == 0 {
		return send(nil)
	}
	for len(items) > 0 {
		n := min(len(items), streamChunk)
		if err := send(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// StreamPodSandboxes is ListPodSandbox in chunks (CRIListStreaming).
func (r *Runtime) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	l, err := r.ListPodSandbox(srv.Context(), &runtimeapi.ListPodSandboxRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(l.Items, func(c []*runtimeapi.PodSandbox) error {
		return srv.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: c})
	})
}

// StreamContainers is ListContainers in chunks.
func (r *Runtime) StreamContainers(req *runtimeapi.StreamContainersRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	l, err := r.ListContainers(srv.Context(), &runtimeapi.ListContainersRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(l.Containers, func(c []*runtimeapi.Container) error {
		return srv.Send(&runtimeapi.StreamContainersResponse{Containers: c})
	})
}

// StreamContainerStats is ListContainerStats in chunks.
func (r *Runtime) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, srv grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	l, err := r.ListContainerStats(srv.Context(), &runtimeapi.ListContainerStatsRequest{Filter: req.GetFilter()})
	if err != nil {
		return err
	}
	return sendChunks(l.Stats, func(c []*runtimeapi.ContainerStats) error {
		return srv.Send(&runtimeapi.StreamContainerStatsResponse{ContainerStats: c})
	})
}
