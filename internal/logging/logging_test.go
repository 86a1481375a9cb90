package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format  string
		check   func(string) bool
		wantErr bool
	}{
		{format: "json", check: func(s string) bool { return json.Valid([]byte(strings.TrimSpace(s))) }},
		{format: "text", check: func(s string) bool { return strings.Contains(s, "INF hello") }},
		{format: "", check: func(s string) bool { return strings.Contains(s, "INF hello") }},
		{format: "xml", wantErr: true},
	} {
		var buf bytes.Buffer
		log, err := New(&buf, tc.format, 0)
		if (err != nil) != tc.wantErr {
			t.Fatalf("format %q: err = %v", tc.format, err)
		}
		if tc.wantErr {
			continue
		}
		log.Info().Msg("hello")
		log.Debug().Msg("hidden at -v 0")
		if !tc.check(buf.String()) || strings.Contains(buf.String(), "hidden") {
			t.Errorf("format %q wrote %q", tc.format, buf.String())
		}
	}
}

func TestLevel(t *testing.T) {
	for v, want := range map[uint32]zerolog.Level{0: zerolog.InfoLevel, 2: zerolog.DebugLevel, 4: zerolog.TraceLevel, 10: zerolog.TraceLevel} {
		if got := Level(v); got != want {
			t.Errorf("Level(%d) = %v, want %v", v, got, want)
		}
	}
}
