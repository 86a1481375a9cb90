package supervision

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"
	"github.com/rs/zerolog"
)

// protoactor's process registry spreads actors over many concurrent maps,
// each made of cmap.SHARD_COUNT locked shards: with concurrent-map's default
// the empty shards were a large part of an idle actorlet's live heap. The
// registry's buckets already spread the locking, so one shard each is
// enough. Set before any system exists; the maps read it when made.
func init() { cmap.SHARD_COUNT = 1 }

// System is the actor system with the registry of its actors.
type System struct {
	*actor.ActorSystem
	Registry *Registry
	logs     *logSwitch
}

// NewSystem returns an actor system whose own (protoactor's) logging goes
// into logger and whose OpenTelemetry metrics stay off. The bootstrap actor
// only knows the configured log format and verbosity after it loaded the
// configuration, after the system exists: SetLogger switches then.
func NewSystem(logger zerolog.Logger) *System {
	logs := &logSwitch{current: &atomic.Pointer[slog.Handler]{}}
	logs.set(logger)
	system := actor.NewActorSystem(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(logs) }),
		actor.WithDeadLetterRequestLogging(false),
	)
	return &System{ActorSystem: system, Registry: NewRegistry(), logs: logs}
}

// SetLogger sends protoactor's logging to logger from now on.
func (s *System) SetLogger(logger zerolog.Logger) { s.logs.set(logger) }

// logSwitch is a slog.Handler over a replaceable zerolog logger; every view
// derived with WithAttrs or WithGroup shares the same current logger, so
// loggers protoactor derived before SetLogger follow it too. protoactor logs
// routine events (an actor system starting, dead letters) at info: they are
// demoted to debug so that info stays actorlet's own.
type logSwitch struct {
	current *atomic.Pointer[slog.Handler]
	attrs   []slog.Attr
	group   string
}

func (s *logSwitch) set(logger zerolog.Logger) {
	var h slog.Handler = zerolog.NewSlogHandler(logger.With().Str("component", "protoactor").Logger())
	s.current.Store(&h)
}

// handler is the current handler with this view's group and attributes.
func (s *logSwitch) handler() slog.Handler {
	h := *s.current.Load()
	if s.group != "" {
		h = h.WithGroup(s.group)
	}
	if len(s.attrs) > 0 {
		h = h.WithAttrs(s.attrs)
	}
	return h
}

func demote(l slog.Level) slog.Level {
	if l == slog.LevelInfo {
		return slog.LevelDebug
	}
	return l
}

func (s *logSwitch) Enabled(ctx context.Context, l slog.Level) bool {
	return s.handler().Enabled(ctx, demote(l))
}

func (s *logSwitch) Handle(ctx context.Context, r slog.Record) error {
	r.Level = demote(r.Level)
	return s.handler().Handle(ctx, r)
}

func (s *logSwitch) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logSwitch{current: s.current, attrs: append(append([]slog.Attr(nil), s.attrs...), attrs...), group: s.group}
}

func (s *logSwitch) WithGroup(name string) slog.Handler {
	return &logSwitch{current: s.current, attrs: s.attrs, group: name}
}
