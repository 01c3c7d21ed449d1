package pipeline

import (
	"bytes"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/raw"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// cOrder is the C-order copy of Fortran-order bytes: the oracle for
// Convert, straight from the definition (element at logical index i is at
// Fortran offset sum(i_k * prod(shape[:k]))).
func cOrder(shape []int, size int, f []byte) []byte {
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([]byte, 0, len(f))
	idx := make([]int, len(shape))
	for c := 0; c < n; c++ {
		off, acc := 0, 1
		for k := range shape {
			off += idx[k] * acc
			acc *= shape[k]
		}
		out = append(out, f[off*size:(off+1)*size]...)
		for k := len(shape) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return out
}

// Every format to every format, C and Fortran input, file and standard
// output, several dtypes: the tensor that comes out (read back by Load)
// has the same dtype, shape and C-order bytes.
func TestConvertAllPairs(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	for _, descr := range []string{"<f4", ">i2", "|u1", "<c16", "|S3", "<U2", "<f8"} {
		dt, err := format.ParseDescr(descr)
		if err != nil {
			t.Fatal(err)
		}
		shape := []int{2, 3, 4}
		data := make([]byte, 24*dt.Size)
		rng.Read(data)
		if dt.Kind == 'U' { // valid code points
			for i := 0; i < len(data); i += 4 {
				copy(data[i:], []byte{0, 0x30 + byte(i%40), 0, 0})
			}
		}
		if dt.Kind == 'f' || dt.Kind == 'c' { // no NaN (JSON drops payloads)
			for i := dt.Size/2 - 1; i < len(data); i += dt.Size / 2 {
				data[i] &= 0x3f
			}
		}
		for _, fortran := range []bool{false, true} {
			want := data
			if fortran {
				want = cOrder(shape, dt.Size, data)
			}
			in := filepath.Join(dir, "in.npy")
			writeNpy(t, in, descr, shape, fortran, data)
			for _, via := range []format.Kind{npy.KindNpy, raw.KindRaw, json.KindJSON} {
				mid := filepath.Join(dir, "mid."+string(via))
				for _, toStdout := range []bool{false, true} {
					o := Options{Source: Source{Path: in}, Output: mid, Threads: 2}
					var stdout bytes.Buffer
					if toStdout {
						o.Output, o.To, o.Stdout = "-", via, &stdout
					}
					if _, err := Convert(o); err != nil {
						t.Fatalf("%s F=%v to %s: %v", descr, fortran, via, err)
					}
					if toStdout {
						if err := os.WriteFile(mid, stdout.Bytes(), 0o644); err != nil {
							t.Fatal(err)
						}
					}
					src := Source{Path: mid}
					if via == raw.KindRaw {
						src.DType, src.Shape = descr, "2,3,4"
					}
					back, err := Load(src)
					if err != nil {
						t.Fatalf("%s F=%v via %s: %v", descr, fortran, via, err)
					}
					if back.Fortran || !back.DType.SameLayout(dt) || format.ShapeString(back.Shape) != "2,3,4" || !bytes.Equal(back.Data, want) {
						t.Errorf("%s F=%v via %s (stdout %v): got %s %v F=%v, bytes equal %v", descr, fortran, via, toStdout,
							back.DType.Descr(), back.Shape, back.Fortran, bytes.Equal(back.Data, want))
					}
					if via == npy.KindNpy {
						b, _ := os.ReadFile(mid)
						if wantFile := append(npy.EncodeNpy(format.Header{DType: dt, Shape: shape}), want...); !bytes.Equal(b, wantFile) {
							t.Errorf("%s F=%v: npy output is not the numpy-style C-order file", descr, fortran)
						}
					}
					back.Close()
				}
			}
		}
	}
}

// Standard input, read whole or streamed: C and Fortran order, to raw and
// to JSON. A stream that is too short or too long is refused either way.
func TestConvertStdin(t *testing.T) {
	for _, stream := range []bool{false, true} {
		convertStdin(t, stream)
	}
}

func convertStdin(t *testing.T, stream bool) {
	dir := t.TempDir()
	shape := []int{3, 5}
	data := make([]byte, 15*4)
	rand.New(rand.NewSource(1)).Read(data)
	for i := 3; i < len(data); i += 4 {
		data[i] &= 0x3f
	}
	for _, fortran := range []bool{false, true} {
		p := filepath.Join(dir, "in.npy")
		writeNpy(t, p, "<f4", shape, fortran, data)
		file, _ := os.ReadFile(p)
		want := data
		if fortran {
			want = cOrder(shape, 4, data)
		}
		for _, to := range []format.Kind{raw.KindRaw, json.KindJSON} {
			var out bytes.Buffer
			o := Options{Source: Source{Path: "-", Stdin: bytes.NewReader(file), Stream: stream}, Output: "-", To: to, Stdout: &out, Threads: 1}
			if _, err := Convert(o); err != nil {
				t.Fatalf("stream %v F=%v to %s: %v", stream, fortran, to, err)
			}
			got := out.Bytes()
			if to == json.KindJSON {
				_, b, err := json.DecodeJSON(got, nil)
				if err != nil {
					t.Fatal(err)
				}
				got = b
			}
			if !bytes.Equal(got, want) {
				t.Errorf("F=%v to %s: wrong bytes", fortran, to)
			}
		}
		for _, bad := range [][]byte{file[:len(file)-1], append(append([]byte{}, file...), 0)} {
			for _, to := range []format.Kind{raw.KindRaw, json.KindJSON} {
				o := Options{Source: Source{Path: "-", Stdin: bytes.NewReader(bad), Stream: stream}, Output: "-", To: to, Stdout: &bytes.Buffer{}, Threads: 1}
				_, err := Convert(o)
				if err == nil || !strings.Contains(err.Error(), "data bytes") {
					t.Errorf("F=%v to %s, %d bytes of %d: %v", fortran, to, len(bad), len(file), err)
				}
			}
		}
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.npy")
	writeNpy(t, in, "<f4", []int{2, 2}, false, make([]byte, 16))
	old := filepath.Join(dir, "old.npy")
	if err := os.WriteFile(old, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Source: Source{Path: filepath.Join(dir, "none.npy")}, Output: old}, "none.npy: no such file"},
		{Options{Source: Source{Path: in}, Output: in}, "is the input file"},
		{Options{Source: Source{Path: in}, Output: "-", StdoutTTY: true}, "stdout: refusing to write binary npy data to a terminal"},
		{Options{Source: Source{Path: in, DType: "int8"}, Output: old}, "--dtype int8 does not match the file's dtype float32"},
		{Options{Source: Source{Path: in, From: raw.KindRaw, DType: "f4", Shape: "3"}, Output: old}, "raw data is 144 bytes but --dtype float32 --shape 3 describes 12"},
	} {
		tc.o.Threads, tc.o.Stdout = 1, &bytes.Buffer{}
		_, err := Convert(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o.Source, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(old); string(b) != "previous" {
		t.Error("a failed conversion changed the existing output")
	}
	// JSON to a terminal is fine.
	var out bytes.Buffer
	if _, err := Convert(Options{Source: Source{Path: in}, Output: "-", To: json.KindJSON, StdoutTTY: true, Stdout: &out, Threads: 1}); err != nil || !strings.HasPrefix(out.String(), `{"dtype": "float32"`) {
		t.Errorf("JSON to a terminal: %v %q", err, out.String())
	}
}

// numpy writes Fortran-order arrays of several dtypes; Convert makes npy,
// raw and JSON of them; numpy reads each back and finds the same array,
// in C order, byte for byte.
func TestConvertNumpyInterop(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	gen := `
import sys, numpy as np
rng = np.random.default_rng(5)
for i, d in enumerate(["<f4", ">f8", "<i8", ">u2", "|b1", "<c8", "|S4", ">U3", "<f2"]):
    x = rng.integers(0, 100, size=(2, 3, 4, 5)).astype(d)
    np.save(sys.argv[1] + "/in%d.npy" % i, np.asfortranarray(x))
`
	if out, err := exec.Command(py, "-c", gen, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	ins, _ := filepath.Glob(filepath.Join(dir, "in*.npy"))
	if len(ins) != 9 {
		t.Fatalf("numpy wrote %d files", len(ins))
	}
	for _, in := range ins {
		base := strings.TrimSuffix(in, ".npy")
		for _, ext := range []string{".c.npy", ".raw", ".json"} {
			if _, err := Convert(Options{Source: Source{Path: in}, Output: base + ext, Threads: 2}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := `
import sys, glob, json, numpy as np
bad = 0
for p in sorted(glob.glob(sys.argv[1] + "/in?.npy")):
    x = np.load(p)
    assert x.flags.f_contiguous
    base = p[:-4]
    c = np.load(base + ".c.npy")
    raw = np.fromfile(base + ".raw", dtype=x.dtype).reshape(x.shape)
    with open(base + ".json") as f:
        j = json.load(f)
    ok = (c.flags.c_contiguous and c.dtype.str == x.dtype.str and c.tobytes() == np.ascontiguousarray(x).tobytes()
          and raw.tobytes() == c.tobytes() and j["shape"] == list(x.shape)
          and np.array_equal(np.array(j["data"], dtype=x.dtype) if x.dtype.kind not in "cSU" else c, c))
    if not ok:
        bad += 1
        print("mismatch:", p, x.dtype.str)
sys.exit(1 if bad else 0)
`
	out, err := exec.Command(py, "-c", check, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy check: %v\n%s", err, out)
	}
}
