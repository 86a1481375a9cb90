// Command mkoci writes an OCI image layout (oci-layout, index.json and
// blobs/sha256/...) holding a single-layer image made from a directory tree.
// The layer is a gzip'd tar with fixed mtimes and uid/gid 0, so the same tree
// always gives the same digests. Standard library only.
//
//	mkoci -root DIR -out LAYOUT -ref 1.36 [-entrypoint /pause] [-cmd sh] [-env K=V] [-user 1234]
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

var epoch = time.Unix(0, 0).UTC()

func main() {
	root := flag.String("root", "", "directory tree that becomes the image's file system")
	out := flag.String("out", "", "output OCI layout directory (replaced)")
	ref := flag.String("ref", "latest", "org.opencontainers.image.ref.name of the manifest in index.json")
	arch := flag.String("arch", runtime.GOARCH, "image architecture")
	user := flag.String("user", "", "the image's user (config.User), e.g. 1234; empty: root")
	var entrypoint, cmd, env listFlag
	flag.Var(&entrypoint, "entrypoint", "entrypoint argument (repeat)")
	flag.Var(&cmd, "cmd", "cmd argument (repeat)")
	flag.Var(&env, "env", "environment variable K=V (repeat)")
	flag.Parse()
	if *root == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*root, *out, *ref, *arch, *user, entrypoint, cmd, env); err != nil {
		fmt.Fprintln(os.Stderr, "mkoci:", err)
		os.Exit(1)
	}
}

func run(root, out, ref, arch, user string, entrypoint, cmd, env []string) error {
	layer, diffID, err := buildLayer(root)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(filepath.Join(tmp, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	layerDesc, err := writeBlob(tmp, "application/vnd.oci.image.layer.v1.tar+gzip", layer)
	if err != nil {
		return err
	}
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	imageConfig := map[string]any{
		"Env":        env,
		"Entrypoint": nilIfEmpty(entrypoint),
		"Cmd":        nilIfEmpty(cmd),
		"WorkingDir": "/",
	}
	if user != "" {
		imageConfig["User"] = user
	}
	config := map[string]any{
		"created":      epoch.Format(time.RFC3339),
		"architecture": arch,
		"os":           "linux",
		"config":       imageConfig,
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history":      []map[string]any{{"created": epoch.Format(time.RFC3339), "created_by": "actorlet hack/images/mkoci"}},
	}
	configDesc, err := writeJSONBlob(tmp, "application/vnd.oci.image.config.v1+json", config)
	if err != nil {
		return err
	}
	manifest := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        configDesc,
		"layers":        []descriptor{layerDesc},
	}
	manifestDesc, err := writeJSONBlob(tmp, "application/vnd.oci.image.manifest.v1+json", manifest)
	if err != nil {
		return err
	}
	manifestDesc.Annotations = map[string]string{"org.opencontainers.image.ref.name": ref}
	manifestDesc.Platform = &platform{Architecture: arch, OS: "linux"}
	index := map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []descriptor{manifestDesc},
	}
	if err := writeJSON(filepath.Join(tmp, "index.json"), index); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(tmp, "oci-layout"), map[string]string{"imageLayoutVersion": "1.0.0"}); err != nil {
		return err
	}
	_ = os.RemoveAll(out)
	return os.Rename(tmp, out)
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// buildLayer tars root (sorted, mtime 0, uid/gid 0) and gzips it. It returns
// the compressed bytes and the digest of the uncompressed tar (the diff ID).
func buildLayer(root string) ([]byte, string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	sort.Strings(paths)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = epoch
	diff := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(zw, diff))
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, "", err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return nil, "", err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return nil, "", err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		hdr.ModTime, hdr.AccessTime, hdr.ChangeTime = epoch, time.Time{}, time.Time{}
		hdr.Format = tar.FormatPAX
		hdr.PAXRecords = nil
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, "", err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return nil, "", err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return nil, "", err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return gz.Bytes(), "sha256:" + hex.EncodeToString(diff.Sum(nil)), nil
}

func writeBlob(dir, mediaType string, data []byte) (descriptor, error) {
	sum := sha256.Sum256(data)
	hexSum := hex.EncodeToString(sum[:])
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", hexSum), data, 0o644); err != nil {
		return descriptor{}, err
	}
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hexSum, Size: int64(len(data))}, nil
}

func writeJSONBlob(dir, mediaType string, v any) (descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return descriptor{}, err
	}
	return writeBlob(dir, mediaType, data)
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
