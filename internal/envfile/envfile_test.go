package envfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// shellValue is what a POSIX shell that sources the file gives key, as
// upstream's test checks its parser against.
func shellValue(t *testing.T, path, key string) string {
	t.Helper()
	out, err := exec.Command("bash", "--posix", "-c", `set -a && . "$1" && printf '%s' "${`+key+`}"`, "sh", path).CombinedOutput()
	if err != nil {
		t.Fatalf("the shell refused the file: %v: %s", err, out)
	}
	return string(out)
}

func write(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "env")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestValue is upstream's env_util_test.go (its cases and its check
// against bash), plus what it leaves out: the first assignment wins,
// errors after it are not seen, export, CRLF, a line too long.
func TestValue(t *testing.T) {
	_, bashErr := exec.LookPath("bash")
	tests := []struct {
		name    string
		content string
		key     string
		want    string
		wantErr string // a part of the error; "" for none
		// notShell: the answer is upstream's parser's, not a shell's.
		notShell bool
	}{
		{name: "ignore leading whitespace", content: "   KEY1='val1'\n\t\tKEY2='val2'\nKEY3='val3'\n", key: "KEY2", want: "val2"},
		{name: "ignore blank and comment lines", content: "# comment\n\nKEY1='foo'\n   # another comment\n\nKEY2='bar'\n", key: "KEY2", want: "bar"},
		{name: "whitespace lines are blank", content: " \t \nKEY1='foo'\n", key: "KEY1", want: "foo"},
		{name: "whitespace around = not allowed, before the key's line", content: "KEY1 = 'val1'\nKEY2=   'val2'\nKEY3='val3'\n", key: "KEY2", wantErr: "invalid environment variable format at line 1: whitespace before '=' is not allowed"},
		{name: "key not found returns empty", content: "KEY1='foo'\nKEY2='bar'\n", key: "KEY3", want: ""},
		{name: "value with embedded #", content: "KEY1='foo#notcomment'\nKEY2='bar'\n", key: "KEY1", want: "foo#notcomment"},
		{name: "key with whitespace", content: "KEY1 ='foo'\nKEY2='bar'\n", key: "KEY1", wantErr: "whitespace before '=' is not allowed"},
		{name: "tab before =", content: "KEY1\t='foo'\n", key: "KEY1", wantErr: "at line 1: whitespace before '=' is not allowed"},
		{name: "value with leading and trailing whitespace", content: "KEY1='   foo bar   '\nKEY2='bar'\n", key: "KEY1", want: "   foo bar   "},
		{name: "multiple comments and blank lines", content: "# first comment\n\n# second comment\nKEY1='foo'\n\n# third comment\nKEY2='bar'\n", key: "KEY2", want: "bar"},
		{name: "empty value", content: "KEY1='foo'\nKEY2=''\nKEY3='bar'\n", key: "KEY2", want: ""},
		{name: "empty name", content: "='foo'\nKEY2='bar'\n", key: "KEY2", wantErr: "invalid environment variable format at line 1: empty variable name"},
		{name: "multiple = in value", content: "KEY1='foo=bar=baz'\nKEY2='bar'\n", key: "KEY1", want: "foo=bar=baz"},
		{name: "comment after key value pair", content: "KEY1='foo'\nKEY2='bar' # comment\n", key: "KEY2", want: "bar"},
		{name: "comment right after the quote", content: "KEY1='foo'#comment\n", key: "KEY1", want: "foo", notShell: true},
		{name: "whitespace after the closing quote", content: "KEY1='foo' \t\n", key: "KEY1", want: "foo"},
		{name: "no newline at the end", content: "KEY1='foo'\nKEY2='bar'", key: "KEY2", want: "bar"},
		{name: "$VAR is not expanded", content: "KEY1='$VAR'\nKEY2='bar'", key: "KEY1", want: "$VAR"},
		{name: "${VAR} is not expanded", content: "KEY1='${VAR}'\nKEY2='bar'", key: "KEY1", want: "${VAR}"},
		{name: "$HOME is not expanded", content: "KEY1='$HOME'\nKEY2='bar'", key: "KEY1", want: "$HOME"},
		{name: "mixed shell variable syntax is not expanded", content: "KEY1='foo$BAR-${HOME}_$'\nKEY2='bar'", key: "KEY1", want: "foo$BAR-${HOME}_$"},
		{name: "a line without =", content: "KEY1='foo'\nINVALID_LINE\nKEY2='bar'\n", key: "KEY2", wantErr: "invalid environment variable format at line 2: missing '='"},
		{name: "unquoted value", content: "KEY1='foo'\nKEY2=bar\nKEY3='baz'\n", key: "KEY2", wantErr: "at line 2: value must be enclosed in single quotes"},
		{name: "double quoted value", content: "KEY1='foo'\nKEY2=\"bar\"\nKEY3='baz'\n", key: "KEY2", wantErr: "at line 2: value must be enclosed in single quotes"},
		{name: "nothing after =", content: "KEY1=\n", key: "KEY1", wantErr: "at line 1: value must be enclosed in single quotes"},
		{name: "adjacent quoted strings", content: "KEY1='foo''bar'", key: "KEY1", wantErr: "at line 1: unexpected content after closing quote"},
		{name: "an unclosed quote closes on a later line", content: "KEY1='foo'\nKEY2='bar\nKEY3='baz'\n", key: "KEY2", wantErr: "at line 3: unexpected content after closing quote"},
		{name: "an unclosed quote at the end", content: "KEY1='foo'\n\nKEY2='bar\nbaz\n", key: "KEY1", want: "foo", notShell: true},
		{name: "an unclosed quote before the key", content: "KEY1='foo'\n\nKEY2='bar\nbaz\n", key: "KEY9", wantErr: "invalid environment variable format starting at line 3: unclosed single quote"},
		{name: "content after closing quote", content: "KEY1='foo'\nKEY2='bar'baz\nKEY3='baz'\n", key: "KEY2", wantErr: "at line 2: unexpected content after closing quote"},
		{name: "empty quotes", content: "KEY1=''\nKEY2='   '\nKEY3='bar'\n", key: "KEY1", want: ""},
		{name: "spaces kept", content: "KEY1='  foo  bar  '\nKEY2='bar'\n", key: "KEY1", want: "  foo  bar  "},
		{name: "special characters", content: "KEY1='!@#$%^&*()_+-=[]{}|;:,.<>?/'\nKEY2='bar'\n", key: "KEY1", want: "!@#$%^&*()_+-=[]{}|;:,.<>?/"},
		{name: "backslash escapes are literal", content: `KEY1='line1\nline2\tline3'` + "\nKEY2='bar'\n", key: "KEY1", want: `line1\nline2\tline3`},
		{name: "unicode", content: "KEY1='中文 Español Français 🌍'\nKEY2='bar'\n", key: "KEY1", want: "中文 Español Français 🌍"},
		{name: "backslashes", content: `KEY1='path\\to\\file'` + "\n", key: "KEY1", want: `path\\to\\file`},
		{name: "an escaped single quote ends the value", content: `KEY1='value with \'nested\' quotes'` + "\nKEY2='bar'\n", key: "KEY1", wantErr: "unexpected content after closing quote"},
		{name: "double quotes within", content: `KEY1='value with "nested" quotes'` + "\n", key: "KEY1", want: `value with "nested" quotes`},
		{name: "JSON", content: `KEY1='{"name": "test", "value": 123, "nested": {"key": "val"}}'` + "\n", key: "KEY1", want: `{"name": "test", "value": 123, "nested": {"key": "val"}}`},
		{name: "URL", content: "KEY1='https://example.com/path?query=value&another=param'\n", key: "KEY1", want: "https://example.com/path?query=value&another=param"},
		{name: "regex", content: `KEY1='^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$'` + "\n", key: "KEY1", want: `^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$`},
		{name: "multi-line with indentation", content: "KEY1='line one\n  line two with spaces\n    line three'\nKEY2='bar'\n", key: "KEY1", want: "line one\n  line two with spaces\n    line three"},
		{name: "multi-line with empty lines and comments", content: "KEY1='line1\n\n# not a comment\n\nline5'\nKEY2='bar'\n", key: "KEY1", want: "line1\n\n# not a comment\n\nline5"},
		{name: "multi-line with trailing spaces", content: "KEY1='line1\nline3   '\n", key: "KEY1", want: "line1\nline3   "},
		{name: "multi-line, then the key", content: "KEY1='a\nb'\nKEY2='bar'\n", key: "KEY2", want: "bar"},
		{name: "multi-line, error lines count from the file", content: "KEY1='a\nb'\nKEY2=bar\n", key: "KEY2", wantErr: "at line 3: value must be enclosed in single quotes"},
		{name: "multi-line, content after its closing quote", content: "KEY1='a\nb' c\n", key: "KEY1", wantErr: "at line 2: unexpected content after closing quote"},
		{name: "a certificate", content: "KEY1='-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END CERTIFICATE-----'\n", key: "KEY1", want: "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END CERTIFICATE-----"},
		{name: "whitespace after = assigns empty", content: "KEY1= 'val1'\n", key: "KEY1", want: "", notShell: true},
		{name: "whitespace after = skips the line for another key", content: "KEY1= 'val1'\nKEY2='bar'\n", key: "KEY2", want: "bar", notShell: true},
		{name: "the first assignment wins", content: "KEY1='first'\nKEY1='second'\n", key: "KEY1", want: "first", notShell: true},
		{name: "errors after the key are not seen", content: "KEY1='foo'\nnot a line\n", key: "KEY1", want: "foo", notShell: true},
		{name: "export never matches", content: "export KEY1='foo'\n", key: "KEY1", want: "", notShell: true},
		{name: "CRLF line ends", content: "KEY1='foo'\r\nKEY2='bar'\r\n", key: "KEY2", want: "bar", notShell: true},
		{name: "a line longer than the scanner's buffer", content: "KEY1='" + strings.Repeat("x", 70*1024) + "'\n", key: "KEY1", wantErr: "error reading environment variable file"},
		{name: "an empty file", content: "", key: "KEY1", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, tt.content)
			got, err := Value(path, tt.key)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Value = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Value = %q, %v; want %q", got, err, tt.want)
			}
			if !tt.notShell && bashErr == nil {
				if sh := shellValue(t, path, tt.key); sh != got {
					t.Errorf("the shell gives %q, Value %q", sh, got)
				}
			}
		})
	}
}

func TestValueErrorsHoldNoValue(t *testing.T) {
	path := write(t, "SECRET='hunter2'x\n")
	_, err := Value(path, "SECRET")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v: want one without the value", err)
	}
}

func TestValueFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
		notExist         bool
	}{
		{name: "missing", path: filepath.Join(dir, "none"), want: `failed to open environment variable file "` + filepath.Join(dir, "none") + `"`, notExist: true},
		{name: "a directory", path: dir, want: "not a regular file"},
		{name: "a FIFO is refused without waiting for a writer", path: fifo, want: "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Value(tt.path, "K")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Value: %v, want an error with %q", err, tt.want)
			}
			if errors.Is(err, os.ErrNotExist) != tt.notExist {
				t.Errorf("errors.Is(err, os.ErrNotExist) = %v, want %v", !tt.notExist, tt.notExist)
			}
		})
	}
}

func TestValueIn(t *testing.T) {
	outside := write(t, "K='outside'\n")
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"env": "K='top'\n", "sub/env": "K='sub'\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"in": "sub/env", "abs-out": outside, "rel-out": "../" + filepath.Base(filepath.Dir(outside)) + "/env", "sub/up": "../env"}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, path, want, wantErr string
	}{
		{name: "a file", path: "env", want: "top"},
		{name: "a file in a directory", path: "sub/env", want: "sub"},
		{name: "a link inside", path: "in", want: "sub"},
		{name: "a link up, still inside", path: "sub/up", want: "top"},
		{name: "a link to an absolute path outside", path: "abs-out", wantErr: "failed to open environment variable file"},
		{name: "a link to a relative path outside", path: "rel-out", wantErr: "failed to open environment variable file"},
		{name: "a path up and out", path: "../x/env", wantErr: "failed to open environment variable file"},
		{name: "missing", path: "none", wantErr: `failed to open environment variable file "` + filepath.Join(root, "none") + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValueIn(root, tt.path, "K")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ValueIn = %q, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ValueIn = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
