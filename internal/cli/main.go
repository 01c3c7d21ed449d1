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

// version is the release's, stamped into the main (-ldflags "-X
// main.version=…") and given to Main; "" for any other build.
var version = ""

// Main is the program, depthspace or a companion (cmd/*/main.go):
// stamped is the version the release build stamped into that main ("" if
// none). It gives the exit status.
func Main(stamped string) int {
	version = stamped
	// Before anything else, without allocating, and only for a run that
	// names a URL of a companion's scheme (the first read of the
	// environment copies it: 2.5% of a short run's CPU): a run handed
	// over by depthspace of another version is refused, and a run naming
	// a URL this build has no place for is its companion's (companion.go).
	if url := companionURL(os.Args[1:]); url != "" {
		if err := checkHandOver(os.Getenv(versionEnv), os.Getenv(companionEnv), url); err != nil {
			fmt.Fprintln(os.Stderr, "depthspace: "+err.Error())
			return exitError
		}
		if c, url, help := scanArgs(os.Args[1:], builtIn); c != nil && !(help && findCompanion(c.program) == "") {
			return runCompanion(c, url, os.Args, os.Stderr)
		}
	}
	// No allocation sampling: nothing reads the profile, and a sampled
	// allocation costs a stack walk (perf: 2% of a run on a tiny file).
	runtime.MemProfileRate = 0
	// The spare P for I/O workers is given when workers start (ops.SpareP).
	return run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
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
