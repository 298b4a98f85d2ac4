package segments

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize parses a size in bytes, as ds's size flags take it
// (--commit-bytes, --keep-bytes, --max-bytes, --nats-buffer): digits and
// an optional suffix K, M, G or T (powers of 1024, also spelt KiB, MiB…,
// KB, MB…, any case) or B, with spaces around allowed. It returns the
// number of bytes, at most 2^62, or an error naming s.
func ParseSize(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
units:
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"", 1}} {
		for _, spelling := range []string{u.suffix + "IB", u.suffix + "B", u.suffix} {
			if rest, ok := strings.CutSuffix(t, spelling); ok && spelling != "" && spelling != "IB" {
				t, mult = rest, u.m
				break units
			}
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want a number of bytes, such as 4096, 512K or 16MiB", s)
	}
	return n * mult, nil
}
