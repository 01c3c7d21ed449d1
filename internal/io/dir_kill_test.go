//go:build unix

package fileio

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
)

// TestDirOutputKilled: a local store's run killed by SIGKILL (which
// nothing catches) before Commit leaves the target as it was, a store
// or nothing, and its half-built store only in a staging directory
// beside it, named as temporary outputs are: the next run writes the
// target and never touches what the killed one left. A directory at
// the target that is not a store (chunk-shaped files alone) is refused,
// as on a place without the marker.
func TestDirOutputKilled(t *testing.T) {
	if dir := os.Getenv("DEPTHSPACE_TEST_KILLED_STORE"); dir != "" {
		o, err := CreateDir(filepath.Join(dir, "s.zarr"), isStore)
		if err != nil {
			os.Exit(3)
		}
		for _, k := range []string{"c/0", "c/1", "meta"} {
			if err := o.Put(k, []byte("killed run")); err != nil {
				os.Exit(3)
			}
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	for _, previous := range []bool{false, true} {
		dir := t.TempDir()
		target := filepath.Join(dir, "s.zarr")
		if previous {
			os.MkdirAll(filepath.Join(target, "c"), 0o755)
			os.WriteFile(filepath.Join(target, "meta"), []byte("old"), 0o644)
			os.WriteFile(filepath.Join(target, "c", "0"), []byte("old"), 0o644)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestDirOutputKilled$")
		cmd.Env = append(os.Environ(), "DEPTHSPACE_TEST_KILLED_STORE="+dir)
		err := cmd.Run()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("previous %v: the run was not killed: %v", previous, err)
		}
		if b, err := os.ReadFile(filepath.Join(target, "meta")); previous && string(b) != "old" || !previous && err == nil {
			t.Errorf("previous %v: the target changed: meta %q, %v", previous, b, err)
		}
		staging := regexp.MustCompile(`^\.s\.zarr\.depthspace-[0-9]+\.tmp$`)
		ents, _ := os.ReadDir(dir)
		var left []string
		for _, e := range ents {
			if e.Name() != "s.zarr" {
				left = append(left, e.Name())
			}
		}
		if len(left) != 1 || !staging.MatchString(left[0]) {
			t.Fatalf("previous %v: beside the target %q, want one staging directory .s.zarr.depthspace-*.tmp", previous, left)
		}
		o, err := CreateDir(target, isStore)
		if err != nil {
			t.Fatalf("previous %v: the next run: %v", previous, err)
		}
		o.Put("meta", []byte("new"))
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, left[0], "c", "1")); string(b) != "killed run" {
			t.Errorf("previous %v: the next run touched the killed run's staging directory", previous)
		}
	}

	dir := t.TempDir()
	chunks := filepath.Join(dir, "logs")
	os.MkdirAll(filepath.Join(chunks, "x"), 0o755)
	for _, f := range []string{"1", "2", "x/0.0"} {
		os.WriteFile(filepath.Join(chunks, f), []byte("someone else's"), 0o644)
	}
	if _, err := CreateDir(chunks, isStore); err == nil {
		t.Error("a directory of chunk-shaped files and no metadata was taken for a store to replace")
	}
}
