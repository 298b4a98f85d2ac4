package segments

import (
	"strings"
	"testing"
)

// TestCheckPrinterConflictPlaces: a channel declared two ways in one
// header's catalog is said to be declared twice in that header, not "at
// byte 0 and at byte 0"; declared in two places, both are named.
func TestCheckPrinterConflictPlaces(t *testing.T) {
	a := channel(streamS, 2)
	b := a
	b.Name = "proc.other.stdout"
	for _, tc := range []struct {
		first, second ChannelPlace
		want          string
	}{
		{ChannelPlace{"x.dss", 0, a}, ChannelPlace{"x.dss", 0, b},
			`x.dss: stream node-alpha#1: channel 2 declared twice in the header at byte 0, as "proc.trainer.stdout" (TextStream) and as "proc.other.stdout" (TextStream)`},
		{ChannelPlace{"x.dss", 0, a}, ChannelPlace{"x.dss", 900, b},
			`x.dss: stream node-alpha#1: channel 2 declared as "proc.trainer.stdout" (TextStream) at byte 0 and as "proc.other.stdout" (TextStream) at byte 900`},
		{ChannelPlace{"y.dss", 0, a}, ChannelPlace{"x.dss", 0, b},
			`x.dss: stream node-alpha#1: channel 2 declared as "proc.trainer.stdout" (TextStream) in y.dss at byte 0 and as "proc.other.stdout" (TextStream) at byte 0`},
	} {
		var out strings.Builder
		p := NewCheckPrinter(&out, false, false)
		p.Finding("x.dss", &ChannelConflict{First: tc.first, Second: tc.second})
		if got := strings.TrimSpace(out.String()); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}
