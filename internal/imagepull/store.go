package imagepull

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/atomicfile"
)

// Intent is upstream's ImagePullIntent: an image (a container's image
// field) the kubelet is pulling.
type Intent = kubeletconfigv1beta1.ImagePullIntent

// The record files, as upstream's fsPullRecordsAccessor: one per image in
// pulling/, one per image ID in pulled/, named "sha256-" and the hex
// SHA-256 of the image or the image ID; a file being written ends in
// ".tmp".
const (
	recordsDir   = "image_manager"
	pullingDir   = "pulling"
	pulledDir    = "pulled"
	filePrefix   = "sha256-"
	tmpSuffix    = ".tmp"
	kindIntent   = "ImagePullIntent"
	kindPulled   = "ImagePulledRecord"
	groupVersion = "kubelet.config.k8s.io/v1beta1"
	// alphaVersion is the version upstream's kubelets before v1.35 wrote;
	// its records have the same fields and are read as such.
	alphaVersion = "kubelet.config.k8s.io/v1alpha1"
)

// store reads and writes the record files under a kubelet root
// directory. It holds no state: Manager serializes its calls.
type store struct {
	pulling, pulled string
}

// openStore makes the record directories (0700) under rootDir.
func openStore(rootDir string) (*store, error) {
	s := &store{pulling: filepath.Join(rootDir, recordsDir, pullingDir), pulled: filepath.Join(rootDir, recordsDir, pulledDir)}
	for _, d := range []string{s.pulling, s.pulled} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image pull records: %w", err)
		}
	}
	return s, nil
}

// fileName is the name of the record of key (an image or an image ID).
func fileName(key string) string {
	return fmt.Sprintf("%s%x", filePrefix, sha256.Sum256([]byte(key)))
}

// decode reads a record file as upstream's strict decoder: the kind
// expected, a version upstream writes or wrote, no unknown field.
func decode(raw []byte, kind string, into any) error {
	var meta struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return err
	}
	if meta.Kind != kind || (meta.APIVersion != groupVersion && meta.APIVersion != alphaVersion) {
		return fmt.Errorf("a %s of %s, not a %s", meta.Kind, meta.APIVersion, kind)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("data after the record")
	}
	return nil
}

// encode is a record as upstream writes it: JSON, kind and apiVersion
// first, the current version.
func encode(kind string, v any) ([]byte, error) {
	switch r := v.(type) {
	case *Intent:
		r.Kind, r.APIVersion = kind, groupVersion
	case *Record:
		r.Kind, r.APIVersion = kind, groupVersion
	}
	return json.Marshal(v)
}

// readPulled reads the record of imageRef; nil without one. A record
// that does not decode is an error: the image was pulled by a kubelet,
// with credentials unknown.
func (s *store) readPulled(imageRef string) (*Record, error) {
	raw, err := os.ReadFile(filepath.Join(s.pulled, fileName(imageRef)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r := &Record{}
	if err := decode(raw, kindPulled, r); err != nil {
		return nil, fmt.Errorf("image pulled record of %s: %w", imageRef, err)
	}
	if r.ImageRef != imageRef {
		// A hash collision, or a file put there by hand: not its record.
		return nil, nil
	}
	return r, nil
}

// writePulled writes the record of its image ID.
func (s *store) writePulled(r *Record) error {
	raw, err := encode(kindPulled, r)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.pulled, fileName(r.ImageRef)), raw, 0o600)
}

// deletePulled removes the record of imageRef.
func (s *store) deletePulled(imageRef string) error {
	return atomicfile.Remove(filepath.Join(s.pulled, fileName(imageRef)))
}

// listPulled reads every record; the files that do not decode are
// skipped, with their errors.
func (s *store) listPulled() ([]*Record, error) {
	var out []*Record
	err := s.walk(s.pulled, func(name string, raw []byte) error {
		r := &Record{}
		if err := decode(raw, kindPulled, r); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// writeIntent records that image is being pulled.
func (s *store) writeIntent(image string) error {
	raw, err := encode(kindIntent, &Intent{Image: image})
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(s.pulling, fileName(image)), raw, 0o600)
}

// deleteIntent removes the intent of image.
func (s *store) deleteIntent(image string) error {
	return atomicfile.Remove(filepath.Join(s.pulling, fileName(image)))
}

// listIntents reads every intent; the files that do not decode are
// skipped, with their errors.
func (s *store) listIntents() ([]string, error) {
	var out []string
	err := s.walk(s.pulling, func(name string, raw []byte) error {
		var in Intent
		if err := decode(raw, kindIntent, &in); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, in.Image)
		return nil
	})
	return out, err
}

// walk calls fn with each record file of dir (not the ".tmp" files of an
// interrupted write, nor anything not named as a record).
func (s *store) walk(dir string, fn func(name string, raw []byte) error) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.HasPrefix(name, filePrefix) || strings.HasSuffix(name, tmpSuffix) {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			err = fn(name, raw)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
