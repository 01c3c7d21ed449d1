//go:build !unix

package main

import "os"

// execProgram runs path as a child with this process's standard input,
// output and error, and gives its exit status (Windows has no exec).
func execProgram(path string, argv, env []string) (int, error) {
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
