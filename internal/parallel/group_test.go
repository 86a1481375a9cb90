package parallel

import (
	"errors"
	"sync/atomic"
	"testing"
)

var errFatal = errors.New("unrepairable")

func TestGroupWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		parts     []func()
		wantPanic bool
		wantErr   error // the error a PartPanic unwraps to, if any
	}{
		{name: "no parts"},
		{name: "parts return", parts: []func(){func() {}, func() {}}},
		{name: "a part panics", parts: []func(){func() {}, func() { panic("boom") }}, wantPanic: true},
		{name: "a part panics with an error", parts: []func(){func() { panic(errFatal) }}, wantPanic: true, wantErr: errFatal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				g   Group
				ran atomic.Int32
			)
			for _, p := range tc.parts {
				g.Go(func() { ran.Add(1); p() })
			}
			rec := func() (rec any) {
				defer func() { rec = recover() }()
				g.Wait()
				return nil
			}()
			if got := int(ran.Load()); got != len(tc.parts) {
				t.Errorf("%d parts ran before Wait returned, want %d", got, len(tc.parts))
			}
			if !tc.wantPanic {
				if rec != nil {
					t.Fatalf("Wait panicked with %v", rec)
				}
				return
			}
			part, ok := rec.(*PartPanic)
			if !ok {
				t.Fatalf("Wait panicked with %T %v, want a *PartPanic", rec, rec)
			}
			if len(part.Stack) == 0 {
				t.Error("the PartPanic carries no stack")
			}
			if tc.wantErr != nil && !errors.Is(part, tc.wantErr) {
				t.Errorf("PartPanic %v does not unwrap to %v", part, tc.wantErr)
			}
		})
	}
}
