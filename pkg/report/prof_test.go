package report

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/ds-telemetry/ds/pkg/sources"
	"github.com/ds-telemetry/ds/pkg/viewer"
)

// TestBuildInput builds the page of $DS_PROF_INPUT (a large capture)
// into nothing: a hook for measuring and profiling Build (go test -run
// TestBuildInput -cpuprofile), skipped without it.
func TestBuildInput(t *testing.T) {
	p := os.Getenv("DS_PROF_INPUT")
	if p == "" {
		t.Skip()
	}
	r := &viewer.Inputs{Set: sources.NewSet(sources.Options{}), Stderr: io.Discard}
	if _, err := Build(context.Background(), r, []string{p}, Options{}, io.Discard); err != nil {
		t.Fatal(err)
	}
}
