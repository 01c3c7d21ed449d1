package ops

import (
	"bytes"
	"math/rand"
	"testing"
)

// Running a plan chunk by chunk (reading each chunk's input ranges into a
// buffer, writing its output ranges from one) gives the reference result,
// every output byte exactly once; sequential chunkings read or write front
// to back; no chunk has more than B segments on either side.
func TestChunkerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for i := 0; i < 2000; i++ {
		c := randomCase(rng)
		c.fortran = false
		c.req.Block = Block(c.blocks)
		p, err := NewPlan(c.req, c.in, c.elem, false)
		if err != nil {
			t.Fatal(err)
		}
		src := randomBytes(rng, p.Bytes())
		_, want := reference(c.req, c.blocks, c.in, c.elem, false, src)
		budget := 1 + rng.Intn(4*p.Bytes()+8)
		seqIn, seqOut := rng.Intn(3) == 0, rng.Intn(3) == 0
		ck, err := p.Chunker(budget, seqIn, seqOut)
		if err != nil {
			t.Fatal(err)
		}
		B := 1
		for _, b := range c.blocks {
			B *= b
		}
		got := make([]byte, p.Bytes())
		written := make([]int, p.Bytes())
		var inPos, outPos int64
		for k := 0; k < ck.Len(); k++ {
			ch := ck.Chunk(k)
			if ch.Bytes > ck.MaxBytes() {
				t.Fatalf("%v: chunk of %d bytes over MaxBytes %d", c, ch.Bytes, ck.MaxBytes())
			}
			if !seqIn && !seqOut && (len(ch.In) > B || len(ch.Out) > B) {
				t.Fatalf("%v budget %d: %d input and %d output segments for B=%d", c, budget, len(ch.In), len(ch.Out), B)
			}
			in := make([]byte, 0, ch.Bytes)
			for _, s := range ch.In {
				if seqIn && s.Off != inPos {
					t.Fatalf("%v: sequential input reads %d after %d", c, s.Off, inPos)
				}
				inPos = s.Off + s.Len
				in = append(in, src[s.Off:s.Off+s.Len]...)
			}
			out := make([]byte, ch.Bytes)
			if err := ck.Run(ch, out, in, 1+rng.Intn(3)); err != nil {
				t.Fatal(err)
			}
			o := out
			for _, s := range ch.Out {
				if seqOut && s.Off != outPos {
					t.Fatalf("%v: sequential output writes %d after %d", c, s.Off, outPos)
				}
				outPos = s.Off + s.Len
				copy(got[s.Off:], o[:s.Len])
				for x := s.Off; x < s.Off+s.Len; x++ {
					written[x]++
				}
				o = o[s.Len:]
			}
		}
		for x, n := range written {
			if n != 1 {
				t.Fatalf("%v budget %d: output byte %d written %d times", c, budget, x, n)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v budget %d seq %v/%v: chunked result differs from the reference", c, budget, seqIn, seqOut)
		}
	}
}

func TestChunkerRefusesFortran(t *testing.T) {
	p, _ := NewPlan(Request{Block: Block{2}}, []int{1, 1, 2, 2}, 4, true)
	if _, err := p.Chunker(1<<20, false, false); err != ErrNoChunks {
		t.Fatalf("got %v", err)
	}
}

// The memory a streamed run needs is one chunk, never more than one batch
// item, for every op, order and layout, reading a pipe or writing one
// (docs/performance.md tabulates these sizes).
func TestChunkBoundsForStreams(t *testing.T) {
	const budget = 2 << 20
	for _, op := range []Op{SpaceToDepth, DepthToSpace} {
		for _, order := range []Order{DCR, CRD} {
			for _, layout := range []Layout{NCHW, NHWC} {
				shape := []int{4, 64, 512, 512}
				if layout == NHWC {
					shape = []int{4, 512, 512, 64}
				}
				p, err := NewPlan(Request{Op: op, Order: order, Layout: layout, Block: Block{2}}, shape, 4, false)
				if err != nil {
					t.Fatal(err)
				}
				item := p.Bytes() / 4
				for _, seq := range [][2]bool{{false, false}, {true, false}, {false, true}} {
					ck, err := p.Chunker(budget, seq[0], seq[1])
					if err != nil {
						t.Fatal(err)
					}
					if ck.MaxBytes() > item {
						t.Errorf("%s %s %s seq %v: chunks of %d bytes, over one item (%d)", op, order, layout, seq, ck.MaxBytes(), item)
					}
					if !seq[0] && !seq[1] && ck.MaxBytes() > budget {
						t.Errorf("%s %s %s: file chunks of %d bytes over the budget", op, order, layout, ck.MaxBytes())
					}
					t.Logf("%s %s %s stdin=%v stdout=%v: chunk %d KiB (item %d KiB)", op, order, layout, seq[0], seq[1], ck.MaxBytes()>>10, item>>10)
				}
			}
		}
	}
}
