package blosc

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdDecoder is one decoder for the whole process: one made per chunk
// allocated its tables and buffers anew for each (1,024 times for a
// 1 GiB array of 1 MiB inner chunks), garbage the collector then ran
// for. DecodeAll is safe from several goroutines, each taking one of its
// block decoders.
// The cap limit is the bound: DecodeAll writes into dst's capacity,
// which ZstdInto sets to the chunk's size, and refuses a frame that says
// or turns out to hold more, so a frame's header never sizes an
// allocation.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxWindow(1<<30))
})

// ZstdInto fills dst exactly from src, one or more zstd frames (numcodecs'
// Zstd, zarr v3's zstd codec, a Blosc stream): an error when they hold
// fewer or more bytes than len(dst), found before decoding when the
// first frame's header gives its size.
func ZstdInto(dst, src []byte) error {
	var h zstd.Header
	if err := h.Decode(src); err == nil && h.HasFCS && !h.Skippable && h.FrameContentSize > uint64(len(dst)) {
		return fmt.Errorf("says it holds %d bytes, more than the %d wanted", h.FrameContentSize, len(dst))
	}
	d, err := zstdDecoder()
	if err != nil {
		return fmt.Errorf("zstd: %w", err)
	}
	out, err := d.DecodeAll(src, dst[:0:len(dst)])
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded):
		return fmt.Errorf("holds more than the %d bytes wanted", len(dst))
	case err != nil:
		return err
	case len(out) < len(dst):
		return fmt.Errorf("holds fewer than the %d bytes wanted", len(dst))
	case len(dst) > 0 && &out[0] != &dst[0]:
		return errors.New("internal error: zstd decoded outside the chunk")
	}
	return nil
}
