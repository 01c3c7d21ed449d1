//go:build !unix

package objstore

import "os"

// running says whether the process pid is alive: it can be found.
func running(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
