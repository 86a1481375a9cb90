package gc

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// TestImageGC: with the image GC thresholds lowered so that the image
// filesystem is always over them, image GC removes an unused image and keeps
// the image a running container uses and the runtime's sandbox image, then
// says it could not free enough (FreeDiskSpaceFailed).
func TestImageGC(t *testing.T) {
	n := newNode(t, "")
	// Both runs of actorlet and the images in between are this test's.
	env.HoldRuntime(t)
	t.Cleanup(func() { n.Stop(syscall.SIGKILL); restoreImages(t, n) })

	// A first run with the default thresholds starts a pod that uses
	// busybox; the pod keeps running when actorlet stops.
	n.WriteManifest("user.yaml", manifest("user", agent.SleepSpec("sleep", n.busybox(), 2)))
	n.Start()
	n.Running("user", 60*time.Second)
	n.Stop(syscall.SIGTERM)

	unused := "docker.io/library/actorlet-gc-test:" + randomSuffix()
	unusedID := pushAndPull(t, n, unused)
	t.Cleanup(func() { removeImage(t, n, unusedID) })

	// The second run: every pass finds the disk over the high threshold,
	// and a minimum age of a nanosecond lets the image go on the pass at
	// start (0 would be defaulted to 2 minutes).
	n.configure("imageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\nimageMinimumGCAge: 1ns\n")
	n.Start()
	n.Eventually("an image GC pass", 3*20*time.Second, func() error {
		if len(n.entries("image gc done")) == 0 {
			return fmt.Errorf("no image GC pass logged yet")
		}
		return nil
	})
	removed := map[string]string{}
	for _, e := range n.entries("removed image") {
		removed[e.str("image")] = e.str("reason")
	}
	t.Logf("image GC removed %v", removed)
	if removed[unusedID] != "space" {
		t.Errorf("removed images %v: want %s (%s) for space", removed, unusedID, unused)
	}
	if imageID(t, n, unused) != "" {
		t.Errorf("%s is still in the runtime", unused)
	}
	for _, keep := range []string{n.Env.BusyboxImage, n.Env.PauseImage} {
		id := imageID(t, n, keep)
		if id == "" {
			t.Errorf("%s (used by a running container, or the sandbox image) was removed", keep)
		}
		if _, ok := removed[id]; ok {
			t.Errorf("%s (%s) logged as removed", keep, id)
		}
	}
	if len(n.entriesWith("event", "FreeDiskSpaceFailed")) == 0 {
		t.Errorf("no FreeDiskSpaceFailed event: a threshold of 1%% cannot be met")
	}
}

// imageID is the ID of the image ref in the runtime, "" when absent.
func imageID(t *testing.T, n *node, ref string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := n.Img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	if err != nil {
		t.Fatalf("ImageStatus %s: %v", ref, err)
	}
	return st.GetImage().GetId()
}

func removeImage(t *testing.T, n *node, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n.Img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: id}}); err != nil {
		t.Errorf("remove test image %s: %v", id, err)
	}
}

// restoreImages pulls busybox and pause back from the local registry if
// they went: every other test needs them.
func restoreImages(t *testing.T, n *node) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ref := range []string{n.Env.BusyboxImage, n.Env.PauseImage} {
		if imageID(t, n, ref) != "" {
			continue
		}
		t.Errorf("%s was removed; pulling it back", ref)
		if _, err := n.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
			t.Errorf("pull %s back: %v", ref, err)
		}
	}
}

// pushAndPull pushes a one-file image to the environment's registry as ref
// (docker.io/library/NAME:TAG, which the runtime pulls from that registry)
// and pulls it into the runtime through CRI. It returns the image's ID.
// The image holds nothing the other images hold, so that removing it
// removes no name of theirs.
func pushAndPull(t *testing.T, n *node, ref string) string {
	t.Helper()
	name, tag, _ := strings.Cut(strings.TrimPrefix(ref, "docker.io/"), ":")
	layer, diffID := tinyLayer(t)
	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{diffID}},
	})
	reg := "http://" + n.Env.Registry + "/v2/" + name
	desc := func(mediaType string, b []byte) map[string]any {
		return map[string]any{"mediaType": mediaType, "digest": digest(b), "size": len(b)}
	}
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": desc("application/vnd.oci.image.config.v1+json", config),
		"layers": []any{desc("application/vnd.oci.image.layer.v1.tar+gzip", layer)},
	})
	for _, blob := range [][]byte{layer, config} {
		pushBlob(t, reg, blob)
	}
	do(t, http.MethodPut, reg+"/manifests/"+tag, "application/vnd.oci.image.manifest.v1+json", manifest, http.StatusCreated)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n.Img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	id := imageID(t, n, ref)
	if id == "" {
		t.Fatalf("%s pulled but not in the runtime", ref)
	}
	return id
}

// tinyLayer is a gzip'd tar holding one file, with its uncompressed digest.
func tinyLayer(t *testing.T) (layer []byte, diffID string) {
	t.Helper()
	var tarred bytes.Buffer
	tw := tar.NewWriter(&tarred)
	content := []byte("an image for actorlet's image GC test\n")
	if err := tw.WriteHeader(&tar.Header{Name: "actorlet-gc-test", Mode: 0o644, Size: int64(len(content)), ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	if _, err := zw.Write(tarred.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return zipped.Bytes(), digest(tarred.Bytes())
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// pushBlob uploads blob to the repository at reg (…/v2/NAME) unless it is
// there already: a monolithic upload, POST then PUT.
func pushBlob(t *testing.T, reg string, blob []byte) {
	t.Helper()
	d := digest(blob)
	if resp, err := http.Head(reg + "/blobs/" + d); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
	resp := do(t, http.MethodPost, reg+"/blobs/uploads/", "", nil, http.StatusAccepted)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatalf("upload location %q: %v", resp.Header.Get("Location"), err)
	}
	base, _ := url.Parse(reg)
	loc = base.ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", d)
	loc.RawQuery = q.Encode()
	do(t, http.MethodPut, loc.String(), "application/octet-stream", blob, http.StatusCreated)
}

func do(t *testing.T, method, u, contentType string, body []byte, want int) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %s: %s", method, u, resp.Status, b)
	}
	return resp
}
