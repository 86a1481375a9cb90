// Package systemdunit reads the settings of a systemd service unit that
// decide its command line, and expands it as systemd does: the tests check
// kubeadm's drop-in with it, and hack/cluster's systemctl stand-in runs
// the kubelet from it as systemd would.
package systemdunit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Unit is what a [Service] section sets that decides the command line:
// Environment= assignments, EnvironmentFile= paths (a leading "-": a
// missing file is no error) and the last ExecStart=.
type Unit struct {
	env      map[string]string
	envFiles []string
	exec     string
}

// Parse reads a unit file or drop-in as systemd.syntax(7) and
// systemd.exec(5) say, for the settings unit holds: comments start with
// "#" or ";", an empty ExecStart= resets the list, Environment= takes
// space-separated, double-quoted assignments.
func Parse(path string) (*Unit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	u := &Unit{env: map[string]string{}}
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: not a setting: %q", path, n, line)
		}
		switch strings.TrimSpace(key) {
		case "Environment":
			words, err := splitQuoted(value)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			for _, w := range words {
				k, v, ok := strings.Cut(w, "=")
				if !ok {
					return nil, fmt.Errorf("%s:%d: not an assignment: %q", path, n, w)
				}
				u.env[k] = v
			}
		case "EnvironmentFile":
			u.envFiles = append(u.envFiles, value)
		case "ExecStart":
			u.exec = value // "" resets, the last one counts for a simple service
		}
	}
	return u, s.Err()
}

// splitQuoted splits s at spaces outside double quotes, removing the quotes.
func splitQuoted(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			in, any = !in, true
		case (r == ' ' || r == '\t') && !in:
			if any {
				words = append(words, w.String())
			}
			w.Reset()
			any = false
		default:
			w.WriteRune(r)
			any = true
		}
	}
	if in {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if any {
		words = append(words, w.String())
	}
	return words, nil
}

// readEnvFile reads an EnvironmentFile: KEY=VALUE lines, VALUE possibly
// double-quoted with backslash escapes (kubeadm writes Go's %q).
func readEnvFile(path string, env map[string]string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return fmt.Errorf("%s:%d: not an assignment: %q", path, n+1, line)
		}
		if strings.HasPrefix(v, `"`) {
			if v, err = strconv.Unquote(v); err != nil {
				return fmt.Errorf("%s:%d: %w", path, n+1, err)
			}
		}
		env[strings.TrimSpace(k)] = v
	}
	return nil
}

// CommandLine is the command systemd runs for u: the environment files
// read (at host(path)) over Environment=, then ExecStart's words, where
// "$VAR" becomes the words of VAR's value (none when it is unset or empty)
// and "${VAR}" one word, as systemd.service(5) says.
func (u *Unit) CommandLine(host func(string) string) ([]string, error) {
	env := map[string]string{}
	for k, v := range u.env {
		env[k] = v
	}
	for _, f := range u.envFiles {
		optional := strings.HasPrefix(f, "-")
		path := host(strings.TrimPrefix(f, "-"))
		if err := readEnvFile(path, env); err != nil {
			if optional && os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
	}
	words, err := splitQuoted(u.exec)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
			out = append(out, env[w[2:len(w)-1]])
		case strings.HasPrefix(w, "$"):
			out = append(out, strings.Fields(env[w[1:]])...)
		default:
			out = append(out, w)
		}
	}
	return out, nil
}
