//go:build !unix

package objstore

// newMem is an empty buffer of capacity n.
func newMem(n int) []byte { return make([]byte, 0, n) }
