package blosc

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/depthspace/depthspace/internal/testpeer"
)

// sample is data that compresses as arrays do: slowly varying values of
// typesize bytes with some noise, n elements.
func sample(n, typesize int, seed int64) []byte {
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, n*typesize)
	v := uint64(0)
	for i := range n {
		v += uint64(r.Intn(3))
		for j := range typesize {
			b[i*typesize+j] = byte(v >> (8 * (j % 8)))
		}
		if r.Intn(50) == 0 {
			b[i*typesize] = byte(r.Intn(256))
		}
	}
	return b
}

// peerFrames has numcodecs (c-blosc) compress data with every cname and
// shuffle, typesizes 1…8 and 3, automatic and given block sizes, and
// returns each frame with what it holds.
type peerCase struct {
	Name     string
	Frame    []byte
	Data     []byte
	TypeSize int
}

func peerFrames(t *testing.T) []peerCase {
	py := testpeer.Python(t, "numcodecs")
	dir := t.TempDir()
	var cases []peerCase
	var jobs []map[string]any
	for _, ts := range []int{1, 2, 3, 4, 8, 16, 20} {
		for _, n := range []int{0, 5, 1000, 70001} {
			data := sample(n, ts, int64(n*ts))
			in := filepath.Join(dir, fmt.Sprintf("in%d", len(jobs)))
			if err := os.WriteFile(in, data, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, cname := range []string{"blosclz", "lz4", "lz4hc", "zlib", "zstd"} {
				for _, sh := range []int{0, 1, 2} {
					for _, bs := range []int{0, 4096} {
						out := filepath.Join(dir, fmt.Sprintf("out%d", len(jobs)))
						jobs = append(jobs, map[string]any{"in": in, "out": out, "ts": ts, "cname": cname, "shuffle": sh, "blocksize": bs})
						cases = append(cases, peerCase{Name: fmt.Sprintf("%s shuffle %d blocksize %d", cname, sh, bs), Data: data, TypeSize: ts})
					}
				}
			}
		}
	}
	spec, _ := json.Marshal(jobs)
	const script = `
import json, sys
import numpy as np
from numcodecs import blosc
blosc.use_threads = False
for j in json.load(open(sys.argv[1])):
    data = open(j["in"], "rb").read()
    c = blosc.Blosc(cname=j["cname"], clevel=5, shuffle=j["shuffle"], blocksize=j["blocksize"])
    arr = np.frombuffer(data, dtype="V%d" % j["ts"]) if data else np.zeros(0, dtype="V%d" % j["ts"])
    open(j["out"], "wb").write(c.encode(arr))
`
	specFile := filepath.Join(dir, "jobs.json")
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-c", script, specFile).CombinedOutput(); err != nil {
		t.Fatalf("numcodecs: %v\n%s", err, out)
	}
	for i, j := range jobs {
		b, err := os.ReadFile(j["out"].(string))
		if err != nil {
			t.Fatal(err)
		}
		cases[i].Frame = b
	}
	return cases
}

func TestDecodeNumcodecsFrames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range peerFrames(t) {
		h, err := ParseHeader(c.Frame)
		if err != nil {
			t.Fatalf("%s typesize %d, %d bytes: %v", c.Name, c.TypeSize, len(c.Data), err)
		}
		seen[fmt.Sprintf("%s/%d", h.Codec(), h.Shuffle())] = true
		got := make([]byte, len(c.Data))
		if err := DecodeInto(got, c.Frame); err != nil {
			t.Fatalf("%s typesize %d, %d bytes (header %+v): %v", c.Name, c.TypeSize, len(c.Data), h, err)
		}
		if !bytes.Equal(got, c.Data) {
			t.Fatalf("%s typesize %d, %d bytes (header %+v): decoded data differ", c.Name, c.TypeSize, len(c.Data), h)
		}
	}
	// Every compressor and shuffle was met compressed, not only copied.
	for _, want := range []string{"blosclz/0", "blosclz/1", "blosclz/2", "lz4/0", "lz4/1", "lz4/2", "zlib/1", "zlib/2", "zstd/0", "zstd/1", "zstd/2"} {
		if !seen[want] {
			t.Errorf("no frame of %s among numcodecs' (seen %v)", want, seen)
		}
	}
}

// TestEncodeReadByNumcodecs: numcodecs decodes what EncodeLZ4 writes,
// and so does Decode.
func TestEncodeReadByNumcodecs(t *testing.T) {
	py := testpeer.Python(t, "numcodecs")
	dir := t.TempDir()
	var names []string
	var want [][]byte
	for _, ts := range []int{1, 2, 4, 8, 3, 20} {
		for _, n := range []int{0, 1, 7, 1000, 300001} {
			for _, sh := range []int{NoShuffle, Shuffle} {
				data := sample(n, ts, int64(7*n+ts))
				if n == 300001 && ts == 1 {
					rand.New(rand.NewSource(1)).Read(data) // incompressible: a copy
				}
				frame, err := EncodeLZ4(data, ts, sh)
				if err != nil {
					t.Fatal(err)
				}
				back := make([]byte, len(data))
				if err := DecodeInto(back, frame); err != nil || !bytes.Equal(back, data) {
					t.Fatalf("typesize %d, %d elements, shuffle %d: round trip: %v", ts, n, sh, err)
				}
				if n == 0 {
					continue // numcodecs refuses every empty frame, its own too
				}
				name := filepath.Join(dir, fmt.Sprintf("f%d", len(names)))
				if err := os.WriteFile(name, frame, 0o644); err != nil {
					t.Fatal(err)
				}
				names = append(names, name)
				want = append(want, data)
			}
		}
	}
	const script = `
import sys
from numcodecs import blosc
for name in sys.argv[1:]:
    open(name + ".out", "wb").write(bytes(blosc.decompress(open(name, "rb").read())))
`
	if out, err := exec.Command(py, append([]string{"-c", script}, names...)...).CombinedOutput(); err != nil {
		t.Fatalf("numcodecs: %v\n%s", err, out)
	}
	for i, name := range names {
		got, err := os.ReadFile(name + ".out")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want[i]) {
			t.Fatalf("%s: numcodecs decoded other bytes", name)
		}
	}
}

// bitUnshuffleOracle is the bit transpose by its definition: bit k of
// byte j of element i is bit i of row 8·j+k.
func bitUnshuffleOracle(src []byte, typesize int) []byte {
	n := len(src) / typesize
	dst := make([]byte, len(src))
	if n%8 != 0 {
		copy(dst, src)
		return dst
	}
	for i := range n {
		for j := range typesize {
			for k := range 8 {
				row := j*8 + k
				bit := src[row*(n/8)+i/8] >> (i % 8) & 1
				dst[i*typesize+j] |= bit << k
			}
		}
	}
	return dst
}

func TestBitUnshuffleMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, ts := range []int{1, 2, 3, 4, 8, 13} {
		for _, n := range []int{8, 16, 64, 24, 9} {
			src := make([]byte, n*ts+ts-1)
			r.Read(src)
			src = src[:n*ts]
			dst := make([]byte, len(src))
			bitUnshuffle(dst, src, make([]byte, len(src)), ts)
			if want := bitUnshuffleOracle(src, ts); !bytes.Equal(dst, want) {
				t.Fatalf("typesize %d, %d elements: differs from the definition", ts, n)
			}
		}
	}
}

func TestShuffleRoundTrip(t *testing.T) {
	src := sample(1001, 4, 1)[:4003]
	mid, back := make([]byte, len(src)), make([]byte, len(src))
	shuffle(mid, src, 4)
	unshuffle(back, mid, 4)
	if !bytes.Equal(back, src) {
		t.Fatal("unshuffle(shuffle(x)) != x")
	}
	if mid[0] != src[0] || mid[1] != src[4] || mid[1000] != src[1] {
		t.Fatal("shuffle does not put byte j of every element together")
	}
}

// TestHostileFrames: frames whose header or tables claim more than they
// hold are refused with an error.
func TestHostileFrames(t *testing.T) {
	good, err := EncodeLZ4(sample(5000, 4, 9), 4, Shuffle)
	if err != nil {
		t.Fatal(err)
	}
	set32 := func(b []byte, off int, v uint32) []byte {
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[off:], v)
		return b
	}
	cases := map[string][]byte{
		"short":             good[:10],
		"cbytes lies":       set32(good, 12, uint32(len(good)+100)),
		"truncated":         good[:len(good)-1],
		"nbytes huge":       set32(good, 4, 1<<31-100),
		"block size 0":      set32(good, 8, 0),
		"block start past":  set32(good, 16, uint32(len(good))),
		"block start in hd": set32(good, 16, 3),
		"stream size past":  set32(good, int(binary.LittleEndian.Uint32(good[16:])), 1<<30),
		"version":           append([]byte{9}, good[1:]...),
		"memcpy size lies":  append(append([]byte{}, good[:2]...), append([]byte{good[2] | flagMemcpyed}, good[3:]...)...),
	}
	for name, frame := range cases {
		dst := make([]byte, 20000)
		if err := DecodeInto(dst, frame); err == nil {
			t.Errorf("%s: no error", name)
		}
		if _, err := Decode(frame, 20000); err == nil {
			t.Errorf("%s: Decode: no error", name)
		}
	}
}

// unshuffleBytes is the byte-by-byte unshuffle, the oracle of the word
// paths.
func unshuffleBytes(src []byte, typesize int) []byte {
	dst := make([]byte, len(src))
	n := len(src) / typesize
	for j := range typesize {
		for i := range n {
			dst[i*typesize+j] = src[j*n+i]
		}
	}
	copy(dst[n*typesize:], src[n*typesize:])
	return dst
}

func TestShuffleWordPaths(t *testing.T) {
	r := rand.New(rand.NewSource(8))
	for _, ts := range []int{1, 2, 3, 4, 5, 8, 16} {
		for _, n := range []int{0, 1, 7, 1001} {
			src := make([]byte, n)
			r.Read(src)
			got := make([]byte, n)
			unshuffle(got, src, ts)
			if !bytes.Equal(got, unshuffleBytes(src, ts)) {
				t.Fatalf("unshuffle typesize %d, %d bytes: differs from byte by byte", ts, n)
			}
			back := make([]byte, n)
			shuffle(back, got, ts)
			if !bytes.Equal(back, src) {
				t.Fatalf("shuffle typesize %d, %d bytes: not unshuffle's inverse", ts, n)
			}
		}
	}
}

// TestShuffleMatchesGo: shuffle and unshuffle (SSE2 on amd64 for 2, 4
// and 8 bytes) against shuffleGo and unshuffleGo, the portable paths, on
// random typesizes, lengths (part elements included) and offsets from a
// 16-byte boundary of both buffers.
func TestShuffleMatchesGo(t *testing.T) {
	r := rand.New(rand.NewSource(34))
	for range 600 {
		ts := []int{1, 2, 3, 4, 8, 16}[r.Intn(6)]
		n := r.Intn(70_000)
		if r.Intn(3) == 0 {
			n = r.Intn(300)
		}
		so, do := r.Intn(16), r.Intn(16)
		src := make([]byte, n+so)[so:]
		r.Read(src)
		for _, c := range []struct {
			name      string
			f, oracle func(dst, src []byte, typesize int)
		}{{"shuffle", shuffle, shuffleGo}, {"unshuffle", unshuffle, unshuffleGo}} {
			got := make([]byte, n+do+9)[do:]
			want := make([]byte, n+9)
			c.f(got, src, ts)
			c.oracle(want, src, ts)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s typesize %d, %d bytes, offsets %d and %d: differs from the portable path", c.name, ts, n, so, do)
			}
		}
	}
}

// BenchmarkShuffle: float32 blocks of 256 KiB; shuffle and unshuffle (SSE2
// on amd64) against the portable word paths, byte by byte (unshuffle) and
// element by element (shuffle).
func BenchmarkShuffle(b *testing.B) {
	src := sample(1<<16, 4, 1)
	dst := make([]byte, len(src))
	n := len(src) / 4
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"unshuffle/simd", func() { unshuffle(dst, src, 4) }},
		{"unshuffle/words", func() { unshuffleGo(dst, src, 4) }},
		{"unshuffle/bytes", func() { unshuffleBytes(src, 4) }},
		{"shuffle/simd", func() { shuffle(dst, src, 4) }},
		{"shuffle/words", func() { shuffleGo(dst, src, 4) }},
		{"shuffle/elements", func() {
			for i := range n {
				v := binary.LittleEndian.Uint32(src[4*i:])
				dst[i], dst[n+i], dst[2*n+i], dst[3*n+i] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			}
		}},
		{"unshuffle8/simd", func() { unshuffle(dst, src, 8) }},
		{"unshuffle8/words", func() { unshuffleGo(dst, src, 8) }},
		{"shuffle8/simd", func() { shuffle(dst, src, 8) }},
		{"shuffle8/bytes", func() { shuffleGo(dst, src, 8) }},
		{"unshuffle2/simd", func() { unshuffle(dst, src, 2) }},
		{"unshuffle2/words", func() { unshuffleGo(dst, src, 2) }},
		{"shuffle2/simd", func() { shuffle(dst, src, 2) }},
		{"shuffle2/elements", func() { shuffleGo(dst, src, 2) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for range b.N {
				c.f()
			}
		})
	}
}

// TestEncoderMatchesEncodeLZ4: an Encoder reused across frames of every
// kind (empty, a leftover block, incompressible, stored as a copy) makes
// EncodeLZ4's frames byte for byte.
func TestEncoderMatchesEncodeLZ4(t *testing.T) {
	r := rand.New(rand.NewSource(34))
	noise := make([]byte, 300_001)
	r.Read(noise)
	var e Encoder
	var room []byte // reused from frame to frame, as large as the last needed
	for _, ts := range []int{1, 2, 4, 8, 3} {
		for _, src := range [][]byte{nil, sample(100, ts, 2), sample(70_001, ts, 3), sample(1<<20/ts, ts, 4), noise, noise[:5]} {
			for _, mode := range []int{NoShuffle, Shuffle} {
				want, err := EncodeLZ4(src, ts, mode)
				if err != nil {
					t.Fatal(err)
				}
				got, err := e.EncodeLZ4(room, src, ts, mode)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("typesize %d, %d bytes, shuffle %d: the Encoder's frame differs from EncodeLZ4's", ts, len(src), mode)
				}
				room = got
				back, err := Decode(got, len(src))
				if err != nil || !bytes.Equal(back, src) {
					t.Fatalf("typesize %d, %d bytes: does not decode back (%v)", ts, len(src), err)
				}
			}
		}
	}
}

// TestDecodeSpanMatchesDecode: any part of a frame decoded from the bytes
// Span names is that part of the whole frame decoded, for frames with and
// without shuffle, a leftover block, and stored as a copy; ParseIndex
// reads the head HeadBytes asks for.
func TestDecodeSpanMatchesDecode(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	noise := make([]byte, 200_003)
	r.Read(noise)
	for _, c := range []struct {
		src      []byte
		typesize int
		mode     int
	}{
		{sample(300_001, 4, 1), 4, Shuffle},
		{sample(1<<18, 4, 2), 4, Shuffle},
		{sample(50_000, 8, 3), 8, NoShuffle},
		{sample(123_457, 1, 4), 1, Shuffle},
		{noise, 4, Shuffle}, // stored as a copy
	} {
		frame, err := EncodeLZ4(c.src, c.typesize, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		ix := indexOf(t, frame)
		n := len(c.src)
		for range 40 {
			off := r.Intn(n)
			ln := r.Intn(n - off + 1)
			if r.Intn(4) == 0 { // whole blocks
				off = off / ix.BlockSize * ix.BlockSize
				ln = min(n-off, ix.BlockSize*(1+r.Intn(3)))
			}
			lo, hi := ix.Span(off, ln)
			got := make([]byte, ln)
			if err := ix.DecodeSpan(got, off, frame[lo:hi], nil); err != nil {
				t.Fatalf("%d bytes, typesize %d: span %d+%d: %v", n, c.typesize, off, ln, err)
			}
			if !bytes.Equal(got, c.src[off:off+ln]) {
				t.Fatalf("%d bytes, typesize %d: span %d+%d differs from the whole frame's", n, c.typesize, off, ln)
			}
		}
	}
}

// TestParseIndexRefuses: a head whose header lies about the frame's size,
// or whose table puts a block outside the frame, is an error.
func TestParseIndexRefuses(t *testing.T) {
	frame, err := EncodeLZ4(sample(300_000, 4, 5), 4, Shuffle)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := HeadBytes(frame)
	if _, err := ParseIndex(frame[:hb], len(frame)+1); err == nil {
		t.Fatal("a frame one byte longer than its header says was read")
	}
	past := bytes.Clone(frame[:hb])
	binary.LittleEndian.PutUint32(past[HeaderSize+4:], uint32(len(frame)))
	if _, err := ParseIndex(past, len(frame)); err == nil {
		t.Fatal("a block starting at the frame's end was read")
	}
}

// TestDecodeSpanBlocksOutOfOrder: c-blosc's threads store blocks in the
// order they finish; a span is read from the blocks wherever they are.
func TestDecodeSpanBlocksOutOfOrder(t *testing.T) {
	src := sample(400_000, 4, 6)
	frame, err := EncodeLZ4(src, 4, Shuffle)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := HeadBytes(frame)
	ix, err := ParseIndex(frame[:hb], len(frame))
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.starts) < 3 {
		t.Fatalf("%d blocks: the test needs 3", len(ix.starts))
	}
	// Blocks 0 and 1 stored the other way round.
	b0 := frame[ix.starts[0]:ix.ends[0]]
	b1 := frame[ix.starts[1]:ix.ends[1]]
	moved := append(append(append(bytes.Clone(frame[:ix.starts[0]]), b1...), b0...), frame[ix.ends[1]:]...)
	binary.LittleEndian.PutUint32(moved[HeaderSize:], ix.starts[0]+uint32(len(b1)))
	binary.LittleEndian.PutUint32(moved[HeaderSize+4:], ix.starts[0])
	whole, err := Decode(moved, len(src))
	if err != nil || !bytes.Equal(whole, src) {
		t.Fatalf("the moved frame does not decode whole: %v", err)
	}
	mix, err := ParseIndex(moved[:hb], len(moved))
	if err != nil {
		t.Fatal(err)
	}
	checkSpans(t, mix, moved, src, [][2]int{{0, ix.BlockSize}, {ix.BlockSize, ix.BlockSize}, {100, 2*ix.BlockSize + 7}, {ix.BlockSize - 3, 6}})
}

// checkSpans decodes each span [off, off+n) of frame, whose index is ix,
// from the bytes Span names, and checks it is those bytes of src.
func checkSpans(t *testing.T, ix *Index, frame, src []byte, spans [][2]int) {
	t.Helper()
	for _, span := range spans {
		lo, hi := ix.Span(span[0], span[1])
		got := make([]byte, span[1])
		if err := ix.DecodeSpan(got, span[0], frame[lo:hi], nil); err != nil {
			t.Fatalf("span %v: %v", span, err)
		}
		if !bytes.Equal(got, src[span[0]:span[0]+span[1]]) {
			t.Fatalf("span %v differs from the whole frame's", span)
		}
	}
}

// TestDecodeSpanBlockSizeOverNBytes: a header's block size may exceed the
// frame's bytes (one short block, as the whole-frame decoder reads it);
// a span is decoded the same, with scratch of the data's size, not of
// three claimed blocks.
func TestDecodeSpanBlockSizeOverNBytes(t *testing.T) {
	src := bytes.Repeat([]byte("depthspace"), 8)[:72]
	frame, err := EncodeLZ4(src, 1, NoShuffle)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(frame[8:], 700_000_000)
	want, err := Decode(frame, len(src))
	if err != nil || !bytes.Equal(want, src) {
		t.Fatalf("the whole-frame decoder: %v", err)
	}
	ix := indexOf(t, frame)
	if ix.Memcpyed() {
		t.Fatal("the frame is stored as a copy: the test needs compressed blocks")
	}
	got := make([]byte, 30)
	lo, hi := ix.Span(20, len(got))
	n := allocatedBy(func() { err = ix.DecodeSpan(got, 20, frame[lo:hi], nil) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src[20:50]) {
		t.Fatal("the span differs from the whole frame's")
	}
	if n > 1<<20 {
		t.Errorf("decoding 30 bytes of a 72-byte frame allocated %d bytes", n)
	}
}

// indexOf is frame's index, read from the head HeadBytes asks for.
func indexOf(t *testing.T, frame []byte) *Index {
	t.Helper()
	hb, err := HeadBytes(frame[:HeaderSize])
	if err != nil {
		t.Fatal(err)
	}
	ix, err := ParseIndex(frame[:hb], len(frame))
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// allocatedBy is how many bytes f allocates.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeSpanSharedBlockOffset: blocks whose table entries share one
// stored offset (equal blocks stored once) are read by a span as the
// whole-frame decoder reads them, from the streams at that offset.
func TestDecodeSpanSharedBlockOffset(t *testing.T) {
	block := sample(1<<17, 4, 8)
	src := append(append(append([]byte{}, block...), block...), sample(1<<17, 4, 9)...)
	frame, err := EncodeLZ4(src, 4, Shuffle)
	if err != nil {
		t.Fatal(err)
	}
	ix := indexOf(t, frame)
	if ix.BlockSize != len(block) || len(ix.starts) != 3 {
		t.Fatalf("blocks of %d bytes, %d of them: the test needs 3 of %d", ix.BlockSize, len(ix.starts), len(block))
	}
	binary.LittleEndian.PutUint32(frame[HeaderSize+4:], ix.starts[0]) // block 1 is block 0's bytes
	want, err := Decode(frame, len(src))
	if err != nil || !bytes.Equal(want, src) {
		t.Fatalf("the whole-frame decoder: %v", err)
	}
	n := len(block)
	checkSpans(t, indexOf(t, frame), frame, src, [][2]int{{0, len(src)}, {0, n}, {5, 10}, {n, n}, {n + 5, 10}, {n - 5, 10}, {2*n - 3, 9}})
}

// TestEncodeInPlaceMatchesEncodeLZ4: a frame encoded over its own data
// is EncodeLZ4's byte for byte, for frames that compress throughout
// (no room asked for), that do not from the start (the frame goes on in
// the room at once), that stop compressing half way (it goes on in the
// room after some blocks) and that end up stored as a copy once some of
// their blocks were written over (those blocks decoded back).
func TestEncodeInPlaceMatchesEncodeLZ4(t *testing.T) {
	r := rand.New(rand.NewSource(35))
	noise := make([]byte, 1<<20)
	r.Read(noise)
	var e Encoder
	for _, ts := range []int{1, 2, 4, 8, 3} {
		smooth := sample(1<<20/ts, ts, 6)
		cases := []struct {
			name  string
			src   []byte
			spare bool // a room may be asked for
		}{
			{"empty", nil, true},
			{"tiny", sample(3, ts, 2), true},
			{"small", sample(100, ts, 2), true},
			{"leftover block", sample(70_001, ts, 3), false},
			{"smooth", smooth, false},
			{"noise", noise[:300_001], true},
			{"smooth then noise", append(slices.Clone(smooth[:len(smooth)/2]), noise[:len(smooth)/2]...), true},
			{"noise then smooth", append(slices.Clone(noise[:len(smooth)/4]), smooth[:3*len(smooth)/4]...), true},
		}
		for _, c := range cases {
			for _, mode := range []int{NoShuffle, Shuffle} {
				want, err := EncodeLZ4(c.src, ts, mode)
				if err != nil {
					t.Fatal(err)
				}
				buf := slices.Clone(c.src)
				spared := 0
				got, err := e.EncodeLZ4InPlace(buf, ts, mode, func(n int) []byte {
					spared++
					if n < FrameBound(len(c.src), ts) {
						t.Errorf("a room of %d bytes asked for, under FrameBound's %d", n, FrameBound(len(c.src), ts))
					}
					return make([]byte, 0, n)
				})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("typesize %d, %s, shuffle %d: the frame encoded in place differs from EncodeLZ4's", ts, c.name, mode)
				}
				if spared > 1 {
					t.Errorf("typesize %d, %s, shuffle %d: %d rooms asked for, want 1 at most", ts, c.name, mode, spared)
				}
				if !c.spare && spared > 0 {
					t.Errorf("typesize %d, %s, shuffle %d: a room asked for by a frame that compresses throughout", ts, c.name, mode)
				}
				back, err := Decode(got, len(c.src))
				if err != nil || !bytes.Equal(back, c.src) {
					t.Fatalf("typesize %d, %s: does not decode back (%v)", ts, c.name, err)
				}
			}
		}
	}
}

// TestEncodeInPlaceDecodesBack: a frame whose first block saves a few
// bytes and whose next ones are stored as they are (noise after some
// zeros) is laid over its data until the saving is used up, then goes
// on in the room and is larger than its data: it is stored as a copy,
// the blocks written over decoded back first, and is EncodeLZ4's frame.
func TestEncodeInPlaceDecodesBack(t *testing.T) {
	noise := make([]byte, 1<<20)
	rand.New(rand.NewSource(36)).Read(noise)
	var e Encoder
	decodedBack := 0
	for z := 0; z <= 1024 && decodedBack < 3; z += 4 {
		src := slices.Clone(noise)
		clear(src[:z])
		want, err := EncodeLZ4(src, 1, NoShuffle)
		if err != nil {
			t.Fatal(err)
		}
		buf := slices.Clone(src)
		written := false
		got, err := e.EncodeLZ4InPlace(buf, 1, NoShuffle, func(n int) []byte {
			written = !bytes.Equal(buf, src)
			return make([]byte, 0, n)
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d zeros then noise: the frame encoded in place differs from EncodeLZ4's", z)
		}
		if written && got[2]&flagMemcpyed != 0 {
			decodedBack++
		}
	}
	if decodedBack == 0 {
		t.Fatal("no frame was stored as a copy after blocks were written over its data: the case is not tested")
	}
}

// TestEncodeInPlaceHoldsABlock: encoding a 4 MiB chunk that compresses
// over its own bytes asks for no room and allocates nothing once the
// Encoder has made its scratch, which is a few blocks, not a frame: what
// a thread holds to encode a chunk is bounded by the block size.
func TestEncodeInPlaceHoldsABlock(t *testing.T) {
	src := sample(1<<20, 4, 7)
	var e Encoder
	noRoom := func(n int) []byte {
		t.Fatalf("a room of %d bytes asked for", n)
		return nil
	}
	if _, err := e.EncodeLZ4InPlace(slices.Clone(src), 4, Shuffle, noRoom); err != nil {
		t.Fatal(err)
	}
	bs := blockSize(len(src), 4)
	held := cap(e.tmp) + cap(e.stream) + cap(e.block) + 4*cap(e.starts)
	if held > 3*bs+4096 {
		t.Errorf("the Encoder holds %d bytes for blocks of %d (a frame is %d)", held, bs, len(src))
	}
	buf := slices.Clone(src)
	var frame []byte
	if n := allocatedBy(func() { frame, _ = e.EncodeLZ4InPlace(buf, 4, Shuffle, noRoom) }); n > 4096 {
		t.Errorf("encoding a %d-byte chunk in place allocated %d bytes", len(src), n)
	}
	if back, err := Decode(frame, len(src)); err != nil || !bytes.Equal(back, src) {
		t.Fatalf("does not decode back (%v)", err)
	}
}
