package blosc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// l1 is the block size c-blosc starts from (its L1): 32 KiB.
const l1 = 32 << 10

// EncodeLZ4 compresses src as c-blosc 1.x does with cname lz4, the
// given typesize and shuffle (NoShuffle or Shuffle): blocks sized as
// c-blosc sizes them at clevel 5 (what numcodecs writes by default),
// each split into one lz4 stream per byte of the element, shuffled
// first. A block that does not shrink is stored as it is; a frame that
// would be larger than its data is stored as a copy (the memcpyed
// flag), as c-blosc does. numcodecs, zarr-python and c-blosc read the
// result.
func EncodeLZ4(src []byte, typesize, shuffleMode int) ([]byte, error) {
	flags, bs, split, err := frameOf(src, typesize, shuffleMode)
	if err != nil {
		return nil, err
	}
	nbytes := len(src)
	if nbytes == 0 {
		out := make([]byte, HeaderSize)
		putHeader(out, flags, typesize, 0, bs, HeaderSize)
		return out, nil
	}
	nblocks := (nbytes + bs - 1) / bs
	limit := nbytes + HeaderSize // a frame no larger than a copy
	// Each block's streams, compressed on several goroutines for a large
	// frame (blocks are independent), then laid out in order.
	blocks := make([][]byte, nblocks)
	workers := 1
	if nbytes >= parallelBytes {
		workers = min(runtime.GOMAXPROCS(0), nblocks)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var c lz4.Compressor
			tmp := make([]byte, min(bs, nbytes))
			stream := make([]byte, lz4.CompressBlockBound(bs))
			for b := w; b < nblocks; b += workers {
				block := src[b*bs : min((b+1)*bs, nbytes)]
				leftover := b == nblocks-1 && nbytes%bs != 0
				if blocks[b], errs[w] = encodeBlock(&c, nil, block, tmp, stream, flags, typesize, split && !leftover); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	size := HeaderSize + 4*nblocks
	for _, b := range blocks {
		size += len(b)
	}
	var out []byte
	if size > limit {
		// Larger than the data: stored as a copy, as c-blosc does.
		out = make([]byte, limit)
		copy(out[HeaderSize:], src)
		flags |= flagMemcpyed
	} else {
		out = make([]byte, HeaderSize+4*nblocks, size)
		for b, blk := range blocks {
			binary.LittleEndian.PutUint32(out[HeaderSize+4*b:], uint32(len(out)))
			out = append(out, blk...)
		}
	}
	putHeader(out, flags, typesize, nbytes, bs, len(out))
	return out, nil
}

// frameOf checks a frame to be encoded and gives its flags, block size,
// and whether its blocks are split by byte of the element.
func frameOf(src []byte, typesize, shuffleMode int) (flags byte, bs int, split bool, err error) {
	if typesize < 1 || typesize > 255 {
		return 0, 0, false, fmt.Errorf("blosc typesize %d is out of 1…255", typesize)
	}
	if len(src) > 1<<31-1-HeaderSize {
		return 0, 0, false, fmt.Errorf("blosc cannot hold a chunk of %d bytes (2 GiB at most)", len(src))
	}
	if shuffleMode != NoShuffle && shuffleMode != Shuffle {
		return 0, 0, false, errors.New("blosc encoder writes byte shuffle or none")
	}
	flags = byte(codeLZ4 << 5)
	if shuffleMode == Shuffle {
		flags |= flagShuffle
	}
	bs = blockSize(len(src), typesize)
	split = typesize <= maxSplits && bs/typesize >= minBufferSize
	if !split {
		flags |= flagDontSplit
	}
	return flags, bs, split, nil
}

// An Encoder makes the frames EncodeLZ4 makes, on one goroutine, keeping
// its scratch buffers and lz4 state from one frame to the next: for a
// writer that encodes many chunks on each of several goroutines, one
// Encoder each, with no buffer made per block. The zero value is ready.
type Encoder struct {
	c                  lz4.Compressor
	tmp, stream, block []byte
	starts             []uint32
}

// FrameBound is the room an Encoder's frame of n bytes may need: up to
// a copy's size, and one block's streams past it before it knows.
func FrameBound(n, typesize int) int {
	bs := blockSize(n, typesize)
	return n + HeaderSize + 4*((n+bs-1)/bs) + bs + 4*maxSplits
}

// EncodeLZ4 is EncodeLZ4's frame, its blocks compressed one after the
// other straight into the frame: into dst's room when it has
// FrameBound's, else into a new slice.
func (e *Encoder) EncodeLZ4(dst, src []byte, typesize, shuffleMode int) ([]byte, error) {
	flags, bs, split, err := frameOf(src, typesize, shuffleMode)
	if err != nil {
		return nil, err
	}
	nbytes := len(src)
	nblocks := (nbytes + bs - 1) / bs
	limit := nbytes + HeaderSize // a frame no larger than a copy
	if cap(e.tmp) < bs {
		e.tmp = make([]byte, bs)
	}
	if n := lz4.CompressBlockBound(bs); cap(e.stream) < n {
		e.stream = make([]byte, n)
	}
	// Room for a frame up to its limit and one block's streams past it:
	// a frame that passes the limit is stored as a copy.
	out := dst[:0]
	if bound := FrameBound(nbytes, typesize); cap(out) < bound {
		out = make([]byte, 0, bound)
	}
	out = out[:HeaderSize+4*nblocks]
	for b := 0; b < nblocks && len(out) <= limit; b++ {
		binary.LittleEndian.PutUint32(out[HeaderSize+4*b:], uint32(len(out)))
		block := src[b*bs : min((b+1)*bs, nbytes)]
		leftover := b == nblocks-1 && nbytes%bs != 0
		if out, err = encodeBlock(&e.c, out, block, e.tmp[:bs], e.stream, flags, typesize, split && !leftover); err != nil {
			return nil, err
		}
	}
	if len(out) > limit {
		out = out[:limit]
		copy(out[HeaderSize:], src)
		flags |= flagMemcpyed
	}
	putHeader(out, flags, typesize, nbytes, bs, len(out))
	return out, nil
}

// EncodeLZ4InPlace is EncodeLZ4's frame of buf, written over buf itself:
// each block is shuffled into the Encoder's scratch, compressed, and its
// streams laid down behind it, where the blocks already read were, so
// that encoding a chunk touches no memory of its size besides the chunk.
// The frame so far stays behind the blocks still to read while the data
// compresses; where it does not (a frame that would be larger than the
// data reaches the next block's start), the frame goes on in room, from
// spare (called at most once, with FrameBound's size), and the blocks
// already overwritten are decoded back into buf first should the frame
// have to be stored as a copy. The frame's bytes are those of EncodeLZ4,
// either way; buf's contents are undefined once it returns.
func (e *Encoder) EncodeLZ4InPlace(buf []byte, typesize, shuffleMode int, spare func(n int) []byte) ([]byte, error) {
	flags, bs, split, err := frameOf(buf, typesize, shuffleMode)
	if err != nil {
		return nil, err
	}
	nbytes := len(buf)
	nblocks := (nbytes + bs - 1) / bs
	head := HeaderSize + 4*nblocks
	if nbytes == 0 || head > nbytes {
		return e.EncodeLZ4(spare(FrameBound(nbytes, typesize)), buf, typesize, shuffleMode)
	}
	if cap(e.tmp) < bs {
		e.tmp = make([]byte, bs)
	}
	if n := lz4.CompressBlockBound(bs); cap(e.stream) < n {
		e.stream = make([]byte, n)
	}
	if n := bs + 4*maxSplits; cap(e.block) < n {
		e.block = make([]byte, 0, n)
	}
	// The block table is kept aside until the first block is read: it
	// lies over the first block's bytes.
	starts := e.starts[:0]
	at := head
	for b := range nblocks {
		block := buf[b*bs : min((b+1)*bs, nbytes)]
		leftover := b == nblocks-1 && nbytes%bs != 0
		enc, err := encodeBlock(&e.c, e.block[:0], block, e.tmp[:bs], e.stream, flags, typesize, split && !leftover)
		if err != nil {
			return nil, err
		}
		// encodeBlock has read the block whole (shuffled into tmp, or
		// compressed) before enc is laid down: up to the block's end is
		// free.
		if at+len(enc) > b*bs+len(block) {
			e.starts = starts
			return e.spill(buf, spare, starts, at, b, flags, typesize)
		}
		starts = append(starts, uint32(at))
		at += copy(buf[at:], enc)
	}
	e.starts = starts
	for b, s := range starts {
		binary.LittleEndian.PutUint32(buf[HeaderSize+4*b:], s)
	}
	putHeader(buf, flags, typesize, nbytes, bs, at)
	return buf[:at], nil
}

// spill goes on with EncodeLZ4InPlace's frame in room from spare, from
// block b on: buf[head:at] holds the streams of the blocks before b,
// starts their offsets, and buf from block b on is the data still.
func (e *Encoder) spill(buf []byte, spare func(n int) []byte, starts []uint32, at, b int, flags byte, typesize int) ([]byte, error) {
	nbytes := len(buf)
	bs := blockSize(nbytes, typesize)
	nblocks := (nbytes + bs - 1) / bs
	head := HeaderSize + 4*nblocks
	bound := FrameBound(nbytes, typesize)
	out := spare(bound)[:0]
	if cap(out) < bound {
		out = make([]byte, 0, bound)
	}
	out = out[:at]
	copy(out[head:], buf[head:at])
	for i, s := range starts {
		binary.LittleEndian.PutUint32(out[HeaderSize+4*i:], s)
	}
	split := flags&flagDontSplit == 0
	limit := nbytes + HeaderSize
	for ; b < nblocks && len(out) <= limit; b++ {
		binary.LittleEndian.PutUint32(out[HeaderSize+4*b:], uint32(len(out)))
		block := buf[b*bs : min((b+1)*bs, nbytes)]
		leftover := b == nblocks-1 && nbytes%bs != 0
		var err error
		if out, err = encodeBlock(&e.c, out, block, e.tmp[:bs], e.stream, flags, typesize, split && !leftover); err != nil {
			return nil, err
		}
	}
	if len(out) <= limit {
		putHeader(out, flags, typesize, nbytes, bs, len(out))
		return out, nil
	}
	// Stored as a copy: the blocks whose bytes the frame took are
	// decoded back from its streams first.
	h := Header{Flags: flags, TypeSize: typesize, NBytes: nbytes, BlockSize: bs}
	for i, s := range starts {
		block := buf[i*bs : min((i+1)*bs, nbytes)]
		leftover := i == nblocks-1 && nbytes%bs != 0
		if err := decodeShuffled(h, lz4Block, out, HeaderSize, int(s), block, e.tmp[:len(block)], nil, leftover); err != nil {
			return nil, fmt.Errorf("internal error: a block written back: %w", err)
		}
	}
	out = out[:limit]
	copy(out[HeaderSize:], buf)
	putHeader(out, flags|flagMemcpyed, typesize, nbytes, bs, len(out))
	return out, nil
}

// encodeBlock shuffles one block (when flags say so) and compresses it
// into one lz4 stream per byte of the element (split) or one, each after
// its 4-byte size, appended to out; a stream that does not shrink is
// stored as it is.
func encodeBlock(c *lz4.Compressor, out, block, tmp, stream []byte, flags byte, typesize int, split bool) ([]byte, error) {
	in := block
	if flags&flagShuffle != 0 && typesize > 1 {
		shuffle(tmp[:len(block)], block, typesize)
		in = tmp[:len(block)]
	}
	nsplits := 1
	if split {
		nsplits = typesize
	}
	neblock := len(in) / nsplits
	for j := range nsplits {
		part := in[j*neblock : (j+1)*neblock]
		n, err := c.CompressBlock(part, stream)
		if err != nil {
			return nil, err
		}
		data := stream[:n]
		if n == 0 || n >= neblock {
			data = part
		}
		out = binary.LittleEndian.AppendUint32(out, uint32(len(data)))
		out = append(out, data...)
	}
	return out, nil
}

func putHeader(out []byte, flags byte, typesize, nbytes, blocksize, cbytes int) {
	out[0], out[1], out[2], out[3] = formatVersion, 1, flags, byte(typesize)
	binary.LittleEndian.PutUint32(out[4:], uint32(nbytes))
	binary.LittleEndian.PutUint32(out[8:], uint32(blocksize))
	binary.LittleEndian.PutUint32(out[12:], uint32(cbytes))
}

// blockSize is c-blosc's automatic block size for lz4 at clevel 5
// (compute_blocksize): 32 KiB × 4, then, for a block split by byte,
// × typesize within 64 KiB…1 MiB; never more than the data, and a
// multiple of the typesize.
func blockSize(nbytes, typesize int) int {
	if nbytes < typesize {
		return 1
	}
	bs := nbytes
	if nbytes >= l1 {
		bs = l1 * 4
	}
	if typesize <= maxSplits && bs/typesize >= minBufferSize {
		bs = min(bs, 1<<18) * typesize
		bs = min(max(bs, 1<<16), 1<<20)
	}
	bs = min(bs, nbytes)
	if bs > typesize {
		bs = bs / typesize * typesize
	}
	return bs
}
