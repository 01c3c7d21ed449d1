package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFindCompanionNotRelative: a PATH entry that is not absolute (".",
// "bin") names a directory relative to wherever the run happens to be,
// and a depthspace-s3 found there is not run, as exec.LookPath refuses
// such a result (exec.ErrDot): a run naming an s3:// URL in a directory
// holding someone's depthspace-s3 must not execute it. An absolute entry
// is still searched.
func TestFindCompanionNotRelative(t *testing.T) {
	name := "depthspace-s3"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Join(dir, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	sep := string(os.PathListSeparator)
	for _, path := range []string{".", "bin", "." + sep + "bin", "./bin", "", sep} {
		t.Setenv("PATH", path)
		if p := findCompanion("depthspace-s3"); p != "" {
			t.Errorf("PATH=%q: found %q in the current directory: want none", path, p)
		}
	}
	t.Setenv("PATH", "."+sep+filepath.Join(dir, "bin"))
	if p, want := findCompanion("depthspace-s3"), filepath.Join(dir, "bin", name); p != want {
		t.Errorf("PATH with an absolute entry: found %q, want %q", p, want)
	}
}

// TestCompanionNotExecutable: a depthspace-s3 on PATH without its
// executable bit is named, and said not to be executable: not "found
// neither".
func TestCompanionNotExecutable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no executable bit")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "depthspace-s3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv(companionEnv, "")
	var stderr strings.Builder
	code := runCompanion(&companions[0], []string{"depthspace", "info", "s3://b/k.npy"}, &stderr)
	want := "depthspace: s3://b/k.npy: s3:// URLs need the companion program depthspace-s3, and " + p + " is not executable: make it so with chmod +x " + p + "\n"
	if code != exitError || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), exitError, want)
	}
}
