//go:build unix

package cli

import "syscall"

// execProgram replaces this process with path: the same pid, descriptors
// and signal dispositions; its exit status is the run's. It returns only
// when the exec failed.
func execProgram(path string, argv, env []string) (int, error) {
	return exitError, syscall.Exec(path, argv, env)
}
