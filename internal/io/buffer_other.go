//go:build !linux

package fileio

// Buffer returns n bytes for a reused work buffer.
func Buffer(n int) []byte { return make([]byte, n) }
