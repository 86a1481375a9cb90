package kubeletapi

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/kubeletapi/nodelogs"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
)

// containerLogs serves /containerLogs/NS/POD/CONTAINER, as upstream: the
// CRI log file of the container's current (or, with previous, its previous)
// instance, read by server/logs.
func (a *Actor) containerLogs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed: /containerLogs/ takes GET", http.StatusMethodNotAllowed)
		return
	}
	ns, name, container, err := containerLogsPath(strings.TrimPrefix(r.URL.Path, "/containerLogs/"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	opts, err := logs.OptionsFromQuery(r.URL.Query(), time.Now(), a.p.SplitLogStreams)
	if err != nil {
		status := http.StatusBadRequest
		var qe *logs.QueryError
		if errors.As(err, &qe) {
			status = qe.Status
		}
		http.Error(w, fmt.Sprintf("container logs of %s/%s/%s: %v", ns, name, container, err), status)
		return
	}
	pod, err := a.podByName(r.Context(), ns, name, "", container)
	if err != nil {
		writeError(w, err)
		return
	}
	c, err := a.logContainer(r.Context(), pod, container, opts.Previous)
	if err != nil {
		writeError(w, err)
		return
	}
	st, err := a.p.Runtime.ContainerStatus(r.Context(), &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
	if err != nil {
		http.Error(w, fmt.Sprintf("container logs of %s/%s/%s: ContainerStatus %s: %v", ns, name, container, c.Id, err), http.StatusInternalServerError)
		return
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s has no log file", container, ns, name), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	running := func(ctx context.Context) (bool, error) {
		s, err := a.p.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if status.Code(err) == codes.Unavailable {
			// The runtime restarting does not end the container: keep
			// following, as upstream.
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return s.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	}
	if err := logs.Read(r.Context(), path, opts, w, w, running); err != nil && r.Context().Err() == nil {
		a.log.Warn().Err(err).Str("pod", ns+"/"+name).Str("container", container).Msg("read container log")
	}
}

// logContainer finds the container instance whose log is asked for: the
// newest one, or with previous the one before it, as upstream (which
// needs a previous instance to exist, and the current one to have started
// for the current log).
func (a *Actor) logContainer(ctx context.Context, pod *v1.Pod, container string, previous bool) (*runtimeapi.Container, error) {
	if podref.Container(pod, container) == nil {
		return nil, statusError(http.StatusBadRequest, "container %s is not valid for pod %s/%s", container, pod.Namespace, pod.Name)
	}
	cs, err := a.podContainers(ctx, pod, container)
	if err != nil {
		return nil, err
	}
	if previous {
		if len(cs) < 2 {
			return nil, statusError(http.StatusBadRequest, "previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return cs[1], nil
	}
	if len(cs) == 0 {
		return nil, statusError(http.StatusBadRequest, "container %q in pod %q is waiting to start", container, pod.Name)
	}
	return cs[0], nil
}

// systemLogs serves the node's log directory at /logs/, as upstream, but
// through an os.Root: a symbolic link that leads out of the directory is
// refused rather than followed (upstream follows it), so that a link
// planted in /var/log cannot expose the rest of the host's files. A link
// that stays inside the directory is served. The directory is opened per
// request, so that one created or replaced after start is served.
func (a *Actor) systemLogs() http.Handler {
	dir := a.p.LogDir
	if dir == "" {
		dir = nodeLogDir
	}
	return http.StripPrefix("/logs/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: /logs/ takes GET", http.StatusMethodNotAllowed)
			return
		}
		if a.p.Debugging.SystemLogQuery && a.nodeLogQuery(w, r, dir) {
			return
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			http.Error(w, fmt.Sprintf("log directory %s: %v", dir, err), http.StatusNotFound)
			return
		}
		defer root.Close()
		http.FileServerFS(escapeRefused{root.FS()}).ServeHTTP(w, r)
	}))
}

// nodeLogQuery answers /logs/?query= (enableSystemLogQuery), as
// upstream: a bad query with 400 or 406, a service query with its journal
// or log files, and it returns true; for a file query it points the request
// at the file and, as for a request without the query's parameters,
// returns false for the file server to serve it. r's path is below /logs/.
func (a *Actor) nodeLogQuery(w http.ResponseWriter, r *http.Request, dir string) bool {
	q, errs := nodelogs.Parse(r.URL.Query())
	if len(errs) > 0 {
		http.Error(w, errs.ToAggregate().Error(), http.StatusBadRequest)
		return true
	}
	if q == nil {
		return false
	}
	if r.URL.Path != "/" && r.URL.Path != "" {
		http.Error(w, "path not allowed in query mode", http.StatusNotAcceptable)
		return true
	}
	src := nodelogs.Source{Dir: dir}
	if errs := q.Validate(src.Stat); len(errs) > 0 {
		http.Error(w, errs.ToAggregate().Error(), http.StatusNotAcceptable)
		return true
	}
	if len(q.Services) == 0 {
		// One file, which Validate found under dir.
		r.URL.Path, r.URL.RawPath = q.Files[0], ""
		return false
	}
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	var out io.Writer = w
	if r.Header.Get("Accept-Encoding") == "gzip" {
		w.Header().Set("Content-Encoding", "gzip")
		gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed) // a valid level: no error
		defer gz.Close()
		out = gz
	}
	src.Copy(r.Context(), out, q)
	return true
}

// nodeLogDir is what /logs/ serves, as upstream.
const nodeLogDir = "/var/log"

// escapeRefused turns os.Root's refusal of a path that leaves the directory
// (an error of its own, "path escapes from parent", that no exported value
// matches) into fs.ErrPermission, which http.FileServerFS answers with 403
// rather than 500. Any other error but "does not exist" is answered 403 as
// well: the file is not served either way.
type escapeRefused struct{ fsys fs.FS }

func (e escapeRefused) Open(name string) (fs.File, error) {
	f, err := e.fsys.Open(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return f, err
}
