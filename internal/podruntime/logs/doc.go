// Package logs reads container logs as the runtime writes them, for the
// kubelet's /containerLogs/NS/POD/CONTAINER: OptionsFromQuery reads the
// request's query as upstream's kubelet does, and Read writes the log of one
// container to the response.
//
// Both formats upstream reads are read: the CRI format
// (`<RFC3339Nano timestamp> <stdout|stderr> <P|F> <content>`) and docker's
// older JSON lines. Read is upstream's k8s.io/cri-client/pkg/logs, rewritten,
// with these differences:
//
//   - tailLines counts lines, not the fragments the runtime splits a long
//     line into, so a tail starts at a line's first fragment (unless a line
//     of the other stream came between its fragments);
//   - since keeps or skips a line whole, by its first fragment's timestamp;
//   - a follow moves across a rotation (the runtime renaming the log to
//     path.<timestamp> and reopening path) once the new file has data, after
//     the last lines of the renamed one; upstream moves as soon as the new
//     file appears and loses what the runtime still writes to the old one;
//   - the response is flushed whenever the reader has caught up with the
//     log rather than after every line: a follower sees each line at once,
//     and reading a long log does not cost one HTTP chunk per line.
package logs
