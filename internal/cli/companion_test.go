package cli

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

// TestScanArgs: the argv scan that decides whether a run is handed to a
// companion, in a build with no place for s3:// (none), and in one with
// it built in (nothing is handed over).
func TestScanArgs(t *testing.T) {
	none := func(string) bool { return false }
	for _, tc := range []struct {
		args []string
		url  string // "" for no hand-over
		help bool
	}{
		{[]string{"s2d", "-b", "2", "in.npy", "-o", "out.npy"}, "", false},
		{[]string{"info", "s3://b/in.npy"}, "s3://b/in.npy", false},
		{[]string{"info", "S3://B/in.npy"}, "S3://B/in.npy", false},
		{[]string{"s2d", "in.npy", "-os3://b/out.npy"}, "s3://b/out.npy", false},
		{[]string{"s2d", "-qos3://b/out.npy", "in.npy"}, "s3://b/out.npy", false},
		{[]string{"s2d", "in.npy", "-o=S3://b/out.npy"}, "S3://b/out.npy", false},
		{[]string{"s2d", "--out-dir=S3://b/o/", "in.npy"}, "S3://b/o/", false},
		{[]string{"s2d", "--out-dir", "s3://b/o/", "in.npy"}, "s3://b/o/", false},
		// After "--" every argument is a file: a URL is still one, a
		// name starting with "-o" is not a flag holding one.
		{[]string{"s2d", "-o", "out/", "--", "s3://b/in.npy"}, "s3://b/in.npy", false},
		{[]string{"s2d", "-o", "out/", "--", "-os3://b/in.npy"}, "", false},
		{[]string{"s2d", "--", "--out-dir=s3://b/o/"}, "", false},
		// Local paths holding the scheme's text elsewhere.
		{[]string{"s2d", "s3:in.npy", "-o", "s3:out.npy"}, "", false},
		{[]string{"s2d", "./s3://b/in.npy", "-o./s3://b/out.npy"}, "", false},
		{[]string{"s2d", "dir/s3://b", "--out-dir=./s3://b"}, "", false},
		{[]string{"s2d", "-j2os3://b/x"}, "", false},
		// Help.
		{[]string{"--help", "s3://b/x"}, "s3://b/x", true},
		{[]string{"s2d", "-h", "-o", "s3://b/x"}, "s3://b/x", true},
		{[]string{"help", "s3://b/x"}, "s3://b/x", true},
		{[]string{"s2d", "-h"}, "", true},
		{[]string{"s2d", "--", "-h"}, "", false},
		{[]string{"info", "--", "--help", "s3://b/x"}, "s3://b/x", false},
	} {
		if got := companionURL(tc.args); got != tc.url {
			t.Errorf("%q: companionURL %q, want %q", tc.args, got, tc.url)
		}
		c, url, help := scanArgs(tc.args, none)
		if url != tc.url || help != tc.help || (c != nil) != (tc.url != "") {
			t.Errorf("%q: companion %v, url %q, help %v: want url %q, help %v", tc.args, c, url, help, tc.url, tc.help)
		}
		if c != nil && c.program != "depthspace-s3" {
			t.Errorf("%q: companion %q, want depthspace-s3", tc.args, c.program)
		}
		if c, _, _ := scanArgs(tc.args, func(string) bool { return true }); c != nil {
			t.Errorf("%q with s3:// built in: handed to %q, want none", tc.args, c.program)
		}
	}
}

// TestCheckHandOver: a companion refuses, in one line naming both
// versions, a run handed over by depthspace of another version; run
// directly (no DEPTHSPACE_COMPANION) it runs whatever DEPTHSPACE_VERSION
// says.
func TestCheckHandOver(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "1.4.2" // as a release build stamps it
	const url = "s3://b/o/"
	const path = "/opt/bin/depthspace-s3"
	for _, ok := range []struct{ parent, companion string }{
		{"1.4.2", path}, {"v1.4.2", path}, // go install reports "v1.4.2"
		{"", ""}, {"1.5.0", ""},
	} {
		if err := checkHandOver(ok.parent, ok.companion, url); err != nil {
			t.Errorf("parent %q, companion %q: %v: want the run accepted", ok.parent, ok.companion, err)
		}
	}
	for parent, want := range map[string]string{
		"1.5.0":                                "s3://b/o/: depthspace-s3 is version 1.4.2 and depthspace is version 1.5.0: a companion serves only its own version; install the same one: go install github.com/depthspace/depthspace/cmd/depthspace-s3@v1.5.0",
		"v1.4.3-0.20261127101300-0c0cb94abcd1": "s3://b/o/: depthspace-s3 is version 1.4.2 and depthspace is version v1.4.3-0.20261127101300-0c0cb94abcd1: a companion serves only its own version; install the same one: go install github.com/depthspace/depthspace/cmd/depthspace-s3@v1.4.3-0.20261127101300-0c0cb94abcd1",
		"dev":                                  "s3://b/o/: depthspace-s3 is version 1.4.2 and depthspace is version dev: a companion serves only its own version; install the same one: go install ./cmd/depthspace-s3 in depthspace's source tree",
		"":                                     "s3://b/o/: depthspace-s3 is version 1.4.2 and depthspace is version an earlier one, which names none: a companion serves only its own version; install the same one: the version `depthspace --version` gives",
	} {
		err := checkHandOver(parent, path, url)
		if err == nil || err.Error() != want {
			t.Errorf("parent %q: %v\nwant %s", parent, err, want)
		}
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
	code := runCompanion(&companions[0], "s3://b/k.npy", []string{"depthspace", "info", "s3://b/k.npy"}, &stderr)
	want := "depthspace: s3://b/k.npy: s3:// URLs need the companion program depthspace-s3, and " + p + " is not executable: make it so with chmod +x " + p + "\n"
	if code != exitError || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), exitError, want)
	}
}
