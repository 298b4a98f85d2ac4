package wireformat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// blockContent returns the inner records of n text frames.
func blockContent(n int) []byte {
	var b []byte
	for i := range n {
		f := frames.Frame{Channel: frames.ChannelID(1 + i%3), Position: frames.Position(i), Payload: []byte("2026-11-30T08:00:00Z INFO request served path=/api/v1/items status=200\n")}
		b = AppendInnerFrame(b, f, f.Position)
	}
	return b
}

func TestBlockRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 100, 3000} {
		content := blockContent(n)
		rec, err := AppendBlock(nil, testSeed, content)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(rec, []byte(Magic)) {
			t.Errorf("%d frames: block record holds the magic", n)
		}
		r, size, err := ParseRecord(rec, testSeed, 0)
		if err != nil || size != len(rec) || r.Type != TypeBlock {
			t.Fatalf("%d frames: ParseRecord = %v, %d, %v", n, r.Type, size, err)
		}
		got, err := DecodeBlock([]byte("reuse"), r.Body)
		if err != nil {
			t.Fatalf("%d frames: %v", n, err)
		}
		if !bytes.Equal(got[5:], content) || string(got[:5]) != "reuse" {
			t.Errorf("%d frames: content differs", n)
		}
		if n == 3000 && len(rec) > len(content)/4 {
			t.Errorf("%d frames: %d bytes compressed to %d", n, len(content), len(rec))
		}
	}
}

// zstdFrame compresses b into one zstd frame, optionally without the
// content size in its header.
func zstdFrame(t *testing.T, b []byte, withSize bool) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithSingleSegment(withSize), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	if withSize {
		return enc.EncodeAll(b, nil)
	}
	var buf bytes.Buffer
	enc.Reset(&buf) // the streaming encoder omits the content size
	if _, err := enc.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func blockBody(size uint64, compressed []byte) []byte {
	return append(binary.AppendUvarint([]byte{CodecZstd}, size), compressed...)
}

func s2Body(size uint64, compressed []byte) []byte {
	return append(binary.AppendUvarint([]byte{CodecS2}, size), compressed...)
}

// TestBlockCodecs: every codec and level round-trips, blocks empty to
// full, into a dst that has room and one that has not; zstd's default
// level is the smallest and S2 the largest on repetitive text.
func TestBlockCodecs(t *testing.T) {
	seq := func(n int) []byte { // seq(1)'s output as one frame's payloads
		var b []byte
		for i := 0; len(b) < n; i++ {
			f := frames.Frame{Channel: 1, Position: frames.Position(i), Payload: fmt.Appendf(nil, "%d\n", i+1)}
			b = AppendInnerFrame(b, f, f.Position)
		}
		return b
	}
	for _, content := range [][]byte{nil, blockContent(1), blockContent(3000), seq(MaxBlockSize - 16)} {
		sizes := map[BlockCodec]int{}
		for _, c := range []BlockCodec{BlockZstdFast, BlockZstd, BlockS2} {
			body, err := AppendBlockBodyWith([]byte("pre"), content, c)
			if err != nil {
				t.Fatalf("%v: %v", c, err)
			}
			body = body[3:]
			wantCodec := byte(CodecZstd)
			if c == BlockS2 {
				wantCodec = CodecS2
			}
			if body[0] != wantCodec {
				t.Fatalf("%v: codec %d", c, body[0])
			}
			sizes[c] = len(body)
			for _, dst := range [][]byte{nil, make([]byte, 2, 2+len(content))} {
				got, err := DecodeBlock(dst, body)
				if err != nil {
					t.Fatalf("%v, %d bytes: %v", c, len(content), err)
				}
				if !bytes.Equal(got[len(dst):], content) || !bytes.Equal(got[:len(dst)], dst) {
					t.Fatalf("%v, %d bytes: content differs", c, len(content))
				}
			}
		}
		if len(content) > 1<<19 && !(sizes[BlockZstd] < sizes[BlockZstdFast] && sizes[BlockZstdFast] < sizes[BlockS2]) {
			t.Errorf("%d bytes of seq: sizes %v, want zstd < zstd-fast < s2", len(content), sizes)
		}
	}
	if _, err := AppendBlockBodyWith(nil, nil, BlockCodec(9)); err == nil {
		t.Error("codec 9: no error")
	}
}

func TestDecodeBlockErrors(t *testing.T) {
	content := blockContent(10)
	bomb := make([]byte, 8<<20) // 8 MiB of zeros: a few hundred bytes compressed
	tests := []struct {
		name    string
		body    []byte
		wantErr error
	}{
		{name: "empty", body: nil, wantErr: ErrBadBody},
		{name: "unknown codec", body: []byte{3, 0}, wantErr: ErrUnknownCodec},
		{name: "no size", body: []byte{CodecZstd}, wantErr: ErrBadBody},
		{name: "size over max", body: blockBody(MaxBlockSize+1, nil), wantErr: ErrTooLarge},
		{name: "not zstd", body: blockBody(5, []byte("hello")), wantErr: ErrBadBody},
		{name: "shorter than stated", body: blockBody(uint64(len(content)+1), zstdFrame(t, content, true)), wantErr: ErrBadBody},
		{name: "longer than stated", body: blockBody(uint64(len(content)-1), zstdFrame(t, content, true)), wantErr: ErrBadBody},
		{name: "longer than stated, no content size", body: blockBody(uint64(len(content)-1), zstdFrame(t, content, false)), wantErr: ErrBadBody},
		{name: "bomb", body: blockBody(MaxBlockSize, zstdFrame(t, bomb, false)), wantErr: ErrBadBody},
		{name: "bomb with content size", body: blockBody(MaxBlockSize, zstdFrame(t, bomb, true)), wantErr: ErrBadBody},
		{name: "cut", body: blockBody(uint64(len(content)), zstdFrame(t, content, true)[:20]), wantErr: ErrBadBody},
		{name: "s2: not s2", body: s2Body(5, []byte("hello")), wantErr: ErrBadBody},
		{name: "s2: shorter than stated", body: s2Body(uint64(len(content)+1), s2.Encode(nil, content)), wantErr: ErrBadBody},
		{name: "s2: longer than stated", body: s2Body(uint64(len(content)-1), s2.Encode(nil, content)), wantErr: ErrBadBody},
		{name: "s2: size over max", body: s2Body(MaxBlockSize+1, nil), wantErr: ErrTooLarge},
		{name: "s2: its own size over max", body: s2Body(MaxBlockSize, s2.Encode(nil, bomb)), wantErr: ErrBadBody},
		{name: "s2: cut", body: s2Body(uint64(len(content)), s2.Encode(nil, content)[:20]), wantErr: ErrBadBody},
		{name: "s2: empty", body: s2Body(0, nil), wantErr: ErrBadBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeBlock(nil, tt.body)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if cap(got) > MaxBlockSize+64<<10 {
				t.Errorf("decoder grew its output to %d bytes", cap(got))
			}
		})
	}
	if _, err := AppendBlock(nil, testSeed, make([]byte, MaxBlockSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("AppendBlock over MaxBlockSize: err = %v, want ErrTooLarge", err)
	}
}

func TestInnerRecords(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    Record
		wantN   int
		wantErr error
	}{
		{name: "frame", in: AppendInnerFrame(nil, exFrame, exFrame.Position), want: Record{Type: TypeFrame, Body: AppendFrameBody(nil, exFrame)}, wantN: 6},
		{name: "stream ended", in: AppendInner(nil, TypeStreamEnded, nil), want: Record{Type: TypeStreamEnded}, wantN: 2},
		{name: "experimental", in: AppendInner(nil, 0x41, []byte("x")), want: Record{Type: 0x41, Body: []byte("x")}, wantN: 3},
		{name: "empty", in: nil, wantErr: io.ErrUnexpectedEOF},
		{name: "no length", in: []byte{2}, wantErr: io.ErrUnexpectedEOF},
		{name: "body cut", in: []byte{2, 5, 1, 0}, wantErr: io.ErrUnexpectedEOF},
		{name: "zero type", in: []byte{0, 0}, wantErr: ErrBadTag},
		{name: "nested block", in: []byte{4, 0}, wantErr: ErrBadTag},
		{name: "escaped", in: []byte{0x82, 0}, wantErr: ErrBadTag},
		{name: "never-assigned type", in: []byte{0x0D, 0}, wantErr: ErrBadTag},
		{name: "length overflow", in: append([]byte{2}, bytes.Repeat([]byte{0xFF}, 11)...), wantErr: ErrBadBody},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, n, err := ParseInner(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if n != tt.wantN {
				t.Errorf("n = %d, want %d", n, tt.wantN)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
	for _, f := range []frames.Frame{exFrame, {Channel: 1 << 30, Position: 1 << 60, Payload: make([]byte, 300)}} {
		if got, want := InnerFrameSize(f, 7), len(AppendInnerFrame(nil, f, 7)); got != want {
			t.Errorf("InnerFrameSize = %d, want %d", got, want)
		}
	}
}

// TestInnerFramePositions checks the position differences of inner frames
// at the edges of the 64-bit range.
func TestInnerFramePositions(t *testing.T) {
	const max = math.MaxUint64
	tests := []struct {
		pos, next frames.Position
		wantDiff  []byte // the stored varint
	}{
		{pos: 0, next: 0, wantDiff: []byte{0}},
		{pos: 8, next: 8, wantDiff: []byte{0}},
		{pos: 9, next: 8, wantDiff: []byte{2}},
		{pos: 7, next: 8, wantDiff: []byte{1}},
		{pos: 1 << 40, next: 0, wantDiff: binary.AppendUvarint(nil, 1<<41)},
		{pos: max, next: 0, wantDiff: []byte{1}},
		{pos: 0, next: max, wantDiff: []byte{2}},
		{pos: 1 << 63, next: 0, wantDiff: binary.AppendUvarint(nil, max)},
		{pos: max, next: max - 1<<62, wantDiff: binary.AppendUvarint(nil, 1<<63)},
	}
	for _, tt := range tests {
		f := frames.Frame{Channel: 3, Position: tt.pos, Payload: []byte("p")}
		b := AppendInnerFrame(nil, f, tt.next)
		rec, n, err := ParseInner(b)
		if err != nil || n != len(b) {
			t.Fatalf("ParseInner: %v", err)
		}
		if got := rec.Body[1 : len(rec.Body)-1]; !bytes.Equal(got, tt.wantDiff) {
			t.Errorf("pos %d after %d: stored % x, want % x", tt.pos, tt.next, got, tt.wantDiff)
		}
		got, err := ParseInnerFrameBody(rec.Body, tt.next)
		if err != nil || got.Position != tt.pos || got.Channel != 3 || string(got.Payload) != "p" {
			t.Errorf("pos %d after %d: decoded %+v, %v", tt.pos, tt.next, got, err)
		}
	}
	if _, err := ParseInnerFrameBody([]byte{1, 0x80}, 0); !errors.Is(err, ErrBadBody) {
		t.Errorf("bad varint: %v", err)
	}
}

// TestInnerFrameFastPath checks the one-byte fast paths of ParseInner,
// ParseInnerFrameBody and ParseFrameBody against the varint rules at the
// byte boundaries (127, 128) of the record length, channel id and position
// delta: every frame round-trips, and every cut of it is
// io.ErrUnexpectedEOF.
func TestInnerFrameFastPath(t *testing.T) {
	for _, ch := range []frames.ChannelID{0, 1, 127, 128, 300} {
		for _, pos := range []frames.Position{0, 1, 63, 64, 127, 128, 1 << 40} {
			for _, size := range []int{0, 1, 123, 124, 125, 126, 200} {
				f := frames.Frame{Channel: ch, Position: pos, Payload: bytes.Repeat([]byte{'x'}, size)}
				b := AppendInnerFrame(nil, f, 0)
				rec, n, err := ParseInner(b)
				if err != nil || n != len(b) || rec.Type != TypeFrame {
					t.Fatalf("ch %d pos %d size %d: ParseInner = %v, %d, %v; want a Frame of %d bytes", ch, pos, size, rec.Type, n, err, len(b))
				}
				g, err := ParseInnerFrameBody(rec.Body, 0)
				if err != nil || g.Channel != ch || g.Position != pos || !bytes.Equal(g.Payload, f.Payload) {
					t.Fatalf("ch %d pos %d size %d: ParseInnerFrameBody = %+v, %v", ch, pos, size, g, err)
				}
				o := AppendFrameBody(nil, f)
				if g, err = ParseFrameBody(o); err != nil || g.Channel != ch || g.Position != pos || !bytes.Equal(g.Payload, f.Payload) {
					t.Fatalf("ch %d pos %d size %d: ParseFrameBody = %+v, %v", ch, pos, size, g, err)
				}
				for cut := range len(b) {
					if _, _, err := ParseInner(b[:cut]); err != io.ErrUnexpectedEOF {
						t.Fatalf("ch %d pos %d size %d cut at %d: ParseInner err %v, want io.ErrUnexpectedEOF", ch, pos, size, cut, err)
					}
				}
			}
		}
	}
}
