// Package logind is the node shutdown manager's edge to systemd-logind on
// the system D-Bus, as upstream's nodeshutdown/systemd: logind's
// InhibitDelayMaxUSec, its raising through a logind.conf drop-in and a
// reload of logind, a "delay" inhibitor lock on shutdown, and the
// PrepareForShutdown signal. Every call blocks on the bus: the actor runs
// them off its mailbox.
//
// The system bus is the one godbus finds: DBUS_SYSTEM_BUS_ADDRESS, else
// the well-known socket. The tests point the variable at a private
// dbus-daemon with a logind stand-in (fakelogind).
package logind

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
)

const (
	// Service, Path and Interface name logind's manager on the bus.
	Service   = "org.freedesktop.login1"
	Path      = dbus.ObjectPath("/org/freedesktop/login1")
	Interface = "org.freedesktop.login1.Manager"

	// SystemdService, SystemdPath and SystemdInterface name systemd's
	// manager, which reloads logind.
	SystemdService   = "org.freedesktop.systemd1"
	SystemdPath      = dbus.ObjectPath("/org/freedesktop/systemd1")
	SystemdInterface = "org.freedesktop.systemd1.Manager"

	// ConfDir is where upstream writes its logind drop-in; DropIn its
	// name.
	ConfDir = "/etc/systemd/logind.conf.d"
	DropIn  = "99-kubelet.conf"

	// Who, Why and What are the inhibitor lock's fields, as upstream's.
	Who  = "kubelet"
	Why  = "Kubelet needs time to handle node shutdown"
	What = "shutdown"
)

// Conn is one connection to the system bus.
type Conn struct {
	bus *dbus.Conn
}

// Connect opens a connection of its own to the system bus.
func Connect() (*Conn, error) {
	bus, err := dbus.ConnectSystemBus()
	if err != nil {
		return nil, fmt.Errorf("connecting to the system bus: %w", err)
	}
	return &Conn{bus: bus}, nil
}

// Close closes the connection; the channel of WatchShutdown closes with
// it.
func (c *Conn) Close() error { return c.bus.Close() }

// InhibitDelayMax is logind's InhibitDelayMaxUSec: the longest a delay
// lock may hold a shutdown back.
func (c *Conn) InhibitDelayMax() (time.Duration, error) {
	v, err := c.bus.Object(Service, Path).GetProperty(Interface + ".InhibitDelayMaxUSec")
	if err != nil {
		return 0, fmt.Errorf("failed reading InhibitDelayMaxUSec property from logind: %w", err)
	}
	usec, ok := v.Value().(uint64)
	if !ok {
		return 0, fmt.Errorf("InhibitDelayMaxUSec from logind is not a uint64 as expected")
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// Lock is an inhibitor lock: logind holds the shutdown back until it is
// released (or its delay is over).
type Lock struct{ f *os.File }

// Release closes the lock's descriptor, which tells logind the shutdown
// may go on. A nil lock is released already.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("unable to close systemd inhibitor lock: %w", err)
	}
	return nil
}

// InhibitShutdown takes a delay lock on shutdown, as upstream's.
func (c *Conn) InhibitShutdown() (*Lock, error) {
	call := c.bus.Object(Service, Path).Call(Interface+".Inhibit", 0, What, Who, Why, "delay")
	if call.Err != nil {
		return nil, fmt.Errorf("failed creating systemd inhibitor: %w", call.Err)
	}
	var fd dbus.UnixFD
	if err := call.Store(&fd); err != nil {
		return nil, fmt.Errorf("failed storing inhibit lock file descriptor: %w", err)
	}
	// A child process (a mount, a hook's exec) must not inherit the
	// lock: logind would wait for it too.
	syscall.CloseOnExec(int(fd))
	return &Lock{f: os.NewFile(uintptr(fd), "inhibitor-lock")}, nil
}

// ReloadLogind has systemd send logind SIGHUP, which makes it read its
// configuration again, as upstream's ReloadLogindConf.
func (c *Conn) ReloadLogind() error {
	call := c.bus.Object(SystemdService, SystemdPath).Call(SystemdInterface+".KillUnit", 0, "systemd-logind.service", "all", int32(1))
	if call.Err != nil {
		return fmt.Errorf("unable to reload logind conf: %w", call.Err)
	}
	return nil
}

// WatchShutdown subscribes to PrepareForShutdown: true when a shutdown
// begins, false when it was cancelled. The channel closes with the
// connection.
func (c *Conn) WatchShutdown() (<-chan bool, error) {
	if err := c.bus.AddMatchSignal(dbus.WithMatchInterface(Interface), dbus.WithMatchMember("PrepareForShutdown"),
		dbus.WithMatchObjectPath(Path)); err != nil {
		return nil, fmt.Errorf("watching PrepareForShutdown: %w", err)
	}
	signals := make(chan *dbus.Signal, 1)
	c.bus.Signal(signals)
	out := make(chan bool, 1)
	go func() {
		defer close(out)
		for s := range signals {
			if s.Name != Interface+".PrepareForShutdown" || len(s.Body) == 0 {
				continue
			}
			if active, ok := s.Body[0].(bool); ok {
				out <- active
			}
		}
	}()
	return out, nil
}

// WriteInhibitDelay writes the logind drop-in in dir that raises
// InhibitDelayMaxSec to d (in whole seconds, as upstream's).
func WriteInhibitDelay(dir string, d time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("failed creating %v directory: %w", dir, err)
	}
	path := filepath.Join(dir, DropIn)
	content := fmt.Sprintf("# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=%.0f\n", d.Seconds())
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		return fmt.Errorf("failed writing logind shutdown inhibit override file %v: %w", path, err)
	}
	return nil
}

// Watch is a started watch of the node's shutdown: the connection, the
// delay lock, and PrepareForShutdown's values.
type Watch struct {
	Conn     *Conn
	Lock     *Lock
	Shutdown <-chan bool
	// Raised is the InhibitDelayMaxSec written to the drop-in; zero when
	// logind's was long enough.
	Raised time.Duration
}

// StartWatch is upstream's shutdown manager's start: it connects, raises
// logind's InhibitDelayMaxUSec to requested when it is less (the drop-in
// in confDir, a reload of logind, and a wait for logind to take it up:
// upstream's 5 reads, 0.1 s apart and doubling), takes the delay lock and
// subscribes to PrepareForShutdown. On an error nothing is left open.
func StartWatch(confDir string, requested time.Duration) (_ *Watch, err error) {
	c, err := Connect()
	if err != nil {
		return nil, err
	}
	w := &Watch{Conn: c}
	defer func() {
		if err != nil {
			_ = w.Lock.Release()
			_ = c.Close()
		}
	}()
	current, err := c.InhibitDelayMax()
	if err != nil {
		return nil, err
	}
	if requested > current {
		if err := WriteInhibitDelay(confDir, requested); err != nil {
			return nil, fmt.Errorf("unable to override inhibit delay by shutdown manager: %w", err)
		}
		if err := c.ReloadLogind(); err != nil {
			return nil, err
		}
		w.Raised = requested
		delay, attempts := 100*time.Millisecond, 0
		for attempts < 5 {
			attempts++
			if current, err = c.InhibitDelayMax(); err != nil {
				return nil, err
			}
			if current >= requested || attempts == 5 {
				break
			}
			time.Sleep(delay)
			delay *= 2
		}
		if current < requested {
			return nil, fmt.Errorf("node shutdown manager was timed out after %d attempts waiting for logind InhibitDelayMaxSec to update to %v (ShutdownGracePeriod), current value is %v",
				attempts, requested, current)
		}
	}
	if w.Lock, err = c.InhibitShutdown(); err != nil {
		return nil, err
	}
	if w.Shutdown, err = c.WatchShutdown(); err != nil {
		return nil, fmt.Errorf("failed to monitor shutdown: %w", err)
	}
	return w, nil
}
