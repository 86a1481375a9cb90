package systemdunit

import (
	"os"
	"strings"
	"testing"
)

// TestCommandLine checks the expansion against what systemd does with a
// drop-in like kubeadm's.
func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dropIn := write("10.conf", `[Service]
# a comment
Environment="A=--a=1 --b=2"
Environment="B=--c=3" "C=x y"
EnvironmentFile=-/flags.env
EnvironmentFile=-/missing.env
ExecStart=
ExecStart=/bin/agent $A $B $FLAGS $MISSING ${C}
`)
	write("flags.env", "FLAGS=\"--hostname-override=n1 --node-ip=\\\"10.0.0.1\\\"\"\n")
	u, err := Parse(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	got, err := u.CommandLine(func(p string) string { return dir + p })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/agent", "--a=1", "--b=2", "--c=3", "--hostname-override=n1", `--node-ip="10.0.0.1"`, "x y"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("command line %q, want %q", got, want)
	}
}
