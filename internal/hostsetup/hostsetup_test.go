package hostsetup

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestSwap(t *testing.T) {
	header := "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
	for _, tc := range []struct {
		name       string
		procSwaps  string
		failSwapOn bool
		wantOn     bool
		wantErr    bool
	}{
		{"no swap", header, true, false, false},
		{"swap on, failSwapOn", header + "/swapfile file 1048572 0 -2\n", true, true, true},
		{"swap on, failSwapOn false", header + "/swapfile file 1048572 0 -2\n", false, true, false},
		{"empty", "", true, false, false},
	} {
		on := SwapOn([]byte(tc.procSwaps))
		err := CheckSwap(tc.failSwapOn, on)
		if on != tc.wantOn || (err != nil) != tc.wantErr {
			t.Errorf("%s: on %v err %v", tc.name, on, err)
		}
		if err != nil && err.Error() != "running with swap on is not supported, please disable swap or set --fail-swap-on flag to false" {
			t.Errorf("%s: message %q", tc.name, err)
		}
	}
	if on, err := ReadSwapOn(filepath.Join(t.TempDir(), "none")); on || err != nil {
		t.Errorf("missing /proc/swaps: %v %v", on, err)
	}
}

func TestTunablePlan(t *testing.T) {
	good := map[string]int{}
	for k, v := range Tunables {
		good[k] = v
	}
	bad := map[string]int{}
	for k, v := range good {
		bad[k] = v
	}
	bad["vm/overcommit_memory"], bad["kernel/panic"] = 0, 1
	for _, tc := range []struct {
		name     string
		current  map[string]int
		readErrs map[string]error
		protect  bool
		wantSet  []string
		wantErrs []string
	}{
		{"as wanted", good, nil, true, nil, nil},
		{"differ, protected", bad, nil, true, nil, []string{
			"invalid kernel flag: kernel/panic, expected value: 10, actual value: 1",
			"invalid kernel flag: vm/overcommit_memory, expected value: 1, actual value: 0"}},
		{"differ, not protected", bad, nil, false, []string{"kernel/panic", "vm/overcommit_memory"}, nil},
		{"unreadable", good, map[string]error{"kernel/panic": errors.New("denied")}, false, nil, []string{"denied"}},
	} {
		set, errs := TunablePlan(tc.current, tc.readErrs, tc.protect)
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		if !reflect.DeepEqual(set, tc.wantSet) || !reflect.DeepEqual(msgs, tc.wantErrs) {
			t.Errorf("%s: set %v errs %v, want %v %v", tc.name, set, msgs, tc.wantSet, tc.wantErrs)
		}
	}
}

func TestSetupKernelTunables(t *testing.T) {
	dir := t.TempDir()
	for name, v := range Tunables {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		val := "0"
		if v == 0 {
			val = "1"
		}
		os.WriteFile(filepath.Join(dir, name), []byte(val+"\n"), 0o644)
	}
	err := SetupKernelTunables(dir, true, false, func(string, int, int, error) { t.Error("wrote under protectKernelDefaults") })
	if err == nil || !strings.Contains(err.Error(), "invalid kernel flag: vm/panic_on_oom, expected value: 0, actual value: 1") {
		t.Errorf("protected: %v", err)
	}
	n := 0
	if err := SetupKernelTunables(dir, false, false, func(string, int, int, error) { n++ }); err != nil || n != len(Tunables) {
		t.Errorf("modify: %v, %d writes", err, n)
	}
	if err := SetupKernelTunables(dir, true, false, nil); err != nil {
		t.Errorf("after writing: %v", err)
	}
}

func TestInUserNamespace(t *testing.T) {
	if InUserNamespace([]byte("         0          0 4294967295\n")) {
		t.Error("the initial namespace")
	}
	if !InUserNamespace([]byte("         0     100000      65536\n")) {
		t.Error("a user namespace")
	}
}

func TestMemoryBackedVolumesMaySwap(t *testing.T) {
	tests := []struct {
		name    string
		swapOn  bool
		release string
		userns  bool
		want    bool
	}{
		{"swap off", false, "5.15.0-91-generic", false, false},
		{"swap on, kernel without noswap", true, "5.15.0-91-generic", false, true},
		{"swap on, 6.3", true, "6.3.13", false, true},
		{"swap on, 6.4", true, "6.4.0\n", false, false},
		{"swap on, a later kernel", true, "6.18.44-fc-v1300", false, false},
		{"swap on, in a user namespace", true, "6.18.44", true, true},
		{"swap on, an unreadable release", true, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MemoryBackedVolumesMaySwap(tt.swapOn, TmpfsNoswapSupported(tt.release, tt.userns)); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
