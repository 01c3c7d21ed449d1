package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// Plain depthspace has no place but local files and standard input and
// output: S3's client (net/http, a TLS stack) made every run start 1.3×
// slower, S3 or not. A run naming an s3:// URL is handed, as git hands
// https:// to git-remote-https, to the companion program depthspace-s3,
// which is this program built with -tags s3 (s3.go), S3 built in; it
// replaces this process (same pid, descriptors, signals and exit
// status). docs/objects.md says how to install it.
var companions = []struct {
	scheme, program, tags string
}{
	{"s3://", "depthspace-s3", "s3"},
}

// companionEnv is set for the companion: a companion without the place
// (built without its tag) says so instead of handing the run on again.
const companionEnv = "DEPTHSPACE_COMPANION"

// companionFor is the companion a run with these arguments needs: the
// first whose scheme this build has no place for and that an argument or
// a flag's value (--out-dir=s3://…, -os3://…) names. nil: none.
func companionFor(args []string) *struct{ scheme, program, tags string } {
	for i := range companions {
		c := &companions[i]
		if fileio.PlaceOf(c.scheme) != nil {
			continue // built in
		}
		for _, a := range args {
			if namesURL(a, c.scheme) {
				return c
			}
		}
	}
	return nil
}

// namesURL: arg is a URL of scheme, or a flag holding one as its value.
func namesURL(arg, scheme string) bool { return urlAt(arg, scheme) >= 0 }

// urlAt is where in arg a URL of scheme starts (0, or after a flag's
// name: --out-dir=s3://…, -os3://…); -1 for none.
func urlAt(arg, scheme string) int {
	if hasPrefixFold(arg, scheme) {
		return 0
	}
	if len(arg) > 1 && arg[0] == '-' {
		for i := 2; i+len(scheme) <= len(arg); i++ {
			if hasPrefixFold(arg[i:], scheme) {
				return i
			}
		}
	}
	return -1
}

// firstURL is the first URL of scheme the arguments name, for an error
// line that names it as SPEC's "depthspace: PATH: what is wrong" does.
func firstURL(args []string, scheme string) string {
	for _, a := range args {
		if i := urlAt(a, scheme); i >= 0 {
			return a[i:]
		}
	}
	return scheme
}

// asksForHelp: the run shows help (-h, --help, the help command), which
// needs no place: without the companion it is shown here, not refused.
func asksForHelp(args []string) bool {
	if len(args) > 0 && args[0] == "help" {
		return true
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "--help" {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// runCompanion hands the run (args are os.Args) to c's program, found
// next to this executable (links resolved), else on PATH. It returns
// only on failure: the exit status, the reason said on stderr.
func runCompanion(c *struct{ scheme, program, tags string }, args []string, stderr io.Writer) int {
	if self := os.Getenv(companionEnv); self != "" {
		fmt.Fprintf(stderr, "depthspace: %s: %s was run for %s URLs but has no %s built in: build it with go build -tags %s\n", firstURL(args[1:], c.scheme), self, c.scheme, c.scheme, c.tags)
		return exitError
	}
	path := findCompanion(c.program)
	if path == "" {
		if p := unrunnableCompanion(c.program); p != "" {
			fmt.Fprintf(stderr, "depthspace: %s: %s URLs need the companion program %s, and %s is not executable: make it so with chmod +x %s\n", firstURL(args[1:], c.scheme), c.scheme, c.program, p, p)
			return exitError
		}
		fmt.Fprintf(stderr, "depthspace: %s: %s URLs need the companion program %s, found neither next to depthspace nor on PATH: install it from the release archive, or build it from the source with %s\n", firstURL(args[1:], c.scheme), c.scheme, c.program, buildLine(c.program, c.tags))
		return exitError
	}
	env := append(os.Environ(), companionEnv+"="+path)
	code, err := execProgram(path, append([]string{path}, args[1:]...), env)
	if err != nil {
		fmt.Fprintf(stderr, "depthspace: %s: running %s for %s URLs: %v\n", firstURL(args[1:], c.scheme), path, c.scheme, err)
		return exitError
	}
	return code
}

// buildLine is the command that builds program next to depthspace: a
// POSIX shell's, or on Windows the path itself (with its .exe, which
// findCompanion looks for there).
func buildLine(program, tags string) string {
	if runtime.GOOS != "windows" {
		return fmt.Sprintf(`go build -tags %s -o "$(dirname "$(command -v depthspace)")/%s" ./cmd/depthspace`, tags, program)
	}
	dir := "."
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	return fmt.Sprintf(`go build -tags %s -o "%s" ./cmd/depthspace`, tags, filepath.Join(dir, program+".exe"))
}

// findCompanion is the path of program next to this executable, else in
// an absolute directory of PATH; "" if neither.
func findCompanion(program string) string {
	for _, p := range companionPlaces(program) {
		if isProgram(p) {
			return p
		}
	}
	return ""
}

// unrunnableCompanion is the first of program's places holding a regular
// file that is not executable, or "": where no companion is found, that
// file is what the user installed, and what is wrong is its mode.
func unrunnableCompanion(program string) string {
	for _, p := range companionPlaces(program) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// companionPlaces are where program is looked for, in order: next to this
// executable (links resolved), then each absolute directory of PATH.
func companionPlaces(program string) []string {
	if runtime.GOOS == "windows" {
		program += ".exe"
	}
	var places []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		places = append(places, filepath.Join(filepath.Dir(exe), program))
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(dir) {
			// Not the current directory ("" or "."), nor one relative to
			// it ("bin"): exec.LookPath refuses those (exec.ErrDot), and
			// a run in someone's directory must not execute their file.
			continue
		}
		places = append(places, filepath.Join(dir, program))
	}
	return places
}

func isProgram(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}
