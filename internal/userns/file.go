package userns

import (
	"encoding/json"
	"errors"
	"fmt"
)

// FileName is the file in the pod's directory that records its range,
// upstream's mappingsFile: a node moved between actorlet and the upstream
// kubelet keeps its pods' ranges.
const FileName = "userns"

// IDMapping is one mapping of a pod's file, in upstream's JSON shape.
type IDMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// File is the content of a pod's userns file, upstream's userNamespace.
type File struct {
	UIDMappings []IDMapping `json:"uidMappings"`
	GIDMappings []IDMapping `json:"gidMappings"`
}

// NewFile is the file of a pod whose range starts at host ID first: the
// same single mapping for users and groups, container ID 0 at first.
func NewFile(first, length uint32) File {
	m := IDMapping{HostID: first, ContainerID: 0, Length: length}
	return File{UIDMappings: []IDMapping{m}, GIDMappings: []IDMapping{m}}
}

// Marshal is the file's content.
func (f File) Marshal() ([]byte, error) { return json.Marshal(f) }

// ParseFile reads a pod's userns file and returns its range, with
// upstream's checks and messages: one mapping, the same for users and
// groups, mapping container ID 0 (what upstream writes, and what runtimes
// assume).
func ParseFile(content []byte) (first, length uint32, err error) {
	var f File
	if err := json.Unmarshal(content, &f); err != nil {
		return 0, 0, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	switch {
	case len(f.UIDMappings) != 1:
		//lint:ignore ST1005 upstream's message, full stop included
		return 0, 0, errors.New("invalid user namespace configuration: no more than one mapping allowed.")
	case len(f.UIDMappings) != len(f.GIDMappings):
		//lint:ignore ST1005 upstream's message, full stop included
		return 0, 0, errors.New("invalid user namespace configuration: GID and UID mappings should be identical.")
	case f.UIDMappings[0] != f.GIDMappings[0]:
		return 0, 0, errors.New("invalid user namespace configuration: GID and UID mapping should be identical")
	case f.UIDMappings[0].ContainerID != 0:
		return 0, 0, errors.New("invalid user namespace configuration: UID 0 must be mapped")
	}
	return f.UIDMappings[0].HostID, f.UIDMappings[0].Length, nil
}
