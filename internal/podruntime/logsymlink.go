package podruntime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultContainerLogsDir is where upstream links every container's log
// for log shippers (its legacyContainerLogsDir): a fixed path, not part of
// the configuration.
const DefaultContainerLogsDir = "/var/log/containers"

const (
	logSymlinkSuffix = ".log"
	// maxFileNameLen is ext4's limit on a file name, which upstream cuts
	// the link's name to.
	maxFileNameLen = 255
)

// LogSymlink is the path of a container's log link in dir, as upstream's
// legacyLogSymlink: POD_NAMESPACE_CONTAINER-ID.log, the name before the
// suffix cut to fit a file name.
func LogSymlink(dir, podName, podNamespace, containerName, containerID string) string {
	name := fmt.Sprintf("%s_%s_%s-%s", podName, podNamespace, containerName, containerID)
	if len(name) > maxFileNameLen-len(logSymlinkSuffix) {
		name = name[:maxFileNameLen-len(logSymlinkSuffix)]
	}
	return filepath.Join(dir, name+logSymlinkSuffix)
}

// ContainerIDFromLogSymlink is the container ID at the end of a log link's
// name, as upstream's getContainerIDFromLegacyLogSymlink: what follows the
// last "-", at least 6 characters (a truncated name keeps a prefix of the
// ID, enough for the runtime to find the container).
func ContainerIDFromLogSymlink(path string) (string, error) {
	name := filepath.Base(path)
	if !strings.HasSuffix(name, logSymlinkSuffix) {
		return "", fmt.Errorf("%q does not end with %q", name, logSymlinkSuffix)
	}
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return "", fmt.Errorf("no container ID in %q", name)
	}
	id := strings.TrimSuffix(name[i+1:], logSymlinkSuffix)
	if len(id) < 6 {
		return "", fmt.Errorf("container ID %q in %q is too short", id, name)
	}
	return id, nil
}

// linkContainerLog links the container's log file from the containers' log
// directory, as upstream does once the container started; only when the
// log file exists, since a dangling link would only wait for the GC. A
// failure is logged, as upstream's, and does not fail the container.
func (r *Runtime) linkContainerLog(podName, podNamespace, containerName, containerID, logPath string) {
	dir := r.Opts.ContainerLogsDir
	if dir == "" || logPath == "" {
		return
	}
	if _, err := os.Stat(logPath); os.IsNotExist(err) {
		return
	}
	link := LogSymlink(dir, podName, podNamespace, containerName, containerID)
	err := os.MkdirAll(dir, 0o755)
	if err == nil {
		err = os.Symlink(logPath, link)
	}
	if err != nil {
		r.Opts.Log.Error().Err(err).Str("path", link).Str("container", containerID).Str("log", logPath).
			Msg("failed to create the container's log symbolic link")
	}
}

// unlinkContainerLog removes the container's log link, as upstream does as
// it removes the container.
func (r *Runtime) unlinkContainerLog(podName, podNamespace, containerName, containerID string) {
	if r.Opts.ContainerLogsDir == "" {
		return
	}
	link := LogSymlink(r.Opts.ContainerLogsDir, podName, podNamespace, containerName, containerID)
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		r.Opts.Log.Error().Err(err).Str("path", link).Str("container", containerID).
			Msg("failed to remove the container's log symbolic link")
	}
}
