// Package envfile reads the value of a key in an env file, for a
// container's env valueFrom.fileKeyRef (feature EnvFiles): upstream's
// pkg/kubelet/util/env ParseEnv, the same syntax, answers and errors.
//
// The syntax is a strict subset of POSIX shell: KEY='value' lines, the
// value always in single quotes and taken literally (no escapes, no
// expansion), spanning lines while its quote is open; blank lines, lines
// starting with '#' and a '#' comment after the closing quote are ignored,
// as is whitespace before the name. Anything else (no '=', an empty name,
// whitespace before '=', an unquoted or double-quoted value, content after
// the closing quote, an unclosed quote) is an error naming its line.
// Whitespace between '=' and the value gives an empty value, as in a
// shell. An `export KEY='v'` line names "export KEY", so it never matches.
//
// The file is read up to the first line that assigns the key: that line
// wins over later ones, and errors after it are not seen. A key that is
// not there, and a key whose value is empty, both give "" and no error;
// upstream's caller takes "" for missing. Errors name the file and line,
// never a value.
package envfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Value returns the value of key in the env file at path.
func Value(path, key string) (string, error) {
	// O_NONBLOCK: a FIFO must not hold the caller until a writer comes;
	// it changes nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	return read(f, path, key)
}

// ValueIn returns the value of key in the env file at the relative path
// inside the directory root (a volume's), which it never leaves: a path
// or a symbolic link that leads out of root is an error. Upstream joins
// them with securejoin.SecureJoin, which resolves a link as if root were
// "/"; refusing it instead keeps a file a pod wrote from sending the
// node to one of its own.
func ValueIn(root, path, key string) (string, error) {
	full := filepath.Join(root, path)
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", full, err)
	}
	defer func() { _ = r.Close() }()
	f, err := r.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", full, err)
	}
	defer func() { _ = f.Close() }()
	return read(f, full, key)
}

// errNotRegular refuses what is not a regular file (a directory, a FIFO,
// a device), whose reading could fail late or never end.
var errNotRegular = errors.New("not a regular file")

func read(f *os.File, path, key string) (string, error) {
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("failed to open environment variable file %q: %w", path, errNotRegular)
	}
	return parse(f, path, key)
}

// parse is upstream's ParseEnv on an open file, path naming it in errors.
// Lines are bufio.Scanner's, as upstream's: a trailing "\r" is dropped,
// and a line longer than its buffer is a read error.
func parse(r io.Reader, path, key string) (string, error) {
	scanner := bufio.NewScanner(r)
	lineNum := 0
	for scanner.Scan() {
		lineNum++
		line := strings.TrimLeft(scanner.Text(), " \t")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, valuePart, found := strings.Cut(line, "=")
		if !found {
			return "", syntaxError(lineNum, "missing '='")
		}
		trimmedName := strings.TrimRight(name, " \t")
		if trimmedName == "" {
			return "", syntaxError(lineNum, "empty variable name")
		}
		if trimmedName != name {
			return "", syntaxError(lineNum, "whitespace before '=' is not allowed")
		}
		value := strings.TrimLeft(valuePart, " \t")
		if value != valuePart {
			// KEY= 'v' assigns KEY the empty string in a shell (and runs
			// 'v' as a command); the rest of the line is not read.
			if name == key {
				return "", nil
			}
			continue
		}
		if !strings.HasPrefix(value, "'") {
			return "", syntaxError(lineNum, "value must be enclosed in single quotes")
		}
		var b strings.Builder
		rest := value[1:]
		startLine := lineNum
		for {
			closing := strings.IndexByte(rest, '\'')
			if closing != -1 {
				b.WriteString(rest[:closing])
				after := strings.TrimLeft(rest[closing+1:], " \t")
				if after != "" && !strings.HasPrefix(after, "#") {
					return "", syntaxError(lineNum, "unexpected content after closing quote")
				}
				if name == key {
					return b.String(), nil
				}
				break
			}
			b.WriteString(rest)
			b.WriteString("\n")
			if !scanner.Scan() {
				// As upstream, a read error here is told as the quote.
				return "", fmt.Errorf("invalid environment variable format starting at line %d: unclosed single quote", startLine)
			}
			lineNum++
			rest = scanner.Text()
		}
	}
	if err := scanner.Err(); err != nil {
		return "", fmt.Errorf("error reading environment variable file %q: %w", path, err)
	}
	return "", nil
}

func syntaxError(line int, what string) error {
	return fmt.Errorf("invalid environment variable format at line %d: %s", line, what)
}
