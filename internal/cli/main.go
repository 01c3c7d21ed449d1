// Package cli is depthspace's command tree: space-to-depth and
// depth-to-space on tensor files. This package is only the command line:
// flags become a pipeline.Options, and the work happens in internal/.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is stamped by the release build (-ldflags "-X main.version=…").
var version = ""

// Main is the program: cmd/depthspace's main calls it.
func Main() {
	// Before anything else, without allocating: a run naming an s3://
	// URL in a build without S3 is the companion's (companion.go).
	if c := companionFor(os.Args[1:]); c != nil && !(asksForHelp(os.Args[1:]) && findCompanion(c.program) == "") {
		os.Exit(runCompanion(c, os.Args, os.Stderr))
	}
	// No allocation sampling: nothing reads the profile, and a sampled
	// allocation costs a stack walk (perf: 2% of a run on a tiny file).
	runtime.MemProfileRate = 0
	// The spare P for I/O workers is given when workers start (ops.SpareP).
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses, as SPEC: 0 success, 1 compare found a difference, 2 anything else.
const (
	exitOK        = 0
	exitDifferent = 1
	exitError     = 2
)

// errDifferent makes run exit 1 without printing anything more.
var errDifferent = errors.New("different")

// run is main without the process: tests call it directly.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			// A bug, not bad input: still one line and exit 2, never a trace.
			fmt.Fprintf(stderr, "depthspace: internal error: %v (please report this)\n", r)
			code = exitError
		}
	}()
	root := newRootCmdFor(&streams{in: stdin, out: stdout, err: stderr}, args)
	root.SetArgs(args)
	err := root.Execute()
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errDifferent):
		return exitDifferent
	}
	fmt.Fprintln(stderr, "depthspace: "+oneLine(err.Error()))
	return exitError
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
