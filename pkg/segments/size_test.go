package segments

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"4096", 4096, true},
		{"512K", 512 << 10, true},
		{"16MiB", 16 << 20, true},
		{"10gib", 10 << 30, true},
		{"500MB", 500 << 20, true},
		{" 2 T ", 2 << 40, true},
		{"7B", 7, true},
		{"", 0, false},
		{"much", 0, false},
		{"-1", 0, false},
		{"IB", 0, false},
		{"1.5G", 0, false},
		{"4294967296T", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
