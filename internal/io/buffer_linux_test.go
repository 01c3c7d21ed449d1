package fileio

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestBufferHoldsWhatItIsAskedFor: a mapped buffer is rounded to 64 KiB,
// not to a huge page, and filling it adds about what was asked for to
// the process's anonymous memory, not whole huge pages' (a 1 MiB buffer
// took 2 MiB, 16 MiB and 393 bytes took 18 MiB); it starts on a huge
// page's boundary, so that those wholly inside it can be huge.
func TestBufferHoldsWhatItIsAskedFor(t *testing.T) {
	for _, n := range []int{1 << 20, 1<<20 + 100, 3<<20 + 5, 16<<20 + 393} {
		b := newBuffer(n)
		if cap(b) < n || cap(b) >= n+smallRound {
			t.Errorf("newBuffer(%d): capacity %d, want under %d", n, cap(b), n+smallRound)
		}
		if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%huge != 0 {
			t.Errorf("newBuffer(%d) at %p, not on a huge page's boundary", n, unsafe.SliceData(b))
		}
		before := rssAnon(t)
		for i := 0; i < n; i += 4096 {
			b[i] = 1
		}
		b[n-1] = 1
		if grown := rssAnon(t) - before; grown > int64(n)+512<<10 {
			t.Errorf("newBuffer(%d) filled: RssAnon grew by %d bytes", n, grown)
		}
		releaseBuffer(b)
	}
}

// rssAnon is the process's RssAnon, in bytes.
func rssAnon(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no RssAnon in /proc/self/status")
	return 0
}
