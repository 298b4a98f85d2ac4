package sources

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ds-telemetry/ds/pkg/segments"
)

// TestOutcome: failures are reported, and the worst outcome wins
// (Failed over NotCapture over Damaged).
func TestOutcome(t *testing.T) {
	var o Outcome
	var w bytes.Buffer
	if o.Err() != nil || o.Status() != OK {
		t.Fatal("zero Outcome not OK")
	}
	o.Damage()
	if o.Status() != Damaged || o.FailedInput() {
		t.Errorf("after damage: %v", o.Status())
	}
	o.Fail(&w, fmt.Errorf("x.txt: %w", segments.ErrNotCapture))
	if o.Status() != NotCapture || !o.FailedInput() {
		t.Errorf("after not a capture: %v", o.Status())
	}
	o.Failer(&w)(errors.New("y.dss: permission denied"))
	var se *StatusError
	if !errors.As(o.Err(), &se) || se.Status != Failed {
		t.Errorf("after a failure: %v", o.Err())
	}
	if w.String() != "ds: x.txt: "+segments.ErrNotCapture.Error()+"\nds: y.dss: permission denied\n" {
		t.Errorf("stderr: %q", w.String())
	}
}
