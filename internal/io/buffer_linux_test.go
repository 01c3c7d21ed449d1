package fileio

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestBufferHoldsWhatItIsAskedFor: a mapped buffer under hugeRounded is
// rounded to small pages, not to a huge page, and filling it adds about
// its size to the process's anonymous memory, not a huge page's (a
// 1 MiB buffer took 2 MiB); a large one is still whole huge pages, from
// a huge page's boundary.
func TestBufferHoldsWhatItIsAskedFor(t *testing.T) {
	for _, n := range []int{1 << 20, 1<<20 + 100, 3<<20 + 5} {
		b := newBuffer(n)
		if cap(b) < n || cap(b) > n+smallRound {
			t.Errorf("newBuffer(%d): capacity %d, want at most %d", n, cap(b), n+smallRound)
		}
		before := rssAnon(t)
		for i := 0; i < cap(b); i += 4096 {
			b[i] = 1
		}
		if grown := rssAnon(t) - before; grown > int64(cap(b))+512<<10 {
			t.Errorf("newBuffer(%d) filled: RssAnon grew by %d bytes", n, grown)
		}
		releaseBuffer(b)
	}
	b := newBuffer(hugeRounded + 1)
	if cap(b)%huge != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%huge != 0 {
		t.Errorf("newBuffer(%d): capacity %d at %p, not whole huge pages", hugeRounded+1, cap(b), unsafe.SliceData(b))
	}
	releaseBuffer(b)
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
