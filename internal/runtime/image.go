package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image"
)

// imageService is CRI's ImageService over the image store. The store
// normalises references ("busybox" is docker.io/library/busybox:latest).
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	r *Runtime
}

func toCRIImage(img image.Image) *runtimeapi.Image {
	out := &runtimeapi.Image{
		Id:          img.ID,
		RepoTags:    img.RepoTags,
		RepoDigests: img.RepoDigests,
		Size:        img.Size,
		Pinned:      img.Pinned,
		Spec:        &runtimeapi.ImageSpec{Image: img.ID},
	}
	if u := img.Config.User; u != "" {
		name, _, _ := strings.Cut(u, ":")
		if n, err := strconv.ParseInt(name, 10, 64); err == nil {
			out.Uid = &runtimeapi.Int64Value{Value: n}
		} else {
			out.Username = name
		}
	}
	return out
}

func (s *imageService) ListImages(ctx context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	var want string
	if f := req.GetFilter().GetImage().GetImage(); f != "" {
		img, err := s.r.images.Get(f)
		if errors.Is(err, image.ErrNotFound) {
			return &runtimeapi.ListImagesResponse{}, nil
		}
		if err != nil {
			return nil, grpcError(err)
		}
		want = img.ID
	}
	resp := &runtimeapi.ListImagesResponse{}
	for _, img := range s.r.images.List() {
		if want == "" || img.ID == want {
			resp.Images = append(resp.Images, toCRIImage(img))
		}
	}
	return resp, nil
}

// ImageStatus returns a nil image, not an error, for an unknown one.
func (s *imageService) ImageStatus(ctx context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, grpcError(fmt.Errorf("image status: no image named: %w", errInvalid))
	}
	img, err := s.r.images.Get(ref)
	if errors.Is(err, image.ErrNotFound) {
		return &runtimeapi.ImageStatusResponse{}, nil
	}
	if err != nil {
		return nil, grpcError(err)
	}
	resp := &runtimeapi.ImageStatusResponse{Image: toCRIImage(img)}
	if req.GetVerbose() {
		resp.Info = map[string]string{
			"entrypoint": strings.Join(img.Config.Entrypoint, " "),
			"cmd":        strings.Join(img.Config.Cmd, " "),
			"lastUsed":   img.LastUsed.Format(time.RFC3339),
		}
	}
	return resp, nil
}

func (s *imageService) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, grpcError(fmt.Errorf("pull: no image named: %w", errInvalid))
	}
	var auth *image.Auth
	if a := req.GetAuth(); a != nil {
		auth = &image.Auth{Username: a.GetUsername(), Password: a.GetPassword(), Auth: a.GetAuth(),
			IdentityToken: a.GetIdentityToken(), RegistryToken: a.GetRegistryToken()}
	}
	img, err := s.r.images.Pull(ctx, ref, auth)
	if err != nil {
		return nil, grpcError(fmt.Errorf("pull %s: %w", ref, err))
	}
	return &runtimeapi.PullImageResponse{ImageRef: img.ID}, nil
}

// RemoveImage removes an image; an unknown one is not an error.
func (s *imageService) RemoveImage(ctx context.Context, req *runtimeapi.RemoveImageRequest) (*runtimeapi.RemoveImageResponse, error) {
	ref := req.GetImage().GetImage()
	if ref == "" {
		return nil, grpcError(fmt.Errorf("remove image: no image named: %w", errInvalid))
	}
	if err := s.r.images.Remove(ref); err != nil && !errors.Is(err, image.ErrNotFound) {
		return nil, grpcError(err)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}

func (s *imageService) ImageFsInfo(ctx context.Context, req *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	u, err := s.r.images.Usage()
	if err != nil {
		return nil, grpcError(err)
	}
	fs := &runtimeapi.FilesystemUsage{
		Timestamp:  time.Now().UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: u.Mountpoint},
		UsedBytes:  &runtimeapi.UInt64Value{Value: u.UsedBytes},
		InodesUsed: &runtimeapi.UInt64Value{Value: u.InodesUsed},
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{fs}, ContainerFilesystems: []*runtimeapi.FilesystemUsage{fs}}, nil
}
