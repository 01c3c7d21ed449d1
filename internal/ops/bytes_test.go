package ops

import (
	"bytes"
	"math/rand"
	"runtime"
	"testing"
)

// TestDeinterleaveBytes checks both entry points against the definition on
// lengths around the 16-byte vectors and the 512-element chunks of the by-8
// path, with src and dst at every offset from a 16-byte boundary.
func TestDeinterleaveBytes(t *testing.T) {
	r := rand.New(rand.NewSource(34))
	for _, f := range []int{2, 4, 8} {
		for _, n := range []int{0, 1, 15, 16, 17, 63, 64, 511, 512, 513, 1500, 4099} {
			for _, shift := range []int{0, 1, 3, 8, 15} {
				buf := make([]byte, f*n+f-1+shift)
				r.Read(buf)
				src := buf[shift : shift+f*n+f-1] // and a part group, not moved
				want := make([]byte, f*n)
				for i := range n {
					for j := range f {
						want[j*n+i] = src[i*f+j]
					}
				}
				out := make([]byte, f*n+7+shift)
				r.Read(out)
				guard := append([]byte(nil), out[shift+f*n:]...)
				dst := out[shift:]
				if !DeinterleaveBytes(dst, src, f) {
					if runtime.GOARCH == "amd64" {
						t.Fatalf("by %d: no kernel on amd64", f)
					}
					continue
				}
				if !bytes.Equal(dst[:f*n], want) {
					t.Fatalf("DeinterleaveBytes by %d, %d groups, shift %d: differs from the definition", f, n, shift)
				}
				if !bytes.Equal(out[shift+f*n:], guard) {
					t.Fatalf("DeinterleaveBytes by %d, %d groups: wrote past its rows", f, n)
				}
				back := make([]byte, f*n+5)
				r.Read(back)
				tail := append([]byte(nil), back[f*n:]...)
				if !InterleaveBytes(back, want, f) {
					t.Fatalf("InterleaveBytes by %d: no kernel where DeinterleaveBytes has one", f)
				}
				if !bytes.Equal(back[:f*n], src[:f*n]) || !bytes.Equal(back[f*n:], tail) {
					t.Fatalf("InterleaveBytes by %d, %d groups, shift %d: not the inverse", f, n, shift)
				}
			}
		}
	}
	if DeinterleaveBytes(make([]byte, 6), make([]byte, 6), 3) || InterleaveBytes(make([]byte, 6), make([]byte, 6), 3) {
		t.Fatal("by 3: reported a kernel")
	}
}
