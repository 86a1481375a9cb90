package fakecri

import (
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageSize is the size the fake reports for every image.
const imageSize = 1 << 20

// AddImage makes the runtime hold the image, as if it had been pulled, and
// returns its ID.
func (r *Runtime) AddImage(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addImage(name)
}

func (r *Runtime) addImage(name string) string {
	id := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(name)))
	img, ok := r.images[id]
	if !ok {
		img = &runtimeapi.Image{Id: id, Size: imageSize}
		r.images[id] = img
	}
	if !slices.Contains(img.RepoTags, name) {
		img.RepoTags = append(img.RepoTags, name)
	}
	return id
}

// findImage returns the image with ref as its ID or one of its names.
func (r *Runtime) findImage(ref string) *runtimeapi.Image {
	if img, ok := r.images[ref]; ok {
		return img
	}
	for _, img := range r.images {
		if slices.Contains(img.RepoTags, ref) {
			return img
		}
	}
	return nil
}

// ListImages lists every image.
func (r *Runtime) ListImages(ctx context.Context, _ *runtimeapi.ListImagesRequest, _ ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	if err := r.begin(ctx, "ListImages"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	out := &runtimeapi.ListImagesResponse{}
	for _, id := range slices.Sorted(maps.Keys(r.images)) {
		out.Images = append(out.Images, proto.Clone(r.images[id]).(*runtimeapi.Image))
	}
	return out, nil
}

// ImageStatus returns the image, or no image (and no error) when the
// runtime does not hold it, as the CRI asks.
func (r *Runtime) ImageStatus(ctx context.Context, in *runtimeapi.ImageStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.begin(ctx, "ImageStatus"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	out := &runtimeapi.ImageStatusResponse{}
	if img := r.findImage(in.GetImage().GetImage()); img != nil {
		out.Image = proto.Clone(img).(*runtimeapi.Image)
	}
	return out, nil
}

// PullImage makes the runtime hold the image: every name pulls.
func (r *Runtime) PullImage(ctx context.Context, in *runtimeapi.PullImageRequest, _ ...grpc.CallOption) (*runtimeapi.PullImageResponse, error) {
	if err := r.begin(ctx, "PullImage"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	return &runtimeapi.PullImageResponse{ImageRef: r.addImage(in.GetImage().GetImage())}, nil
}

// RemoveImage removes the image; removing one that is gone succeeds.
func (r *Runtime) RemoveImage(ctx context.Context, in *runtimeapi.RemoveImageRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveImageResponse, error) {
	if err := r.begin(ctx, "RemoveImage"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	if img := r.findImage(in.GetImage().GetImage()); img != nil {
		delete(r.images, img.Id)
	}
	return &runtimeapi.RemoveImageResponse{}, nil
}
