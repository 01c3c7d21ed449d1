//go:build !linux

package testpeer

import "testing"

// Tmpfs is Linux-only: elsewhere full-disk tests are skipped.
func Tmpfs(t testing.TB, size string) string {
	t.Skip("full-disk tests mount a tmpfs: Linux only")
	return ""
}
