// Package blosc reads and writes Blosc 1.x frames (c-blosc's format
// version 2), as numcodecs' Blosc codec stores Zarr chunks. There is no
// pure-Go Blosc to call, so the decoder follows the format's description
// (c-blosc's README_HEADER.rst and blosc.c): a 16-byte header, a table of
// block starts, each block cut into one stream per byte of the element
// (or one), compressed with blosclz, lz4 (lz4hc writes the same format),
// zlib or zstd, and un-shuffled by byte or by bit. Every length read from
// a frame is checked against what the frame holds before it is used, so
// a hostile frame is an error, never a panic or an allocation sized by
// its header alone.
package blosc

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/depthspace/depthspace/internal/ops"
	"github.com/pierrec/lz4/v4"
)

// HeaderSize is the size of a frame's header.
const HeaderSize = 16

const (
	formatVersion = 2 // c-blosc 1.x's BLOSC_VERSION_FORMAT

	flagShuffle    = 0x01
	flagMemcpyed   = 0x02
	flagBitShuffle = 0x04
	flagReserved   = 0x08
	flagDontSplit  = 0x10

	// maxSplits and minBufferSize decide, as c-blosc does, whether a
	// block is cut into one stream per byte of the element.
	maxSplits     = 16
	minBufferSize = 128

	// maxBlockSize is c-blosc's BLOSC_MAX_BLOCKSIZE.
	maxBlockSize = (1<<31 - 1 - 255*4) / 3
)

// Compressor codes, the top three bits of the flags.
const (
	codeBloscLZ = 0
	codeLZ4     = 1 // lz4 and lz4hc
	codeSnappy  = 2
	codeZlib    = 3
	codeZstd    = 4
)

// Shuffle filters, as numcodecs and Zarr v3 name them by number.
const (
	NoShuffle  = 0
	Shuffle    = 1
	BitShuffle = 2
)

// Header is a frame's header.
type Header struct {
	Version   byte
	VersionLZ byte
	Flags     byte
	TypeSize  int
	NBytes    int // uncompressed size
	BlockSize int
	CBytes    int // the frame's size, header included
}

// Codec names the frame's compressor: "blosclz", "lz4" (lz4hc frames
// read as lz4), "snappy", "zlib" or "zstd".
func (h Header) Codec() string {
	switch h.Flags >> 5 {
	case codeBloscLZ:
		return "blosclz"
	case codeLZ4:
		return "lz4"
	case codeSnappy:
		return "snappy"
	case codeZlib:
		return "zlib"
	case codeZstd:
		return "zstd"
	}
	return fmt.Sprintf("compressor %d", h.Flags>>5)
}

// Shuffle says which shuffle the frame's blocks went through.
func (h Header) Shuffle() int {
	switch {
	case h.Flags&flagMemcpyed != 0:
		return NoShuffle
	case h.Flags&flagShuffle != 0 && h.TypeSize > 1:
		return Shuffle
	case h.Flags&flagBitShuffle != 0:
		return BitShuffle
	}
	return NoShuffle
}

// ParseHeader reads and checks a frame's header against the frame's
// length.
func ParseHeader(src []byte) (Header, error) {
	return parseHeader(src, len(src))
}

// parseHeader reads the header at the start of src, a frame of size
// bytes (src may hold only its first bytes).
func parseHeader(src []byte, size int) (Header, error) {
	if len(src) < HeaderSize || size < HeaderSize {
		return Header{}, fmt.Errorf("blosc frame of %d bytes is shorter than its 16-byte header", size)
	}
	h := Header{
		Version:   src[0],
		VersionLZ: src[1],
		Flags:     src[2],
		TypeSize:  int(src[3]),
		NBytes:    int(binary.LittleEndian.Uint32(src[4:])),
		BlockSize: int(binary.LittleEndian.Uint32(src[8:])),
		CBytes:    int(binary.LittleEndian.Uint32(src[12:])),
	}
	switch {
	case h.Version != formatVersion:
		return h, fmt.Errorf("blosc format version %d (want %d, c-blosc 1.x)", h.Version, formatVersion)
	case h.Flags&flagReserved != 0:
		return h, fmt.Errorf("blosc flags %#x set a reserved bit", h.Flags)
	case h.CBytes != size:
		return h, fmt.Errorf("blosc header says the frame is %d bytes but it holds %d", h.CBytes, size)
	case h.NBytes > 1<<31-1-HeaderSize:
		return h, fmt.Errorf("blosc header's uncompressed size %d is over Blosc's limit", h.NBytes)
	case h.NBytes == 0:
		return h, nil
	case h.TypeSize == 0:
		return h, errors.New("blosc header's typesize is 0")
	case h.BlockSize <= 0 || h.BlockSize > maxBlockSize:
		return h, fmt.Errorf("blosc header's block size %d is out of range", h.BlockSize)
	}
	if h.Flags&flagMemcpyed != 0 {
		if h.NBytes+HeaderSize != h.CBytes {
			return h, fmt.Errorf("blosc frame stored uncompressed holds %d bytes, not %d", h.CBytes-HeaderSize, h.NBytes)
		}
		return h, nil
	}
	if nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize; nblocks > (h.CBytes-HeaderSize)/4 {
		return h, fmt.Errorf("blosc header claims %d blocks but the frame of %d bytes cannot hold their table", nblocks, h.CBytes)
	}
	return h, nil
}

// Decode decompresses a whole frame of at most limit bytes uncompressed
// (a frame that claims more is refused before anything is allocated).
func Decode(src []byte, limit int) ([]byte, error) {
	h, err := ParseHeader(src)
	if err != nil {
		return nil, err
	}
	if h.NBytes > limit {
		return nil, fmt.Errorf("blosc frame claims %d bytes uncompressed, over the %d expected", h.NBytes, limit)
	}
	dst := make([]byte, h.NBytes)
	return dst, decode(h, src, dst)
}

// DecodeInto decompresses a frame into dst, which must be exactly the
// frame's uncompressed size (a Zarr chunk's size is known before its
// frame is read, so a frame that claims another is refused before any
// work).
func DecodeInto(dst, src []byte) error {
	h, err := ParseHeader(src)
	if err != nil {
		return err
	}
	if h.NBytes != len(dst) {
		return fmt.Errorf("blosc frame holds %d bytes, want %d", h.NBytes, len(dst))
	}
	return decode(h, src, dst)
}

func decode(h Header, src, dst []byte) error {
	if h.NBytes == 0 {
		return nil
	}
	if h.Flags&flagMemcpyed != 0 {
		copy(dst, src[HeaderSize:])
		return nil
	}
	dec, err := decompressor(h.Flags >> 5)
	if err != nil {
		return err
	}
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	// Blocks are independent: a large frame's go to several goroutines,
	// as c-blosc's threads take them, each with its own buffers.
	workers := 1
	if h.NBytes >= parallelBytes {
		workers = min(runtime.GOMAXPROCS(0), nblocks)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = decodeBlocks(h, dec, src, dst, w, workers)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err // the first block's that failed: one error, one line
		}
	}
	return nil
}

// parallelBytes is the frame size from which blocks are decoded and
// encoded on several goroutines (a goroutine costs more than a smaller
// frame's work).
const parallelBytes = 1 << 20

// decodeBlocks decodes blocks w, w+workers, w+2·workers, …
func decodeBlocks(h Header, dec func(dst, src []byte) error, src, dst []byte, w, workers int) error {
	nblocks := (h.NBytes + h.BlockSize - 1) / h.BlockSize
	shuffle := h.Shuffle()
	var tmp, tmp2 []byte
	if shuffle != NoShuffle {
		tmp = make([]byte, min(h.BlockSize, h.NBytes))
		if shuffle == BitShuffle {
			tmp2 = make([]byte, len(tmp))
		}
	}
	for b := w; b < nblocks; b += workers {
		start := int(binary.LittleEndian.Uint32(src[HeaderSize+4*b:]))
		bsize := min(h.BlockSize, h.NBytes-b*h.BlockSize)
		leftover := b == nblocks-1 && h.NBytes%h.BlockSize != 0
		out := dst[b*h.BlockSize : b*h.BlockSize+bsize]
		if err := decodeShuffled(h, dec, src, HeaderSize, start, out, tmp, tmp2, leftover); err != nil {
			return fmt.Errorf("blosc block %d: %w", b, err)
		}
	}
	return nil
}

// decodeShuffled decodes the block whose streams start at src[start:]
// into out, its size, and undoes its shuffle (through tmp and tmp2, as
// large, or nil when the frame has none).
func decodeShuffled(h Header, dec func(dst, src []byte) error, src []byte, floor, start int, out, tmp, tmp2 []byte, leftover bool) error {
	shuffle := h.Shuffle()
	into := out
	if shuffle != NoShuffle {
		into = tmp[:len(out)]
	}
	if err := decodeBlock(h, dec, src, floor, start, into, leftover); err != nil {
		return err
	}
	switch {
	case shuffle == Shuffle:
		unshuffle(out, into, h.TypeSize)
	case shuffle == BitShuffle && len(out) >= h.TypeSize:
		bitUnshuffle(out, into, tmp2[:len(out)], h.TypeSize)
	case shuffle == BitShuffle:
		copy(out, into)
	}
	return nil
}

// decodeBlock decompresses one block's streams, which start at src[off:],
// into dst (the block's size).
func decodeBlock(h Header, dec func(dst, src []byte) error, src []byte, floor, off int, dst []byte, leftover bool) error {
	nsplits := 1
	if h.Flags&flagDontSplit == 0 && h.TypeSize <= maxSplits && len(dst)/h.TypeSize >= minBufferSize && !leftover {
		nsplits = h.TypeSize
	}
	neblock := len(dst) / nsplits
	for j := range nsplits {
		if off < floor || off > len(src)-4 {
			return fmt.Errorf("stream %d starts at %d, outside the frame of %d bytes", j, off, len(src))
		}
		cbytes := int(int32(binary.LittleEndian.Uint32(src[off:])))
		off += 4
		if cbytes < 0 || cbytes > len(src)-off {
			return fmt.Errorf("stream %d claims %d bytes but the frame has %d left", j, cbytes, len(src)-off)
		}
		part := dst[j*neblock : (j+1)*neblock]
		if cbytes == neblock {
			copy(part, src[off:off+cbytes])
		} else if err := dec(part, src[off:off+cbytes]); err != nil {
			return fmt.Errorf("stream %d: %w", j, err)
		}
		off += cbytes
	}
	return nil
}

// decompressor returns the function that fills dst exactly from one
// compressed stream of a frame.
func decompressor(code byte) (func(dst, src []byte) error, error) {
	switch code {
	case codeBloscLZ:
		return bloscLZ, nil
	case codeLZ4:
		return lz4Block, nil
	case codeZlib:
		return func(dst, src []byte) error {
			r, err := zlib.NewReader(bytes.NewReader(src))
			if err != nil {
				return err
			}
			return ReadExactly(r, dst)
		}, nil
	case codeZstd:
		return ZstdInto, nil
	case codeSnappy:
		return nil, errors.New("blosc frame compressed with snappy, which numcodecs no longer writes and depthspace does not read")
	}
	return nil, fmt.Errorf("blosc frame names compressor %d, which c-blosc 1.x does not have", code)
}

// lz4Block fills dst from one lz4 block.
func lz4Block(dst, src []byte) error {
	n, err := lz4.UncompressBlock(src, dst)
	if err != nil {
		return fmt.Errorf("lz4: %w", err)
	}
	if n != len(dst) {
		return fmt.Errorf("lz4 block holds %d bytes, want %d", n, len(dst))
	}
	return nil
}

// ReadExactly fills dst from r and checks that r has nothing more: a
// stream that holds fewer or more bytes than its chunk is an error, and
// nothing is read beyond one byte past dst.
func ReadExactly(r io.Reader, dst []byte) error {
	if _, err := io.ReadFull(r, dst); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return fmt.Errorf("holds fewer than the %d bytes wanted", len(dst))
		}
		return err
	}
	var one [1]byte
	switch n, err := r.Read(one[:]); {
	case n > 0:
		return fmt.Errorf("holds more than the %d bytes wanted", len(dst))
	case err != nil && err != io.EOF:
		return err
	}
	return nil
}

// unshuffle undoes the byte shuffle of one block: src holds byte j of
// every element, then byte j+1, ...; bytes after the last whole element
// were not shuffled. Elements of 2, 4 and 8 bytes are interleaved by
// internal/ops' vector kernels on amd64 (SSE2, or AVX2 where the CPU has
// it); other sizes and other architectures take unshuffleGo. The figures are in
// docs/performance.md, Zarr stores (`go test -bench Shuffle
// ./internal/format/zarr/blosc`).
func unshuffle(dst, src []byte, typesize int) {
	byteShuffle(dst, src, typesize, ops.InterleaveBytes, unshuffleGo)
}

// byteShuffle runs the kernel of internal/ops, which leaves the part
// element at the end alone, else the portable path.
func byteShuffle(dst, src []byte, typesize int, kernel func(dst, src []byte, f int) bool, portable func(dst, src []byte, typesize int)) {
	if !kernel(dst, src, typesize) {
		portable(dst, src, typesize)
		return
	}
	n := len(src) / typesize
	copy(dst[n*typesize:], src[n*typesize:])
}

// unshuffleGo is the portable unshuffle: 2, 4 and 8 bytes put together a
// word at a time, 4 bytes 8 elements at a time (unshuffle4); other sizes
// byte by byte. float32, 2-core VM at load 5, 27 Nov 2026: 3,087 MB/s
// against 899 byte by byte; shuffleGo 3,324 MB/s against 2,266 an element
// at a time.
func unshuffleGo(dst, src []byte, typesize int) {
	n := len(src) / typesize
	switch typesize {
	case 2:
		r0, r1 := src[:n], src[n:2*n]
		d := dst[:2*n]
		for i := range r0 {
			binary.LittleEndian.PutUint16(d[2*i:], uint16(r0[i])|uint16(r1[i])<<8)
		}
	case 4:
		r0, r1, r2, r3 := src[:n], src[n:2*n], src[2*n:3*n], src[3*n:4*n]
		d := dst[:4*n]
		i := unshuffle4(d, r0, r1, r2, r3)
		for ; i < n; i++ {
			binary.LittleEndian.PutUint32(d[4*i:], uint32(r0[i])|uint32(r1[i])<<8|uint32(r2[i])<<16|uint32(r3[i])<<24)
		}
	case 8:
		r := [8][]byte{}
		for j := range r {
			r[j] = src[j*n : (j+1)*n]
		}
		d := dst[:8*n]
		for i := range r[0] {
			binary.LittleEndian.PutUint64(d[8*i:], uint64(r[0][i])|uint64(r[1][i])<<8|uint64(r[2][i])<<16|uint64(r[3][i])<<24|
				uint64(r[4][i])<<32|uint64(r[5][i])<<40|uint64(r[6][i])<<48|uint64(r[7][i])<<56)
		}
	default:
		for j := range typesize {
			row := src[j*n : (j+1)*n]
			for i, b := range row {
				dst[i*typesize+j] = b
			}
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// Four-byte elements (float32, the common case) are shuffled 8 at a
// time in 64-bit words: 4 loads and 4 stores of 8 bytes for 32 bytes,
// where an element at a time stores them one by one (BenchmarkShuffle
// gives the figures, in unshuffleGo's comment). Each word of two elements has its bytes zipped
// (zip2), then the pairs of bytes of two words are joined into runs of
// four, and two of those into a row's 8 bytes.

// zip2 turns the bytes [a0 a1 a2 a3 b0 b1 b2 b3] of x (little-endian)
// into [a0 b0 a1 b1 a2 b2 a3 b3]; its inverse is its steps reversed
// (unzip2), each a swap of two fields.
func zip2(x uint64) uint64 {
	x = x&0xFFFF00000000FFFF | x&0x0000FFFF00000000>>16 | x&0x00000000FFFF0000<<16
	return x&0xFF0000FFFF0000FF | x&0x00FF000000FF0000>>8 | x&0x0000FF000000FF00<<8
}

func unzip2(x uint64) uint64 {
	x = x&0xFF0000FFFF0000FF | x&0x00FF000000FF0000>>8 | x&0x0000FF000000FF00<<8
	return x&0xFFFF00000000FFFF | x&0x0000FFFF00000000>>16 | x&0x00000000FFFF0000<<16
}

// shuffle4 shuffles the first multiple of 8 elements of s into the rows
// r0…r3 and says how many it did.
func shuffle4(r0, r1, r2, r3, s []byte) int {
	n := len(r0) &^ 7
	le := binary.LittleEndian
	for i := 0; i < n; i += 8 {
		w := s[4*i : 4*i+32 : 4*i+32]
		a, b, c, d := zip2(le.Uint64(w)), zip2(le.Uint64(w[8:])), zip2(le.Uint64(w[16:])), zip2(le.Uint64(w[24:]))
		// Units of 16 bits: a holds byte j of elements 0 and 1 as
		// unit j; b of 2 and 3. lo: bytes 0 and 1 of elements 0…3.
		abLo := a&0xFFFF | b&0xFFFF<<16 | a&0xFFFF0000<<16 | b&0xFFFF0000<<32
		abHi := a>>32&0xFFFF | b>>32&0xFFFF<<16 | a>>48<<32 | b>>48<<48
		cdLo := c&0xFFFF | d&0xFFFF<<16 | c&0xFFFF0000<<16 | d&0xFFFF0000<<32
		cdHi := c>>32&0xFFFF | d>>32&0xFFFF<<16 | c>>48<<32 | d>>48<<48
		le.PutUint64(r0[i:i+8], abLo&0xFFFFFFFF|cdLo<<32)
		le.PutUint64(r1[i:i+8], abLo>>32|cdLo&^0xFFFFFFFF)
		le.PutUint64(r2[i:i+8], abHi&0xFFFFFFFF|cdHi<<32)
		le.PutUint64(r3[i:i+8], abHi>>32|cdHi&^0xFFFFFFFF)
	}
	return n
}

// unshuffle4 is shuffle4's inverse: the rows r0…r3 into d.
func unshuffle4(d, r0, r1, r2, r3 []byte) int {
	n := len(r0) &^ 7
	le := binary.LittleEndian
	for i := 0; i < n; i += 8 {
		x0, x1, x2, x3 := le.Uint64(r0[i:i+8]), le.Uint64(r1[i:i+8]), le.Uint64(r2[i:i+8]), le.Uint64(r3[i:i+8])
		abLo, cdLo := x0&0xFFFFFFFF|x1<<32, x0>>32|x1&^0xFFFFFFFF
		abHi, cdHi := x2&0xFFFFFFFF|x3<<32, x2>>32|x3&^0xFFFFFFFF
		a := abLo&0xFFFF | abLo>>32&0xFFFF<<16 | abHi&0xFFFF<<32 | abHi>>32&0xFFFF<<48
		b := abLo>>16&0xFFFF | abLo>>48<<16 | abHi>>16&0xFFFF<<32 | abHi>>48<<48
		c := cdLo&0xFFFF | cdLo>>32&0xFFFF<<16 | cdHi&0xFFFF<<32 | cdHi>>32&0xFFFF<<48
		e := cdLo>>16&0xFFFF | cdLo>>48<<16 | cdHi>>16&0xFFFF<<32 | cdHi>>48<<48
		w := d[4*i : 4*i+32 : 4*i+32]
		le.PutUint64(w, unzip2(a))
		le.PutUint64(w[8:], unzip2(b))
		le.PutUint64(w[16:], unzip2(c))
		le.PutUint64(w[24:], unzip2(e))
	}
	return n
}

// shuffle is unshuffle's inverse.
func shuffle(dst, src []byte, typesize int) {
	byteShuffle(dst, src, typesize, ops.DeinterleaveBytes, shuffleGo)
}

// shuffleGo is unshuffleGo's inverse.
func shuffleGo(dst, src []byte, typesize int) {
	n := len(src) / typesize
	switch typesize {
	case 2:
		r0, r1 := dst[:n], dst[n:2*n]
		s := src[:2*n]
		for i := range r0 {
			v := binary.LittleEndian.Uint16(s[2*i:])
			r0[i], r1[i] = byte(v), byte(v>>8)
		}
	case 4:
		r0, r1, r2, r3 := dst[:n], dst[n:2*n], dst[2*n:3*n], dst[3*n:4*n]
		s := src[:4*n]
		i := shuffle4(r0, r1, r2, r3, s)
		for ; i < n; i++ {
			v := binary.LittleEndian.Uint32(s[4*i:])
			r0[i], r1[i], r2[i], r3[i] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		}
	default:
		for j := range typesize {
			row := dst[j*n : (j+1)*n]
			for i := range row {
				row[i] = src[i*typesize+j]
			}
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
}

// bitUnshuffle undoes bitshuffle's transpose of one block, as c-blosc's
// bitshuffle-generic.c does it: the block holds 8·typesize rows of bits,
// row 8·j+k holding bit k of byte j of every element. Only a whole
// multiple of 8 elements is transposed; the rest, and a block whose
// element count is not a multiple of 8, are copied as they are.
func bitUnshuffle(dst, src, tmp []byte, typesize int) {
	size := len(src) / typesize
	if size%8 != 0 {
		copy(dst, src)
		return
	}
	// Gather, for each group of 8 elements and each byte of the
	// element, the 8 bytes (one per bit row) that hold its bits.
	nrow := size / 8
	for j := range typesize {
		for i := range nrow {
			for k := range 8 {
				tmp[i*8*typesize+j*8+k] = src[(j*8+k)*nrow+i]
			}
		}
	}
	// Transpose each 8x8 bit matrix back into 8 bytes of 8 elements.
	nbyte := typesize * size
	for j := 0; j < 8*typesize; j += 8 {
		for i := 0; i+8*typesize-1 < nbyte; i += 8 * typesize {
			x := transposeBits(binary.LittleEndian.Uint64(tmp[i+j:]))
			for k := range 8 {
				dst[i+j/8+k*typesize] = byte(x)
				x >>= 8
			}
		}
	}
	copy(dst[size*typesize:], src[size*typesize:])
}

// transposeBits transposes the 8x8 bit matrix in x (byte r is row r,
// bit c column c).
func transposeBits(x uint64) uint64 {
	t := (x ^ (x >> 7)) & 0x00AA00AA00AA00AA
	x = x ^ t ^ (t << 7)
	t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCC
	x = x ^ t ^ (t << 14)
	t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0
	return x ^ t ^ (t << 28)
}
