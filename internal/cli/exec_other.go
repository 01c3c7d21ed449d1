//go:build !unix

package cli

import (
	"os"
	"os/signal"
)

// execProgram runs path as a child with this process's standard input,
// output and error, and gives its exit status (Windows has no exec).
func execProgram(path string, argv, env []string) (int, error) {
	// Ctrl-C reaches the child too (the same console): this process waits
	// for it, so that the child aborts its uploads and its own exit status
	// (130) is the run's, instead of this one ending at once with
	// Windows' own status and the shell returning while the child works.
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
	defer signal.Reset(os.Interrupt)
	p, err := os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}})
	if err != nil {
		return exitError, err
	}
	st, err := p.Wait()
	if err != nil {
		return exitError, err
	}
	return st.ExitCode(), nil
}
