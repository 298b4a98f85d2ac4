package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Collect writes its URL file when ready, holds the store against a
// second Collect, and removes the file when interrupted.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	store, urlFile := filepath.Join(dir, "store"), filepath.Join(dir, "url")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := Collect(ctx, CollectOptions{Store: store, Server: ServerOptions{Listen: "127.0.0.1:0"}, URLFile: urlFile,
			Ready: func(url string) { ready <- url }})
		done <- err
	}()
	var url string
	select {
	case url = <-ready:
	case err := <-done:
		t.Fatal(err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready within 30 s")
	}
	if b, err := os.ReadFile(urlFile); err != nil || string(b) != url+"\n" || !strings.HasSuffix(url, "/ds") {
		t.Fatalf("url file %q %v, Ready %q", b, err, url)
	}
	_, err := Collect(context.Background(), CollectOptions{Store: store, Server: ServerOptions{Listen: "127.0.0.1:0"}})
	if err == nil || !strings.Contains(err.Error(), "another ds collect runs on this store") {
		t.Errorf("second Collect: %v", err)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		// Interrupted while the consumer starts: ctx's error.
		t.Fatalf("interrupted: %v", err)
	}
	if _, err := os.Stat(urlFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("url file after exit: %v", err)
	}
}

// TestFindHelperMissing: without ds-natsd beside the executable or on
// $PATH, the error names where it looked and how to install it.
func TestFindHelperMissing(t *testing.T) {
	t.Setenv(HelperEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err := FindHelper()
	if err == nil {
		t.Fatal("found a ds-natsd on an empty $PATH")
	}
	for _, want := range []string{"ds-natsd not found in ", " nor on $PATH", "go install ./cmd/...", "$DS_NATSD"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	helper := filepath.Join(t.TempDir(), "my-natsd")
	if err := os.WriteFile(helper, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(HelperEnv, helper)
	if p, err := FindHelper(); err != nil || p != helper {
		t.Errorf("FindHelper with $DS_NATSD = %q, %v; want %q", p, err, helper)
	}
}
