package fileio

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
)

// Consumed frees the whole pages of what an arriving input's reader has
// read for the last time, and keeps the bytes of pages only partly read;
// any other input is left alone.
func TestConsumedFreesWholePages(t *testing.T) {
	data := bytes.Repeat([]byte{7}, 64<<10)
	f, err := os.CreateTemp(t.TempDir(), "arriving")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	blocks := func() int64 {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	before := blocks()

	plain := &Input{Name: "plain", File: f}
	plain.Consumed(0, int64(len(data)))
	if blocks() != before {
		t.Fatalf("an input that is not arriving lost blocks: %d -> %d", before, blocks())
	}

	_, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := &Input{Name: "s3://b/k", File: f, arrival: newArrival(cancel)}
	in.Consumed(100, 40000) // pages 1-8 whole: [4096, 36864)
	if freed := before - blocks(); freed != 32<<10 {
		t.Errorf("freed %d bytes of blocks, want the 8 whole pages (32768)", freed)
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	for i, b := range got {
		want := byte(7)
		if i >= 4096 && i < 36864 {
			want = 0
		}
		if b != want {
			t.Fatalf("byte %d is %d after Consumed, want %d", i, b, want)
		}
	}
}
