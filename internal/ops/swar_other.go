//go:build !amd64

package ops

// Other architectures use the portable kernels of swar.go.
func archDeint(e, n int) deintRowsFunc { return nil }
func archInter(e, n int) interRowsFunc { return nil }
func archCopy(dst []byte, off int, src []byte, soff, n int, t *tiles) bool {
	return false
}
