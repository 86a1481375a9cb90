package messages

import (
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerGC asks the gc actor to run a container garbage-collection pass:
// dead containers, dead sandboxes, oversized logs and pod log directories.
// Sender and receiver: the gc actor (its period timer).
type ContainerGC struct{}

func (m *ContainerGC) Summary() string { return "container gc" }

// ContainerGCDone is the outcome of one container GC pass, run outside the
// gc actor's mailbox.
// Sender and receiver: the gc actor (from its own goroutine).
type ContainerGCDone struct {
	Started           time.Time
	Duration          time.Duration
	ContainersRemoved int
	SandboxesRemoved  int
	LogDirsRemoved    int
	// PodCgroupsRemoved counts the pods whose cgroups were removed.
	PodCgroupsRemoved int
	// Errs are the failures of the pass; the pass goes on past each one.
	Errs []error
}

func (m *ContainerGCDone) Summary() string {
	return fmt.Sprintf("container gc: %d containers, %d sandboxes, %d log dirs removed, %d errors in %s",
		m.ContainersRemoved, m.SandboxesRemoved, m.LogDirsRemoved, len(m.Errs), m.Duration.Round(time.Millisecond))
}

// ImageGC asks the gc actor to run an image garbage-collection pass.
// Sender and receiver: the gc actor (its period timer).
type ImageGC struct{}

func (m *ImageGC) Summary() string { return "image gc" }

// ImagesDetected is what the runtime holds, listed outside the gc actor's
// mailbox at the start of an image GC pass.
// Sender and receiver: the gc actor (from its own goroutine).
type ImagesDetected struct {
	At         time.Time
	Images     []*runtimeapi.Image
	Containers []*runtimeapi.Container
	// MountedImages are the images that containers mount as image
	// volumes, as their statuses name them.
	MountedImages []string
	// SandboxImage is the runtime's pause image ("" when it does not say).
	SandboxImage string
	// CapacityBytes and AvailableBytes are those of the filesystem holding
	// the images (0 when unknown: no threshold GC then).
	CapacityBytes, AvailableBytes uint64
	Err                           error
}

func (m *ImagesDetected) Summary() string {
	if m.Err != nil {
		return "detecting images failed: " + m.Err.Error()
	}
	used := 0
	if m.CapacityBytes > 0 {
		used = 100 - int(m.AvailableBytes*100/m.CapacityBytes)
	}
	return fmt.Sprintf("%d images, %d containers, image fs %d%% used", len(m.Images), len(m.Containers), used)
}

// ImageGCDone is the outcome of the removals of one image GC pass.
// Sender and receiver: the gc actor (from its own goroutine).
type ImageGCDone struct {
	Started       time.Time
	Duration      time.Duration
	ImagesRemoved []string
	BytesFreed    uint64
	Errs          []error
}

func (m *ImageGCDone) Summary() string {
	return fmt.Sprintf("image gc: %d images removed, %d bytes freed, %d errors in %s",
		len(m.ImagesRemoved), m.BytesFreed, len(m.Errs), m.Duration.Round(time.Millisecond))
}

// RotateLogs asks the gc actor to rotate the running containers' logs.
// Sender and receiver: the gc actor (its containerLogMonitorInterval timer).
type RotateLogs struct{}

func (*RotateLogs) Summary() string { return "rotate container logs" }

// LogsRotated is the outcome of one log rotation pass, run outside the gc
// actor's mailbox.
// Sender and receiver: the gc actor (from its own goroutine).
type LogsRotated struct {
	Started  time.Time
	Duration time.Duration
	// Rotated logs, and rotated files removed beyond containerLogMaxFiles.
	Rotated, FilesRemoved int
	Errs                  []error
}

func (m *LogsRotated) Summary() string {
	return fmt.Sprintf("log rotation: %d rotated, %d rotated files removed, %d errors in %s",
		m.Rotated, m.FilesRemoved, len(m.Errs), m.Duration.Round(time.Millisecond))
}
