package podruntime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
	"github.com/actorlet/actorlet/internal/volume"
)

// Upstream's bounds of termination messages (pkg/kubelet/container).
const (
	// maxTerminationMessageLength is how much of the end of its termination
	// message file a container's message keeps.
	maxTerminationMessageLength = 4 << 10
	// maxTerminationMessageLogLength and maxTerminationMessageLogLines bound
	// the end of the log that FallbackToLogsOnError takes.
	maxTerminationMessageLogLength = 2 << 10
	maxTerminationMessageLogLines  = 80
	// maxPodTerminationMessageLength is shared by all the containers of a
	// pod, each getting an equal part, in the status sent to the API.
	maxPodTerminationMessageLength = 12 << 10
)

// reasonContainerCannotRun is the reason of a container that could not even
// start: it has no log to fall back to.
const reasonContainerCannotRun = "ContainerCannotRun"

// podContainerDir is ROOT/pods/UID/containers/NAME, where the termination
// message files of the container's instances are, as upstream's
// getPodContainerDir. It goes with the pod's directory.
func podContainerDir(root string, uid types.UID, name string) string {
	return filepath.Join(volume.PodDir(root, uid), "containers", name)
}

// terminationMessageMounts is the bind mount of a new file, made for this
// instance of the container, at its terminationMessagePath, as upstream's
// makeMounts: the file is under podContainerDir with a random name, since
// the container's ID is not known before it is created, and is writable by
// any user, so that a container not running as root can write its message.
// Nothing is mounted without a path or a root directory; a file that cannot
// be made is reported as a Warning event and the container runs without
// it, as upstream (which logs it).
func terminationMessageMounts(pod *v1.Pod, c *v1.Container, opts Options) []*runtimeapi.Mount {
	if c.TerminationMessagePath == "" || opts.RootDir == "" {
		return nil
	}
	hostPath, err := createTerminationMessageFile(podContainerDir(opts.RootDir, pod.UID, c.Name))
	if err != nil {
		if opts.Recorder != nil {
			opts.Recorder.Event(objectRef(pod, podref.FieldPath(pod, c.Name)), v1.EventTypeWarning, events.FailedToCreateContainer,
				fmt.Sprintf("Error on creating termination-log file: %v", err))
		}
		return nil
	}
	return []*runtimeapi.Mount{{
		HostPath:       hostPath,
		ContainerPath:  absolutePath(c.TerminationMessagePath),
		SelinuxRelabel: selinuxEnabled(),
	}}
}

// createTerminationMessageFile makes an empty file of mode 0666 (whatever
// the umask) under dir, which it makes (0750) if need be. Its name is eight
// random hex digits, as upstream's; an existing file is never reused, so
// that a new instance never truncates the message of an older one.
func createTerminationMessageFile(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	for range 8 {
		p := filepath.Join(dir, fmt.Sprintf("%08x", rand.Uint32()))
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
		if err := os.Chmod(p, 0o666); err != nil {
			return "", err
		}
		return p, nil
	}
	return "", fmt.Errorf("no free name for a termination-log file in %s", dir)
}

// absolutePath is upstream's MakeAbsolutePath on Linux.
func absolutePath(p string) string {
	return filepath.Clean("/" + p)
}

// exitMessage is the message of a container instance, as upstream's
// convertToKubeContainerStatus: the runtime's, followed for an exited one
// by ": " and its termination message. Path and policy are read from the
// container's annotations, so that containers made before a restart of
// actorlet (or by a kubelet) get theirs too.
func exitMessage(s *runtimeapi.ContainerStatus) string {
	msg := s.Message
	if s.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		return msg
	}
	fallback := v1.TerminationMessagePolicy(s.Annotations[AnnotationContainerTerminationMessagePolicy]) == v1.TerminationMessageFallbackToLogsOnError &&
		s.ExitCode != 0 && s.Reason != reasonContainerCannotRun
	tmsg, checkLogs := readTerminationMessage(s.Mounts, s.Annotations[AnnotationContainerTerminationMessagePath], fallback)
	if checkLogs {
		tmsg = lastLogLines(s.LogPath)
	}
	if tmsg == "" {
		return msg
	}
	if msg != "" {
		msg += ": "
	}
	return msg + tmsg
}

// readTerminationMessage is upstream's getTerminationMessage: the last
// maxTerminationMessageLength bytes of the host file mounted at path, and
// whether the log should be read instead, which it should when fallback
// holds and the container wrote nothing (an empty file, none mounted, or
// one removed with the pod's directory). An unreadable file gives an error
// message and no fallback.
func readTerminationMessage(mounts []*runtimeapi.Mount, path string, fallback bool) (string, bool) {
	if path == "" {
		return "", fallback
	}
	path = absolutePath(path)
	for _, m := range mounts {
		if m.ContainerPath != path {
			continue
		}
		data, err := readAtMost(m.HostPath, maxTerminationMessageLength)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fallback
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", m.HostPath, err), false
		}
		return string(data), fallback && len(data) == 0
	}
	return "", fallback
}

// readAtMost is the last max bytes of the file at path, as upstream's
// tail.ReadAtMost.
func readAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	if size > max {
		size = max
	}
	data := make([]byte, size)
	n, err := f.ReadAt(data, info.Size()-size)
	if n == len(data) {
		err = nil
	}
	return data[:n], err
}

// lastLogLines is upstream's readLastStringFromContainerLogs: the last
// maxTerminationMessageLogLines lines of the container's log, both streams,
// of which the last maxTerminationMessageLogLength bytes. The read does not
// follow the log, so it needs no context.
func lastLogLines(path string) string {
	lines := int64(maxTerminationMessageLogLines)
	buf := &tailBuffer{max: maxTerminationMessageLogLength}
	if err := logs.Read(context.Background(), path, logs.Options{TailLines: &lines}, buf, buf, nil); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(buf.b)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	b   []byte
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) >= t.max {
		t.b = append(t.b[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if drop := len(t.b) + len(p) - t.max; drop > 0 {
		t.b = append(t.b[:0], t.b[drop:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

// truncateTerminationMessages cuts the termination messages of the status
// to an equal part each of maxPodTerminationMessageLength, as upstream's
// status manager does before it sends a status (normalizeStatus). The
// cut is by bytes, as upstream's.
func truncateTerminationMessages(pod *v1.Pod, s *v1.PodStatus) {
	each := maxPodTerminationMessageLength
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		each /= n
	}
	cut := func(st *v1.ContainerState) {
		if t := st.Terminated; t != nil && len(t.Message) > each {
			// A copy: the state may be shared with the previous status.
			cut := *t
			cut.Message = t.Message[:each]
			st.Terminated = &cut
		}
	}
	for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			cut(&list[i].State)
			cut(&list[i].LastTerminationState)
		}
	}
}
