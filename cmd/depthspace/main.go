// Command depthspace performs space-to-depth and depth-to-space on tensor
// files (.npy, raw bytes, JSON). This package is only the command line:
// flags become a pipeline.Options, and the work happens in internal/.
package main

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

func main() {
	// Before anything else, without allocating: a run naming an s3://
	// URL in a build without S3 is the companion's (companion.go).
	if c := companionFor(os.Args[1:]); c != nil {
		os.Exit(runCompanion(c, os.Args, os.Stderr))
	}
	// No allocation sampling: nothing reads the profile, and a sampled
	// allocation costs a stack walk (perf: 2% of a run on a tiny file).
	runtime.MemProfileRate = 0
	// One P more than the Go default (the cores): a worker in a long read
	// or write (milliseconds for a few MiB) keeps its P while another
	// is idle, where with every P busy the runtime's monitor takes the P
	// back from each such call and wakes every 20 µs to look again: 400
	// files of 3 MiB made 9,000 context switches, 3,400 with the spare P,
	// in 0.86x the time. -j still sets how many goroutines work. (Set
	// once, it is no longer adjusted when a container's CPU limit
	// changes during the run.)
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1)
	}
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
