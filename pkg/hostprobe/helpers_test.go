package hostprobe

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseCase is one case of a parser's table test: the input, and the
// result or an error containing wantErr.
type parseCase[T any] struct {
	name    string
	in      string
	want    T
	wantErr string
}

// runParseCases runs each case through parse in a subtest of its name:
// a case with wantErr wants an error containing it; any other wants no
// error and a result equal to want, compared with cmp.Diff (so a nil
// slice or map is not an empty one).
func runParseCases[T any](t *testing.T, parse func(io.Reader) (T, error), cases []parseCase[T]) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Helper()
			got, err := parse(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want none", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result differs (-want +got):\n%s", diff)
			}
		})
	}
}
