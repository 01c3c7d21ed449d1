package pipeline

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// rchar is the number of bytes this process has read through read(2) and
// its kin so far (/proc/self/io).
func rchar(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("rchar: ")); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no rchar in /proc/self/io")
	return 0
}

// info reads headers only: describing a 900 KiB npy file (read whole
// before, as every input under 1 MiB was) reads a few hundred bytes,
// whether the format comes from the extension or from the content.
func TestDescribeReadsHeaderOnly(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"f900.npy", "f900.data"} {
		path := filepath.Join(dir, name)
		writeNpy(t, path, "<f4", []int{1, 3, 240, 320}, false, make([]byte, 3*240*320*4))
		before := rchar(t)
		infos, err := Describe(Source{Path: path}, nil)
		read := rchar(t) - before - int64(len("rchar: 1234567890\n")) // the second look at /proc/self/io
		if err != nil || len(infos) != 1 || infos[0].FileBytes != 921728 || infos[0].DataBytes != 921600 {
			t.Fatalf("%s: %+v, %v", name, infos, err)
		}
		if read > 64<<10 {
			t.Errorf("%s: describing it read %d bytes of a 921,728-byte file; want at most 64 KiB", name, read)
		}
	}
}
