//go:build unix && !linux

package fileio

// oTmpfile: no O_TMPFILE here; Scratch removes a named file at once.
const oTmpfile = 0
