package kubeletapi

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// pathSeeds are the rests of real request paths, after the endpoint's
// prefix, and their near misses.
var pathSeeds = []string{
	"default/web/nginx",
	"kube-system/etcd-node-1/etcd",
	"default/web/0c5b1a9e-4f4e-4a8e-9c59-3b1e1e0f2f9d/nginx",
	"/default/web/nginx/",
	"default/web",
	"default/web/",
	"default//nginx",
	"default/web//nginx",
	"",
	"/",
	"a/b/c/d/e",
	"ns/pod/ctr?x=1",
	"ns/pod%2Fx/c",
}

// FuzzRequestPath splits the paths of /exec/, /attach/, /run/,
// /portForward/ and /containerLogs/. On success every segment is non-empty,
// free of '/', and the segments put back together are the path without its
// outer slashes; an error quotes the path it refuses.
func FuzzRequestPath(f *testing.F) {
	for _, s := range pathSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		trimmed := strings.Trim(rest, "/")
		check := func(endpoint string, err error, segments ...string) {
			t.Helper()
			if err != nil {
				if q := strconv.Quote(rest); !strings.Contains(err.Error(), q[1:len(q)-1]) {
					t.Errorf("%s %q: error %q does not quote the path", endpoint, rest, err)
				}
				return
			}
			var kept []string
			for _, s := range segments {
				if s == "" {
					continue // the optional UID
				}
				if strings.Contains(s, "/") {
					t.Errorf("%s %q: segment %q contains a slash", endpoint, rest, s)
				}
				kept = append(kept, s)
			}
			if got := strings.Join(kept, "/"); got != trimmed {
				t.Errorf("%s %q: segments %q do not make up the path", endpoint, rest, segments)
			}
		}

		ns, pod, uid, container, err := execPath(rest)
		if err == nil && (ns == "" || pod == "" || container == "") {
			t.Errorf("execPath(%q) = %q, %q, %q: an empty name", rest, ns, pod, container)
		}
		check("exec", err, ns, pod, string(uid), container)
		if err == nil && uid == "" && len(strings.Split(trimmed, "/")) != 3 {
			t.Errorf("execPath(%q): a UID segment was dropped", rest)
		}

		ns, pod, uid, err = portForwardPath(rest)
		if err == nil && (ns == "" || pod == "") {
			t.Errorf("portForwardPath(%q) = %q, %q: an empty name", rest, ns, pod)
		}
		check("portForward", err, ns, pod, string(uid))
		if err == nil && uid == "" && len(strings.Split(trimmed, "/")) != 2 {
			t.Errorf("portForwardPath(%q): a UID segment was dropped", rest)
		}

		ns, pod, container, err = containerLogsPath(rest)
		if err == nil && (ns == "" || pod == "" || container == "") {
			t.Errorf("containerLogsPath(%q) = %q, %q, %q: an empty name", rest, ns, pod, container)
		}
		check("containerLogs", err, ns, pod, container)
	})
}

// FuzzStreamQuery reads the query of the streaming endpoints. Options:
// a stream is on exactly when its parameter is "1" or "true", a terminal
// has no separate stderr, and an error means no stream is on. Commands:
// exec's is the ?command= values as given, /run's the ?cmd= words; neither
// is ever empty without an error.
func FuzzStreamQuery(f *testing.F) {
	for _, s := range []string{
		"command=sh&command=-c&command=echo+hi&input=1&output=1&tty=1",
		"command=date&output=1&error=1",
		"output=true&error=false",
		"input=1&stdin=1",
		"tty=1",
		"",
		"cmd=cat+%2Fetc%2Fhostname",
		"cmd=++&output=1",
		"command=&output=1",
		"output=1&output=0",
		"output=%zz&error=1;x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw) // the handlers read r.URL.Query(), which drops what does not parse
		on := func(name string) bool { v := q.Get(name); return v == "1" || v == "true" }
		o, err := parseStreamOptions(q)
		if o.stdin != on("input") || o.stdout != on("output") || o.tty != on("tty") {
			t.Errorf("parseStreamOptions(%q) = %+v", raw, o)
		}
		if o.stderr != (on("error") && !o.tty) {
			t.Errorf("parseStreamOptions(%q) = %+v: stderr", raw, o)
		}
		if (err != nil) != (!o.stdin && !o.stdout && !o.stderr) {
			t.Errorf("parseStreamOptions(%q) = %+v, %v: an error exactly when no stream is on", raw, o, err)
		}

		cmd, err := execCommand(q)
		if (err != nil) != (len(q["command"]) == 0) || len(cmd) != len(q["command"]) {
			t.Errorf("execCommand(%q) = %q, %v", raw, cmd, err)
		}
		for i := range cmd {
			if cmd[i] != q["command"][i] {
				t.Errorf("execCommand(%q) = %q: argument %d changed", raw, cmd, i)
			}
		}

		cmd, err = runCommand(q)
		if (err != nil) != (len(cmd) == 0) {
			t.Errorf("runCommand(%q) = %q, %v", raw, cmd, err)
		}
		if err != nil && !strings.Contains(err.Error(), "cmd") {
			t.Errorf("runCommand(%q): error %q does not name cmd", raw, err)
		}
		if strings.Join(cmd, " ") != strings.Join(strings.Fields(q.Get("cmd")), " ") {
			t.Errorf("runCommand(%q) = %q", raw, cmd)
		}
		for _, a := range cmd {
			if a == "" || strings.ContainsAny(a, " \t\n") {
				t.Errorf("runCommand(%q) = %q: argument %q is not one word", raw, cmd, a)
			}
		}
	})
}
