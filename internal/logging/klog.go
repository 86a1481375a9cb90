package logging

import (
	"github.com/go-logr/logr"
	"github.com/rs/zerolog"
	"k8s.io/klog/v2"
)

// RouteKlog sends what client-go and apimachinery log through klog to log,
// so that the daemon writes one format. klog's V(n) levels above 0 become
// debug, errors stay errors.
func RouteKlog(log zerolog.Logger) {
	klog.SetLogger(logr.New(&klogSink{log: log.With().Str("source", "klog").Logger()}))
}

type klogSink struct {
	log  zerolog.Logger
	name string
}

func (s *klogSink) Init(logr.RuntimeInfo) {}

func (s *klogSink) Enabled(level int) bool {
	// The more restrictive of the logger's level and the global one
	// (SetVerbosity).
	min := max(s.log.GetLevel(), zerolog.GlobalLevel())
	if level > 0 {
		return min <= zerolog.DebugLevel
	}
	return min <= zerolog.InfoLevel
}

func (s *klogSink) Info(level int, msg string, kv ...any) {
	e := s.log.Info()
	if level > 0 {
		e = s.log.Debug()
	}
	s.fields(e, kv).Msg(msg)
}

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.fields(s.log.Error().Err(err), kv).Msg(msg)
}

func (s *klogSink) fields(e *zerolog.Event, kv []any) *zerolog.Event {
	if s.name != "" {
		e = e.Str("logger", s.name)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			e = e.Interface(k, kv[i+1])
		}
	}
	return e
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	c := s.log.With()
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			c = c.Interface(k, kv[i+1])
		}
	}
	return &klogSink{log: c.Logger(), name: s.name}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	if s.name != "" {
		name = s.name + "/" + name
	}
	return &klogSink{log: s.log, name: name}
}
