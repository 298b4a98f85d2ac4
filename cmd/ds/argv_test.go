package main

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Short flags written together as getopt(3) takes them are split into
// the words urfave/cli takes; anything else is left as it is.
func TestSplitAttached(t *testing.T) {
	root := newRoot(strings.NewReader(""), io.Discard, io.Discard)
	for _, tc := range []struct{ in, want string }{
		{"ds tail -n1 a.dss", "ds tail -n 1 a.dss"},
		{"ds tail -n 1 a.dss", "ds tail -n 1 a.dss"},
		{"ds tail -n=1 a.dss", "ds tail -n=1 a.dss"},
		{"ds tail --lines=1 a.dss", "ds tail --lines=1 a.dss"},
		{"ds tail -n+5 a.dss", "ds tail -n +5 a.dss"},
		{"ds tail a.dss -fn3", "ds tail a.dss -f -n 3"},
		{"ds log -rn2 a.dss", "ds log -r -n 2 a.dss"},
		{"ds log -cproc.x.stdout a.dss", "ds log -c proc.x.stdout a.dss"},
		{"ds log -rf a.dss", "ds log -r -f a.dss"},
		// The value of a flag, whatever it looks like, is left alone.
		{"ds log -g -n5 a.dss", "ds log -g -n5 a.dss"},
		{"ds log --grep -n5 a.dss", "ds log --grep -n5 a.dss"},
		// A word that is not made of the command's short flags.
		{"ds log -xn5 a.dss", "ds log -xn5 a.dss"},
		{"ds log -- -n5", "ds log -- -n5"},
		// ds wrap's command line is the child's.
		{"ds wrap -- tail -n1 x", "ds wrap -- tail -n1 x"},
		{"ds wrap tail -n1 x", "ds wrap tail -n1 x"},
		{"ds", "ds"},
		{"ds nosuch -n1", "ds nosuch -n1"},
	} {
		got := strings.Join(splitAttached(root, strings.Fields(tc.in)), " ")
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: (-want +got):\n%s", tc.in, diff)
		}
	}
}
