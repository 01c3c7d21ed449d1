package pipeline

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/ops"
)

// A format registered for these tests only, that the pipeline knows by
// its capabilities alone: "IPT\x00", a little-endian uint32 n, then n
// uint8 elements in place (format.InPlace) of shape [1, 1, 2, n/2]; read
// only, and worked on in a tar shard by default (ShardDefault).
const iptKind format.Kind = "ipttest"

// iptHeads records the length of the head each Parse was given.
var iptHeads []int

func iptHeader(b []byte) (format.Preamble, error) {
	if len(b) < 8 || string(b[:4]) != "IPT\x00" {
		return format.Preamble{}, errors.New("not an ipt header")
	}
	u8, _ := format.ParseDType("uint8")
	n := int(binary.LittleEndian.Uint32(b[4:8]))
	return format.Preamble{Header: format.Header{DType: u8, Shape: []int{1, 1, 2, n / 2}}, Major: 7, DataOffset: 8}, nil
}

func init() {
	format.Register(format.Format{Kind: iptKind, Doc: "a test format", ReadOnly: true, ShardDefault: true, Exts: []string{".ipt"}, SniffOrder: 15,
		Sniff: func(b []byte) bool { return bytes.HasPrefix(b, []byte("IPT\x00")) },
		InPlace: &format.InPlace{
			Parse: func(head []byte, fileBytes int64, _ format.Description) (format.Preamble, error) {
				iptHeads = append(iptHeads, len(head))
				p, err := iptHeader(head)
				if err == nil && fileBytes != p.DataOffset+p.DataBytes() {
					err = errors.New("wrong size")
				}
				return p, err
			},
			Read: func(r io.Reader, _ format.Description) (format.Preamble, error) {
				var b [8]byte
				if _, err := io.ReadFull(r, b[:]); err != nil {
					return format.Preamble{}, err
				}
				return iptHeader(b[:])
			},
			HeadBytes: 8,
		}})
}

func iptFile(n int) []byte {
	b := binary.LittleEndian.AppendUint32([]byte("IPT\x00"), uint32(n))
	for i := range n {
		b = append(b, byte(i))
	}
	return b
}

// A format with the InPlace capability is mapped, streamed and described
// from its header alone, with no code of the pipeline's naming it.
func TestInPlaceCapability(t *testing.T) {
	file := iptFile(1000)
	path := filepath.Join(t.TempDir(), "x.ipt")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}

	tensor, err := Load(Source{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if tensor.Kind != iptKind || tensor.Stored == nil || tensor.Stored.DataOffset != 8 || !bytes.Equal(tensor.Data, file[8:]) || !tensor.inFile {
		t.Errorf("mapped: kind %q, stored %+v, %d data bytes", tensor.Kind, tensor.Stored, len(tensor.Data))
	}
	tensor.Close()

	streamed, err := Load(Source{Path: "-", Stdin: bytes.NewReader(file), Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(streamed.Stream)
	if streamed.Kind != iptKind || streamed.Data != nil || !bytes.Equal(data, file[8:]) {
		t.Errorf("streamed: kind %q, %d mapped bytes, %d streamed", streamed.Kind, len(streamed.Data), len(data))
	}

	iptHeads = nil
	infos, err := Describe(Source{Path: path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(iptHeads) != 1 || iptHeads[0] != 8 {
		t.Errorf("info parsed heads of %v bytes, want one of 8 (the header alone)", iptHeads)
	}
	in := infos[0]
	if in.Format != string(iptKind) || in.HeaderBytes == nil || *in.HeaderBytes != 8 || in.FileBytes != int64(len(file)) || in.Version != "7.0" {
		t.Errorf("info: %+v", in)
	}
}

// A tar shard's members of a format registered ShardDefault are worked on
// without --member, and a read-only one's output is written in the Plain
// format (npy), renamed to its extension; the others are copied.
func TestShardCapabilities(t *testing.T) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, m := range []struct {
		name string
		data []byte
	}{{"000.x.ipt", iptFile(8)}, {"000.cls", []byte("3")}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: m.name, Size: int64(len(m.data)), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		tw.Write(m.data)
	}
	tw.Close()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.tar"), filepath.Join(dir, "out.tar")
	if err := os.WriteFile(in, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in}, Output: out, Threads: 1}); err != nil {
		t.Fatal(err)
	}
	shard, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(shard))
	var names []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		names = append(names, h.Name)
		data, _ := io.ReadAll(tr)
		if h.Name != "000.x.npy" {
			continue
		}
		p, err := npy.ParseNpy(data)
		if err != nil || format.ShapeString(p.Shape) != "1,4,1,2" || len(data)-int(p.DataOffset) != 8 {
			t.Errorf("000.x.npy: %+v, %v", p, err)
		}
	}
	if strings.Join(names, " ") != "000.x.npy 000.cls" {
		t.Errorf("output members %q, want the ipt member written as npy, then the copy", names)
	}
}
