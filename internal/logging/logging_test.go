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

// TestSetVerbosity checks that a logger New made follows the verbosity set
// after it, klog's sink included, as upstream's /debug/flags/v.
func TestSetVerbosity(t *testing.T) {
	defer SetVerbosity(0)
	var buf bytes.Buffer
	log, err := New(&buf, FormatText, 0)
	if err != nil {
		t.Fatal(err)
	}
	sink := &klogSink{log: log}
	log.Debug().Msg("hidden at -v 0")
	if sink.Enabled(2) {
		t.Error("klog V(2) enabled at -v 0")
	}
	SetVerbosity(3)
	log.Debug().Msg("shown at -v 3")
	log.Trace().Msg("hidden at -v 3")
	if !sink.Enabled(2) {
		t.Error("klog V(2) disabled at -v 3")
	}
	SetVerbosity(0)
	log.Debug().Msg("hidden again at -v 0")
	if out := buf.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "shown at -v 3") {
		t.Errorf("wrote %q", out)
	}
}

func TestParseVerbosity(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint32
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "4", want: 4},
		{in: "4294967295", want: 4294967295},
		{in: "4294967296", wantErr: `strconv.ParseUint: parsing "4294967296": value out of range`},
		{in: "-1", wantErr: `strconv.ParseUint: parsing "-1": invalid syntax`},
		{in: "3\n", wantErr: `strconv.ParseUint: parsing "3\n": invalid syntax`},
		{in: "", wantErr: `strconv.ParseUint: parsing "": invalid syntax`},
	} {
		got, err := ParseVerbosity(tc.in)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("ParseVerbosity(%q) = %d, %v; want error %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseVerbosity(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
