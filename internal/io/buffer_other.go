//go:build !linux

package fileio

func newBuffer(n int) []byte { return heapBuffer(n) }

func releaseBuffer([]byte) {} // the garbage collector's
