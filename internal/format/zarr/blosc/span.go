package blosc

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// A frame's blocks are independent and its header and block table come
// first, so part of its data can be decoded from part of its bytes: the
// table says where the blocks holding the part are stored. A reader of
// a chunk a few blocks at a time (the Zarr runs chunk to chunk) reads
// the head once, then each part's blocks, and holds no decoded chunk.

// HeadBytes is how many first bytes of a frame hold its header and block
// table, from its first HeaderSize bytes.
func HeadBytes(first []byte) (int, error) {
	if len(first) < HeaderSize {
		return 0, fmt.Errorf("blosc frame of %d bytes is shorter than its 16-byte header", len(first))
	}
	nbytes := int(binary.LittleEndian.Uint32(first[4:]))
	bs := int(binary.LittleEndian.Uint32(first[8:]))
	if first[2]&flagMemcpyed != 0 || nbytes == 0 || bs <= 0 {
		return HeaderSize, nil
	}
	return HeaderSize + 4*min((nbytes+bs-1)/bs, 1<<29), nil
}

// Index is a frame's header and where its blocks are stored.
type Index struct {
	Header
	starts, ends []uint32 // each block's stored bytes (a frame's size is a uint32)
}

// ParseIndex reads a frame's head (its first HeadBytes bytes) for a frame
// of size bytes. Blocks need not be stored in order (c-blosc's threads
// store each as it is done): a block ends where the next stored after
// it starts, the last at the frame's end.
func ParseIndex(head []byte, size int) (*Index, error) {
	h, err := parseHeader(head, size)
	if err != nil {
		return nil, err
	}
	ix := &Index{Header: h}
	if h.NBytes == 0 || h.Flags&flagMemcpyed != 0 {
		return ix, nil
	}
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	table := HeaderSize + 4*nblocks
	if len(head) < table {
		return nil, fmt.Errorf("blosc frame's head is %d bytes, its block table needs %d", len(head), table)
	}
	ix.starts, ix.ends = make([]uint32, nblocks), make([]uint32, nblocks)
	order := make([]uint32, nblocks)
	for b := range nblocks {
		at := int(binary.LittleEndian.Uint32(head[HeaderSize+4*b:]))
		if at < table || at >= size {
			return nil, fmt.Errorf("blosc block %d starts at %d, outside the frame of %d bytes", b, at, size)
		}
		ix.starts[b], order[b] = uint32(at), uint32(b)
	}
	slices.SortFunc(order, func(x, y uint32) int { return cmp.Compare(ix.starts[x], ix.starts[y]) })
	// Blocks sharing a stored offset (equal blocks stored once) all end
	// where the next offset above theirs starts.
	next := uint32(size)
	for k := nblocks - 1; k >= 0; k-- {
		b := order[k]
		ix.ends[b] = next
		if k > 0 && ix.starts[order[k-1]] < ix.starts[b] {
			next = ix.starts[b]
		}
	}
	return ix, nil
}

// Blocks is how many blocks the index holds where they are stored.
func (ix *Index) Blocks() int { return len(ix.starts) }

// Memcpyed says the frame holds its data as they are, after the header.
func (ix *Index) Memcpyed() bool { return ix.Flags&flagMemcpyed != 0 }

// Span is where the data bytes [off, off+n) are stored: the frame's bytes
// [lo, hi), which hold the blocks the data lie in (and any stored among
// them).
func (ix *Index) Span(off, n int) (lo, hi int) {
	if ix.Flags&flagMemcpyed != 0 {
		return HeaderSize + off, HeaderSize + off + n
	}
	b0, b1 := off/ix.BlockSize, max(off/ix.BlockSize+1, (off+n+ix.BlockSize-1)/ix.BlockSize)
	l, h := ix.starts[b0], ix.ends[b0]
	for b := b0 + 1; b < b1; b++ {
		l, h = min(l, ix.starts[b]), max(h, ix.ends[b])
	}
	return int(l), int(h)
}

// ScratchBlock is the most bytes a block of the frame decodes to: the
// header's block size may exceed the frame's data (one short block).
func (ix *Index) ScratchBlock() int { return min(ix.BlockSize, ix.NBytes) }

// DecodeSpan fills dst with the data bytes [off, off+len(dst)) from
// stored, the frame's bytes Span gave for them; tmp is scratch of three
// ScratchBlock (nil: made here).
func (ix *Index) DecodeSpan(dst []byte, off int, stored, tmp []byte) error {
	n := len(dst)
	if off < 0 || n < 0 || off+n > ix.NBytes {
		return fmt.Errorf("internal error: bytes %d…%d of a blosc frame of %d", off, off+n, ix.NBytes)
	}
	if n == 0 {
		return nil
	}
	if ix.Flags&flagMemcpyed != 0 {
		if len(stored) != n {
			return fmt.Errorf("blosc frame's span holds %d bytes, want %d", len(stored), n)
		}
		copy(dst, stored)
		return nil
	}
	dec, err := decompressor(ix.Flags >> 5)
	if err != nil {
		return err
	}
	bs := ix.BlockSize
	blk := ix.ScratchBlock()
	if len(tmp) < 3*blk {
		tmp = make([]byte, 3*blk)
	}
	whole, t1, t2 := tmp[:blk], tmp[blk:2*blk], tmp[2*blk:3*blk]
	nblocks := len(ix.starts)
	lo, _ := ix.Span(off, n)
	for b := off / bs; b*bs < off+n; b++ {
		first, size := b*bs, min(bs, ix.NBytes-b*bs)
		// A block wholly in the span is decoded in place, a block the
		// span cuts into whole then copied from.
		out := whole[:size]
		inside := first >= off && first+size <= off+n
		if inside {
			out = dst[first-off : first-off+size]
		}
		leftover := b == nblocks-1 && ix.NBytes%bs != 0
		if err := decodeShuffled(ix.Header, dec, stored, 0, int(ix.starts[b])-lo, out, t1, t2, leftover); err != nil {
			return fmt.Errorf("blosc block %d: %w", b, err)
		}
		if !inside {
			a, z := max(first, off), min(first+size, off+n)
			copy(dst[a-off:z-off], out[a-first:z-first])
		}
	}
	return nil
}
