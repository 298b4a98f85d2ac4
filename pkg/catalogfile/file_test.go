package catalogfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ds-telemetry/ds/pkg/frames"
)

// goldenCatalog has every shape a file can hold: a declared stream with
// labels and all content classes, a stream without channels, an undeclared
// stream, and several sources.
func goldenCatalog(t *testing.T) *Catalog {
	t.Helper()
	c := mustAdd(t, "run.dss", sDesc, c1, c2, c3,
		frames.ChannelDescriptor{Stream: sID, ID: 4, Name: "raw.blob", Content: frames.Bytes()},
		frames.ChannelDescriptor{Stream: sID, ID: 5, Name: "record.noschema", Content: frames.JSONRecord("")},
		frames.StreamDescriptor{Stream: bID, Origin: frames.OriginOrchestrator},
	)
	if err := c.AddChannel(frames.ChannelDescriptor{Stream: s2ID, ID: 1, Name: "proc.<tool>&.stdout", Content: frames.TextStream()}, "-"); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWriteToGolden(t *testing.T) {
	var buf bytes.Buffer
	n, err := goldenCatalog(t).WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("WriteTo returned %d, wrote %d bytes", n, buf.Len())
	}
	golden := filepath.Join("testdata", "catalog.golden")
	if os.Getenv("DS_UPDATE") != "" {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (DS_UPDATE=1 writes it)", err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("WriteTo differs from %s (-want +got; DS_UPDATE=1 rewrites it):\n%s", golden, diff)
	}
}

// TestFileIsJQFriendly checks the promises of the package doc: the jq paths
// work, and every entry minus "source" (and "channels") is a seed descriptor.
func TestFileIsJQFriendly(t *testing.T) {
	c := goldenCatalog(t)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version int
		Streams []map[string]json.RawMessage
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range doc.Streams {
		var chans []map[string]json.RawMessage
		if err := json.Unmarshal(s["channels"], &chans); err != nil {
			t.Fatalf("channels: %v", err)
		}
		for _, ch := range chans {
			var name string
			json.Unmarshal(ch["name"], &name)
			names = append(names, name)

			var d frames.ChannelDescriptor
			delete(ch, "source")
			if err := json.Unmarshal(marshal(t, ch), &d); err != nil {
				t.Fatal(err)
			}
			if want := marshal(t, d); !bytes.Equal(canonical(t, marshal(t, ch)), canonical(t, want)) {
				t.Errorf("channel entry %s is not the seed descriptor %s", marshal(t, ch), want)
			}
		}
		delete(s, "channels")
		delete(s, "source")
		if string(s["origin"]) == "null" {
			continue // undeclared
		}
		var d frames.StreamDescriptor
		if err := json.Unmarshal(marshal(t, s), &d); err != nil {
			t.Fatal(err)
		}
		if want := marshal(t, d); !bytes.Equal(canonical(t, marshal(t, s)), canonical(t, want)) {
			t.Errorf("stream entry %s is not the seed descriptor %s", marshal(t, s), want)
		}
	}
	want := []string{"host.resource", "proc.trainer.stdout", "membership", "raw.blob", "record.noschema", "proc.<tool>&.stdout"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf(".streams[].channels[].name (-want +got):\n%s", diff)
	}
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// canonical re-encodes JSON with sorted keys.
func canonical(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return marshal(t, v)
}

func TestRoundTrip(t *testing.T) {
	for name, c := range map[string]*Catalog{
		"empty":  New(),
		"golden": goldenCatalog(t),
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := c.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			got, err := Read(bytes.NewReader(buf.Bytes()), "ignored: every entry has a source")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(dump(c), dump(got)); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
			var again bytes.Buffer
			got.WriteTo(&again)
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Errorf("second write differs:\n%s\nvs\n%s", buf.Bytes(), again.Bytes())
			}
		})
	}
}

func TestRead(t *testing.T) {
	const s = `"stream":{"node":"node-alpha","life":1}`
	tests := []struct {
		name    string
		in      string
		want    *Catalog
		wantErr error
		wantMsg string // substring of the error
	}{
		{name: "empty catalog", in: `{"version":1,"streams":[]}`, want: New()},
		{name: "missing version and streams", in: `{}`, want: New()},
		{name: "null streams", in: `{"streams":null}`, want: New()},
		{
			name: "missing fields defaulted, unknown fields ignored",
			in: `{"version":1,"comment":"x","streams":[{` + s + `,"extra":[1,2],"channels":[` +
				`{"id":1,"name":"host.resource","content":{"JsonRecord":{"schema":"host.resource"}},"x":{}},` +
				`{"id":2,"name":"raw","content":null}]}]}`,
			want: mustAdd(t, "in.json", frames.StreamDescriptor{Stream: sID}, c1,
				frames.ChannelDescriptor{Stream: sID, ID: 2, Name: "raw", Content: frames.Bytes()}),
		},
		{
			name: "own sources kept, others from Read",
			in:   `{"streams":[{` + s + `,"origin":"Bootstrap","label":"trainer","source":"a.dss","channels":[{"id":1,"name":"host.resource","content":{"JsonRecord":{"schema":"host.resource"}}}]}]}`,
			want: func() *Catalog {
				c := mustAdd(t, "a.dss", sDesc)
				c.AddChannel(c1, "in.json")
				return c
			}(),
		},
		{
			name: "undeclared stream",
			in:   `{"streams":[{` + s + `,"origin":null,"channels":[{"id":2,"name":"proc.trainer.stdout","content":"TextStream"}]}]}`,
			want: mustAdd(t, "in.json", c2),
		},
		{
			name: "one stream in two entries",
			in:   `{"streams":[{` + s + `,"channels":[{"id":2,"name":"proc.trainer.stdout","content":"TextStream"}]},{` + s + `}]}`,
			want: mustAdd(t, "in.json", frames.StreamDescriptor{Stream: sID}, c2),
		},

		{name: "empty input", in: " \n", wantErr: ErrFormat, wantMsg: "empty input"},
		{name: "syntax error", in: "{\n  \"version\": 1,\n  \"streams\": [}\n", wantErr: ErrFormat, wantMsg: "line 3, column 15: invalid character '}'"},
		{name: "truncated", in: `{"streams":[`, wantErr: ErrFormat, wantMsg: "unexpected end of JSON input"},
		{name: "trailing data", in: `{} {}`, wantErr: ErrFormat, wantMsg: "line 1, column 4"},
		{name: "top level array", in: `[]`, wantErr: ErrFormat, wantMsg: "top level must be an object"},
		{name: "version 2", in: `{"version":2}`, wantErr: ErrUnknownVersion, wantMsg: "unknown catalog version 2 (this ds reads version 1)"},
		{name: "version a string", in: `{"version":"1"}`, wantErr: ErrFormat, wantMsg: "version: want an integer, got string"},
		{name: "streams an object", in: `{"streams":{}}`, wantErr: ErrFormat, wantMsg: "streams: want an array, got object"},
		{name: "stream entry a string", in: `{"streams":["x"]}`, wantErr: ErrFormat, wantMsg: "streams[0]: want an object, got string"},
		{name: "missing stream", in: `{"streams":[{"origin":"RemoteNode"}]}`, wantErr: ErrFormat, wantMsg: `streams[0]: missing "stream"`},
		{name: "bad life", in: `{"streams":[{"stream":{"node":"n","life":-1}}]}`, wantErr: ErrFormat, wantMsg: "streams[0].stream: want"},
		{name: "bad origin", in: `{"streams":[{` + s + `,"origin":"Cloud"}]}`, wantErr: ErrFormat, wantMsg: `streams[0].origin: want "RemoteNode", "Orchestrator" or "Bootstrap": frames: bad JSON: unknown stream origin "Cloud"`},
		{name: "label a number", in: `{"streams":[{` + s + `,"label":5}]}`, wantErr: ErrFormat, wantMsg: "streams[0].label: want a string or null, got number"},
		{name: "undeclared with label", in: `{"streams":[{` + s + `,"origin":null,"label":"x"}]}`, wantErr: ErrFormat, wantMsg: "undeclared stream"},
		{name: "channels an object", in: `{"streams":[{` + s + `,"channels":{}}]}`, wantErr: ErrFormat, wantMsg: "streams[0].channels: want an array"},
		{name: "channel missing id", in: `{"streams":[{` + s + `,"channels":[{"name":"x"}]}]}`, wantErr: ErrFormat, wantMsg: `streams[0].channels[0]: missing "id"`},
		{name: "channel missing name", in: `{"streams":[{` + s + `,"channels":[{"id":1}]}]}`, wantErr: ErrFormat, wantMsg: `streams[0].channels[0]: missing "name"`},
		{name: "channel id too large", in: `{"streams":[{` + s + `,"channels":[{"id":4294967296,"name":"x"}]}]}`, wantErr: ErrFormat, wantMsg: "streams[0].channels[0].id: want a channel id from 1 to 4294967295, got number 4294967296"},
		{name: "channel id 0", in: `{"streams":[{` + s + `,"channels":[{"id":0,"name":"x"}]}]}`, wantErr: ErrInvalid, wantMsg: "(at streams[0].channels[0])"},
		{name: "channel bad content", in: `{"streams":[{` + s + `,"channels":[{"id":1,"name":"x","content":"Text"}]}]}`, wantErr: ErrFormat, wantMsg: `streams[0].channels[0].content: want`},
		{
			name:    "channel of another stream",
			in:      `{"streams":[{` + s + `,"channels":[{"stream":{"node":"node-beta","life":1},"id":1,"name":"x"}]}]}`,
			wantErr: ErrFormat, wantMsg: "streams[0].channels[0]: channel of stream node-beta#1 in the entry of stream node-alpha#1",
		},
		{
			name:    "conflicting channels",
			in:      `{"streams":[{` + s + `,"channels":[{"id":1,"name":"x"},{"id":2,"name":"x"}]}]}`,
			wantErr: ErrConflict, wantMsg: `channel name "x" of stream node-alpha#1 is id 1 in "in.json" and id 2 in "in.json" (at streams[0].channels[1])`,
		},
		{
			name:    "conflicting stream entries",
			in:      `{"streams":[{` + s + `},{` + s + `,"origin":"Bootstrap","source":"b.dss"}]}`,
			wantErr: ErrConflict, wantMsg: `from "in.json", {"stream":{"node":"node-alpha","life":1},"label":null,"origin":"Bootstrap"} from "b.dss" (at streams[1])`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tt.in), "in.json")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "catalogfile: ") || !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("error %q, want one containing %q", err, tt.wantMsg)
				}
				if got != nil {
					t.Errorf("a failed Read returned a catalog")
				}
				return
			}
			if diff := cmp.Diff(dump(tt.want), dump(got)); diff != "" {
				t.Errorf("catalog (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadLimits(t *testing.T) {
	boom := errors.New("boom")
	if _, err := Read(iotest.ErrReader(boom), "x"); !errors.Is(err, boom) {
		t.Errorf("failing reader: error = %v, want %v", err, boom)
	}
	if testing.Short() {
		t.Skip("reads 64 MiB")
	}
	big := io.MultiReader(strings.NewReader(`{"streams":[`), io.LimitReader(spaces{}, MaxFileSize))
	if _, err := Read(big, "x"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("file over MaxFileSize: error = %v, want ErrTooLarge", err)
	}
}

// spaces reads as endless spaces.
type spaces struct{}

var spaceBlock = bytes.Repeat([]byte(" "), 64<<10)

func (spaces) Read(p []byte) (int, error) {
	return copy(p, spaceBlock), nil
}

func TestWriteToError(t *testing.T) {
	boom := errors.New("boom")
	_, err := goldenCatalog(t).WriteTo(errWriter{boom})
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
}

type errWriter struct{ err error }

func (w errWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWriteFileReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.json")
	c := goldenCatalog(t)
	if err := WriteFile(path, c); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("new file mode %v, want 0644", fi.Mode().Perm())
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(dump(c), dump(got)); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}

	// Replacing keeps the mode and leaves no temporary file.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, New()); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want 0600", fi.Mode().Perm())
	}
	assertOnly(t, dir, "catalog.json")
	if got, err := ReadFile(path); err != nil || len(got.Streams()) != 0 {
		t.Errorf("after replacing: %v, %v", got, err)
	}

	// A relative path writes in the current directory.
	t.Chdir(dir)
	if err := WriteFile("rel.json", c); err != nil {
		t.Fatal(err)
	}
	assertOnly(t, dir, "catalog.json", "rel.json")
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error = %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte("{\n,"), 0o644)
	_, err := ReadFile(bad)
	if !errors.Is(err, ErrFormat) || !strings.HasSuffix(err.Error(), "(in "+bad+")") || !strings.Contains(err.Error(), "line 2, column 1") {
		t.Errorf("bad file: error = %v", err)
	}
}

// TestWriteFileFailureLeavesOriginal makes WriteFile fail at each stage it
// can and checks that the original file is intact and no temporary is left.
func TestWriteFileFailureLeavesOriginal(t *testing.T) {
	original := []byte("original\n")
	setup := func(t *testing.T) (dir, path string) {
		dir = t.TempDir()
		path = filepath.Join(dir, "catalog.json")
		if err := os.WriteFile(path, original, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir, path
	}
	check := func(t *testing.T, dir, path string) {
		t.Helper()
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, original) {
			t.Errorf("original now %q, %v", got, err)
		}
		assertOnly(t, dir, "catalog.json")
	}

	t.Run("failure before rename", func(t *testing.T) {
		dir, path := setup(t)
		boom := errors.New("boom")
		var sawTemp bool
		testHookBeforeRename = func(tmp string) error {
			_, err := os.Stat(tmp)
			sawTemp = err == nil && filepath.Dir(tmp) == dir
			return boom
		}
		defer func() { testHookBeforeRename = nil }()
		if err := WriteFile(path, goldenCatalog(t)); !errors.Is(err, boom) {
			t.Errorf("error = %v, want %v", err, boom)
		}
		if !sawTemp {
			t.Error("the temporary file was not in the target's directory")
		}
		check(t, dir, path)
	})

	t.Run("rename fails", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "catalog.json")
		if err := os.Mkdir(target, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(target, "keep"), original, 0o644)
		if err := WriteFile(target, goldenCatalog(t)); err == nil {
			t.Fatal("WriteFile over a non-empty directory succeeded")
		}
		assertOnly(t, dir, "catalog.json")
		if got, _ := os.ReadFile(filepath.Join(target, "keep")); !bytes.Equal(got, original) {
			t.Errorf("directory contents changed: %q", got)
		}
	})

	t.Run("unwritable directory", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root can write to a read-only directory")
		}
		dir, path := setup(t)
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		if err := WriteFile(path, goldenCatalog(t)); !errors.Is(err, os.ErrPermission) {
			t.Errorf("error = %v, want os.ErrPermission", err)
		}
		check(t, dir, path)
	})

	t.Run("missing directory", func(t *testing.T) {
		dir := t.TempDir()
		err := WriteFile(filepath.Join(dir, "no", "catalog.json"), New())
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error = %v, want os.ErrNotExist", err)
		}
		assertOnly(t, dir)
	})
}

// assertOnly checks that dir holds exactly the named entries.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if diff := cmp.Diff(names, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s holds (-want +got):\n%s", dir, diff)
	}
}

func FuzzRead(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "catalog.golden"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"version":1,"streams":[{"stream":{"node":"n","life":1},"origin":null,"channels":[{"id":1,"name":"x","content":{"JsonRecord":null}}]}]}`))
	f.Add([]byte(`{"streams":[{"stream":{"node":"n","life":1}},{"stream":{"node":"n","life":1},"label":"x"}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Read(bytes.NewReader(in), "fuzz")
		if err != nil {
			if c != nil || !strings.HasPrefix(err.Error(), "catalogfile: ") {
				t.Fatalf("Read = %v, %v", c, err)
			}
			return
		}
		// Whatever reads writes a file that reads back the same, and that
		// file is canonical.
		var first bytes.Buffer
		if _, err := c.WriteTo(&first); err != nil {
			t.Fatalf("WriteTo: %v", err)
		}
		c2, err := Read(bytes.NewReader(first.Bytes()), "second")
		if err != nil {
			t.Fatalf("reading what WriteTo wrote: %v\n%s", err, first.Bytes())
		}
		if diff := cmp.Diff(dump(c), dump(c2)); diff != "" {
			t.Fatalf("read back differs (-first +second):\n%s", diff)
		}
		var second bytes.Buffer
		c2.WriteTo(&second)
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("not canonical:\n%s\nvs\n%s", first.Bytes(), second.Bytes())
		}
	})
}
