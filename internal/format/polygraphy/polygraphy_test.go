package polygraphy

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	jsonfmt "github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// The peer: testdata/pgpeer.py, Polygraphy's encoding written
// from serde.py and struct.py with numpy, base64 and json (not our code).
const pgPeer = "testdata/pgpeer.py"

type pgManifestMember struct {
	Name    string `json:"name"`
	Descr   string `json:"descr"`
	Shape   []int  `json:"shape"`
	Fortran bool   `json:"fortran"`
	Hex     string `json:"hex"`
}

// pgMake has the peer write its test files into a temporary directory.
func pgMake(t *testing.T) (string, map[string][]pgManifestMember) {
	t.Helper()
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	if out, err := exec.Command(py, pgPeer, "make", dir).CombinedOutput(); err != nil {
		t.Fatalf("pgpeer make: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var man map[string][]pgManifestMember
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	return dir, man
}

func pgOpen(t *testing.T, b []byte, deferred bool) *format.Archive {
	t.Helper()
	ar, err := openPolygraphy(b, format.OpenOptions{Deferred: deferred, Threads: 3})
	if err != nil {
		t.Fatal(err)
	}
	return ar
}

// TestPolygraphyReadsPython: every file the peer writes (every dtype
// np.save writes, Fortran order, several runners and iterations, input
// lists, LazyNumpyArray, outputs without LazyArray) reads as the members
// the peer lists, deferred (Inflate, InflateData) or decoded at Open.
func TestPolygraphyReadsPython(t *testing.T) {
	dir, man := pgMake(t)
	if len(man) < 8 {
		t.Fatalf("peer wrote %d files", len(man))
	}
	for file, want := range man {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if !SniffPolygraphy(b) || format.Sniff(b) != KindPolygraphy {
			t.Errorf("%s: not sniffed as polygraphy (Sniff: %q)", file, format.Sniff(b))
		}
		lazy, eager := pgOpen(t, b, true), pgOpen(t, b, false)
		if file == "dtypes.json" { // through reads by position
			var err error
			if lazy, err = openPolygraphy(b, format.OpenOptions{File: bytes.NewReader(b), Deferred: true}); err != nil {
				t.Fatal(err)
			}
		}
		if len(lazy.Members) != len(want) || len(eager.Members) != len(want) {
			t.Fatalf("%s: %d and %d members, want %d", file, len(lazy.Members), len(eager.Members), len(want))
		}
		for i, w := range want {
			m, e := lazy.Members[i], eager.Members[i]
			if m.Name != w.Name || e.Name != w.Name {
				t.Errorf("%s member %d: name %q, want %q", file, i, m.Name, w.Name)
			}
			if m.Header.DType.Descr() != w.Descr || format.ShapeString(m.Header.Shape) != format.ShapeString(w.Shape) || m.Header.Fortran != w.Fortran {
				t.Errorf("%s %s: header %s %v fortran %v, want %s %v %v", file, w.Name, m.Header.DType.Descr(), m.Header.Shape, m.Header.Fortran, w.Descr, w.Shape, w.Fortran)
			}
			if m.Stored == nil || m.Stored.DType.Descr() != w.Descr {
				t.Errorf("%s %s: Npy %+v", file, w.Name, m.Stored)
			}
			wantData, _ := hex.DecodeString(w.Hex)
			var buf bytes.Buffer
			if err := m.Lazy.Inflate(&buf); err != nil {
				t.Fatalf("%s %s: Inflate: %v", file, w.Name, err)
			}
			data, err := m.Lazy.InflateData()
			if err != nil {
				t.Fatalf("%s %s: InflateData: %v", file, w.Name, err)
			}
			if !bytes.Equal(buf.Bytes(), wantData) || !bytes.Equal(data, wantData) || !bytes.Equal(e.Data, wantData) || e.Lazy != nil {
				t.Errorf("%s %s: data differ from numpy's", file, w.Name)
			}
		}
		meta := lazy.Meta.(*PolygraphyMeta)
		if len(meta.Names) != len(want) || len(meta.Places) != len(want) {
			t.Errorf("%s: meta lists %d names", file, len(meta.Names))
		}
	}
	// The structure kept in Meta.
	b, _ := os.ReadFile(filepath.Join(dir, "iterations.json"))
	meta := pgOpen(t, b, true).Meta.(*PolygraphyMeta)
	if meta.Inputs || len(meta.Runners) != 1 || meta.Runners[0].Name != "custom_runner" || len(meta.Runners[0].Iterations) != 3 {
		t.Fatalf("iterations.json meta %+v", meta)
	}
	if it := meta.Runners[0].Iterations[1]; string(it.Key("runtime")) != "null" || string(it.Key("runner_name")) != `"custom_runner"` {
		t.Errorf("iteration 1 keys %q", it.Keys)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "runners.json"))
	meta = pgOpen(t, b, true).Meta.(*PolygraphyMeta)
	if want := (PolygraphyPlace{1, 1, 0}); meta.Places[6] != want || meta.Names[6] != "trt-runner-N0-07/07/26-13:42:10/1/logits" {
		t.Errorf("runners.json member 6: %v %q", meta.Places[6], meta.Names[6])
	}
}

// TestPolygraphyRoundTripBytes: a C-order file read and written back with
// its Meta is the peer's file byte for byte (json.dumps(indent=4) layout,
// np.save's npy preambles, the runtimes' text).
func TestPolygraphyRoundTripBytes(t *testing.T) {
	dir, _ := pgMake(t)
	for _, file := range []string{"runners.json", "iterations.json", "two_runners.json", "lazynumpy.json", "inputs.json", "inputs1.json"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		out := pgWriteBack(t, pgOpen(t, b, true))
		if !bytes.Equal(out, b) {
			t.Errorf("%s: written back differs from the peer's file\n%s", file, firstDiff(out, b))
		}
	}
}

func pgWriteBack(t *testing.T, ar *format.Archive) []byte {
	t.Helper()
	specs := make([]format.MemberSpec, len(ar.Members))
	for i, m := range ar.Members {
		specs[i] = format.MemberSpec{Name: m.Name, Header: m.Header}
	}
	var out bytes.Buffer
	mw, err := createPolygraphy(&out, specs, ar.Meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ar.Members {
		w, err := mw.Member(m.Name, m.Header)
		if err != nil {
			t.Fatal(err)
		}
		data, err := m.Lazy.InflateData()
		if err != nil {
			t.Fatal(err)
		}
		// In pieces of odd sizes, to cross the encoder's 3-byte groups.
		for len(data) > 0 {
			k := min(len(data), 7)
			if _, err := w.Write(data[:k]); err != nil {
				t.Fatal(err)
			}
			data = data[k:]
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-80)
	return fmt.Sprintf("at byte %d:\nours:   %q\npeer's: %q", i, a[lo:min(len(a), i+80)], b[lo:min(len(b), i+80)])
}

type pgSummary struct {
	Kind    string `json:"kind"`
	Runners []struct {
		Name       string `json:"name"`
		Iterations []struct {
			Outputs    []pgSummaryOutput `json:"outputs"`
			Runtime    *float64          `json:"runtime"`
			RunnerName string            `json:"runner_name"`
		} `json:"iterations"`
	} `json:"runners"`
	Iterations [][]pgSummaryOutput `json:"iterations"`
}

type pgSummaryOutput struct {
	Name    string  `json:"name"`
	Wrapper *string `json:"wrapper"`
	Descr   string  `json:"descr"`
	Shape   []int   `json:"shape"`
	Hex     string  `json:"hex"`
}

func pgRead(t *testing.T, py, path string) pgSummary {
	t.Helper()
	out, err := exec.Command(py, pgPeer, "read", path).CombinedOutput()
	if err != nil {
		t.Fatalf("pgpeer read %s: %v\n%s", path, err, out)
	}
	var s pgSummary
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("pgpeer read: %v\n%s", err, out)
	}
	return s
}

// TestPolygraphyWritesForPython: files we write are read by the peer's
// reader (serde.py's decoding: b64decode(validate=True), np.load) with
// the structure and data expected, in json.dumps(indent=4) layout with
// np.save's preambles: without Meta one runner "depthspace", one
// iteration, runtime 0.0; with Meta the input's structure, Fortran-order
// members written in C order.
func TestPolygraphyWritesForPython(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir, man := pgMake(t)

	// Without Meta: the members of dtypes.json, as a new file.
	b, _ := os.ReadFile(filepath.Join(dir, "dtypes.json"))
	ar := pgOpen(t, b, true)
	ar.Meta = nil
	path := filepath.Join(dir, "ours.json")
	if err := os.WriteFile(path, pgWriteBack(t, ar), 0o644); err != nil {
		t.Fatal(err)
	}
	s := pgRead(t, py, path)
	if s.Kind != "RunResults" || len(s.Runners) != 1 || s.Runners[0].Name != "depthspace" || len(s.Runners[0].Iterations) != 1 {
		t.Fatalf("structure %+v", s)
	}
	it := s.Runners[0].Iterations[0]
	if it.Runtime == nil || *it.Runtime != 0 || it.RunnerName != "depthspace" || len(it.Outputs) != len(man["dtypes.json"]) {
		t.Fatalf("iteration: runtime %v runner %q, %d outputs", it.Runtime, it.RunnerName, len(it.Outputs))
	}
	for i, w := range man["dtypes.json"] {
		o := it.Outputs[i]
		if o.Name != w.Name || o.Wrapper == nil || *o.Wrapper != "LazyArray" || o.Descr != w.Descr || format.ShapeString(o.Shape) != format.ShapeString(w.Shape) {
			t.Errorf("output %d: %+v, want %s %s %v", i, o, w.Name, w.Descr, w.Shape)
		}
		if !w.Fortran && o.Hex != w.Hex {
			t.Errorf("output %s: data differ", w.Name)
		}
	}

	// With Meta: every structure, the same data in C order.
	for _, file := range []string{"runners.json", "iterations.json", "direct.json", "lazynumpy.json", "inputs.json", "legacy.json", "latin1_npy.json"} {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		ar := pgOpen(t, b, true)
		// A Fortran member goes out in C order: transpose it here the
		// way the pipeline would, through ParseNpy's strides.
		for i, m := range ar.Members {
			if m.Header.Fortran {
				data, _ := m.Lazy.InflateData()
				c := toCOrder(m.Header, data)
				h := m.Header
				h.Fortran = false
				ar.Members[i].Header, ar.Members[i].Lazy = h, bytesLazy(c)
			}
		}
		path := filepath.Join(dir, "ours_"+file)
		os.WriteFile(path, pgWriteBack(t, ar), 0o644)
		orig, ours := pgRead(t, py, filepath.Join(dir, file)), pgRead(t, py, path)
		if !reflect.DeepEqual(orig, ours) {
			t.Errorf("%s: written back reads differently:\n%+v\n%+v", file, orig, ours)
		}
	}
}

type bytesLazy []byte

func (b bytesLazy) Inflate(w io.Writer) error    { _, err := w.Write(b); return err }
func (b bytesLazy) InflateData() ([]byte, error) { return b, nil }

// toCOrder reorders Fortran-order data into C order, element by element.
func toCOrder(h format.Header, data []byte) []byte {
	es := h.DType.Size
	n := h.Elements()
	out := make([]byte, len(data))
	idx := make([]int, len(h.Shape))
	for c := 0; c < n; c++ {
		// C index c -> multi-index -> Fortran offset.
		r := c
		for k := len(h.Shape) - 1; k >= 0; k-- {
			idx[k] = r % h.Shape[k]
			r /= h.Shape[k]
		}
		f, stride := 0, 1
		for k := range h.Shape {
			f += idx[k] * stride
			stride *= h.Shape[k]
		}
		copy(out[c*es:(c+1)*es], data[f*es:(f+1)*es])
	}
	return out
}

// pgFile builds a small Polygraphy file around array values given as
// JSON text, for the hostile cases.
func pgFile(outputs string) []byte {
	return []byte(`{"lst": [["r", [{"outputs": {` + outputs + `}, "runtime": 0.0, "runner_name": "r", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}`)
}

func pgArrayText(payload []byte) string {
	return `{"array": "` + base64.StdEncoding.EncodeToString(payload) + `", "polygraphy_class": "ndarray"}`
}

func pgNpy(header string, data []byte) []byte {
	return append(npyWith(1, header), data...)
}

// npyWith is an npy preamble of the given version around header.
func npyWith(major byte, header string) []byte {
	b := []byte(npy.NpyMagic)
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	}
	return append(b, header...)
}

const pgF4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"

// TestPolygraphyHostile: malformed and hostile files are errors that say
// what is wrong (naming the member where there is one), found before any
// data are decoded where the structure shows them; never a panic.
func TestPolygraphyHostile(t *testing.T) {
	good := pgNpy(pgF4, make([]byte, 8))
	goodText := base64.StdEncoding.EncodeToString(good)
	cases := []struct {
		name, file, want string
	}{
		{"empty", "", "unexpected end"},
		{"not json", "hello", "not a JSON value"},
		{"bom", "\xef\xbb\xbf[]", "byte order mark"},
		{"trailing", "[] x", "text after the JSON value"},
		{"scalar", "3", "not RunResults or an input list"},
		{"no class", `{"lst": []}`, "no polygraphy_class"},
		{"other class", `{"polygraphy_class": "AccuracyResult"}`, "Polygraphy AccuracyResult"},
		{"lst missing", `{"polygraphy_class": "RunResults"}`, `no "lst"`},
		{"lst not a list", `{"lst": {}, "polygraphy_class": "RunResults"}`, `"lst" is a JSON object, not a list`},
		{"lst item", `{"lst": [["r"]], "polygraphy_class": "RunResults"}`, "not a [runner name, iterations] pair"},
		{"runner twice", `{"lst": [["r", []], ["r", []]], "polygraphy_class": "RunResults"}`, `runner "r" appears twice`},
		{"iteration not", `{"lst": [["r", [{}]]], "polygraphy_class": "RunResults"}`, "not an IterationResult"},
		{"no runtime", `{"lst": [["r", [{"outputs": {}, "runner_name": "r", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}`, `has no "runtime"`},
		{"duplicate key", `{"lst": [], "lst": [], "polygraphy_class": "RunResults"}`, `key "lst" appears twice`},
		{"torch", string(pgFile(`"out0": {"values": {"tensor": "gAJ9", "polygraphy_class": "Tensor"}, "polygraphy_class": "LazyArray"}`)), `"out0": is a torch Tensor`},
		{"not an array", string(pgFile(`"out0": [1, 2]`)), `"out0": is a JSON list, not a Polygraphy array`},
		{"no array key", string(pgFile(`"out0": {"polygraphy_class": "ndarray"}`)), `"out0": the ndarray has no "array"`},
		{"array not string", string(pgFile(`"out0": {"array": 3, "polygraphy_class": "ndarray"}`)), `"out0": the ndarray's "array" is a JSON number`},
		{"not base64", string(pgFile(`"out0": {"array": "!!!!", "polygraphy_class": "ndarray"}`)), `"out0": invalid base64 at character 0`},
		{"padding", string(pgFile(`"out0": {"array": "` + goodText[:len(goodText)-1] + `", "polygraphy_class": "ndarray"}`)), `"out0": base64 text of`},
		{"not npy", string(pgFile(`"out0": ` + pgArrayText([]byte("hello world, not npy")))), `"out0": the base64 payload is not an npy file`},
		{"npz", string(pgFile(`"out0": ` + pgArrayText([]byte("PK\x03\x04 zip bytes here.")))), `"out0": the base64 payload is an npz archive`},
		{"latin-1", string(pgFile(`"out0": {"array": "PK\u0003\u0004\u0014", "polygraphy_class": "ndarray"}`)), `"out0": latin-1 npz (Polygraphy 0.29): truncated zip header`},
		{"latin-1 deflated", string(pgFile(`"out0": {"array": "PK\u0003\u0004\u0014\u0000\u0000\u0000\u0008\u0000` + strings.Repeat("x", 40) + `", "polygraphy_class": "ndarray"}`)), `"out0": latin-1 npz (Polygraphy 0.29): member compressed (method 8)`},
		{"latin-1 not latin-1", string(pgFile(`"out0": {"array": "\u0093NUMPY\u0100", "polygraphy_class": "ndarray"}`)), `"out0": latin-1 text, character 11: U+0100 is not a latin-1 character`},
		{"latin-1 short", string(pgFile(`"out0": {"array": "\u0093NUMPY\u0001\u0000@\u0000{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }      \n1234", "polygraphy_class": "ndarray"}`)), `"out0": truncated: the npy header describes 8 data bytes`},
		{"pickle", string(pgFile(`"out0": ` + pgArrayText(pgNpy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n", make([]byte, 16))))), `"out0": the base64 payload: npy header`},
		{"4 GiB", string(pgFile(`"out0": ` + pgArrayText(pgNpy("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }\n", make([]byte, 8))))), `"out0": truncated: the npy header describes 4294967296 data bytes`},
		{"trailing data", string(pgFile(`"out0": ` + pgArrayText(append(bytes.Clone(good), 0, 0, 0)))), `"out0": 3 bytes beyond the 8 data bytes`},
		{"short data", string(pgFile(`"out0": ` + pgArrayText(good[:len(good)-2]))), `"out0": truncated`},
		{"inflate: corrupt data", string(pgFile(`"out0": {"array": "` + goodText[:len(goodText)-8] + `!!!!` + goodText[len(goodText)-4:] + `", "polygraphy_class": "ndarray"}`)), `"out0": invalid base64 at character`},
		{"inflate: padding inside", string(pgFile(`"out0": {"array": "` + goodText[:len(goodText)-8] + `AA==` + goodText[len(goodText)-4:] + `", "polygraphy_class": "ndarray"}`)), `"out0": invalid base64: padding '=' at character`},
		{"inflate: newline escape", string(pgFile(`"out0": {"array": "` + goodText[:len(goodText)-8] + `\nAAA` + goodText[len(goodText)-4:] + `", "polygraphy_class": "ndarray"}`)), `"out0": invalid base64: a line break`},
		{"bad escape", string(pgFile(`"out0": {"array": "\q` + goodText[2:] + `", "polygraphy_class": "ndarray"}`)), `"out0": base64 text, character 0: invalid escape \q`},
		{"non-UTF-8 name", string(pgFile("\"o\xff\": " + pgArrayText(good))), "not valid UTF-8"},
		{"inflate: non-UTF-8 in base64", string(pgFile(`"out0": {"array": "` + goodText[:len(goodText)-8] + "\xff\xfe\xfd\xfc" + goodText[len(goodText)-4:] + `", "polygraphy_class": "ndarray"}`)), `"out0": invalid base64 at character`},
		{"deep", strings.Repeat("[", 100000), "nested more than"},
		{"deep objects", strings.Repeat(`{"a":`, 100000), "nested more than"},
		{"input list item", `[3]`, "input list item 0 is a JSON number"},
		{"empty array", `[{"x": ` + pgArrayText(good) + `, "y": {"array": "", "polygraphy_class": "ndarray"}}]`, `"y": the base64 payload is not an npy file`},
		{"same name", `{"lst": [["a", [{"outputs": {"b/c": ` + pgArrayText(good) + `}, "runtime": 0, "runner_name": "a", "polygraphy_class": "IterationResult"}]], ["a/b", [{"outputs": {"c": ` + pgArrayText(good) + `}, "runtime": 0, "runner_name": "a/b", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}`, `"a/b/c": two members have this name`},
		{"unterminated", `[{"x": {"array": "abc`, "unterminated string"},
		{"control char", "[{\"x\u0001\": 1}]", "control character"},
		{"number", `{"lst": [["r", [{"outputs": {}, "runtime": 01, "runner_name": "r", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}`, `"01" is not a JSON value`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ar, err := openPolygraphy([]byte(c.file), format.OpenOptions{Deferred: true})
			if strings.HasPrefix(c.name, "inflate: ") { // found when the data are decoded
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				err = ar.Members[0].Lazy.Inflate(io.Discard)
				if _, err2 := openPolygraphy([]byte(c.file), format.OpenOptions{}); err2 == nil || err2.Error() != err.Error() {
					t.Errorf("eager Open: %v", err2)
				}
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestPolygraphyEscapes: base64 text with JSON escapes (\/, \u0041) as a
// hand-written file may have reads as the same data.
func TestPolygraphyEscapes(t *testing.T) {
	data := []byte{0xff, 0xef, 0xbf, 1, 2, 3, 4, 5} // base64 holds '/' and '+'
	text := base64.StdEncoding.EncodeToString(pgNpy(pgF4, data))
	esc := strings.ReplaceAll(text, "/", `\/`)
	esc = strings.Replace(esc, "k", `\u006b`, 1)
	if esc == text || !strings.Contains(esc, `\/`) {
		t.Fatalf("no escapes in %s", esc)
	}
	ar := pgOpen(t, pgFile(`"o\u00e9": {"array": "`+esc+`", "polygraphy_class": "ndarray"}`), true)
	if ar.Members[0].Name != "oé" {
		t.Errorf("name %q", ar.Members[0].Name)
	}
	got, err := ar.Members[0].Lazy.InflateData()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("got %x, %v", got, err)
	}
}

// TestPolygraphyBig: members spanning many 64 KiB pieces of text, with
// npy preambles of every length mod 3, decode exactly.
func TestPolygraphyBig(t *testing.T) {
	for pad := 0; pad < 3; pad++ {
		data := make([]byte, 3*pgChunk+12345)
		for i := range data {
			data[i] = byte(i*7 + i>>9)
		}
		h := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }%s\n", len(data), strings.Repeat(" ", pad))
		ar := pgOpen(t, pgFile(`"x": `+pgArrayText(pgNpy(h, data))), true)
		var buf bytes.Buffer
		if err := ar.Members[0].Lazy.Inflate(&buf); err != nil || !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("pad %d: %v", pad, err)
		}
		out := pgWriteBack(t, ar)
		back := pgOpen(t, out, false)
		if !bytes.Equal(back.Members[0].Data, data) {
			t.Fatalf("pad %d: round trip differs", pad)
		}
	}
}

func TestSniffPolygraphy(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{`{"lst": [], "polygraphy_class": "RunResults"}`, true},
		{`[{"x": {"array": "k05VTVBZAQB2AHsnZGVzY3In` + strings.Repeat("A", 8000) + `"}}]`, true},
		{"[\n    {\n        \"x\": {\n            \"array\": \"k05VTVBZ", true},
		{`{"a": {"__polygraphy_encoded_ndarray": "polygraphy_serialized_json_type"}}`, true},
		{`[[1, 2], [3, 4]]`, false},
		{`{"dtype": "float32", "shape": [2], "data": [1, 2]}`, false},
		{`{"array": "aGVsbG8="}`, false},
		{"\x93NUMPY", false},
	} {
		if got := SniffPolygraphy([]byte(c.s)); got != c.want {
			t.Errorf("SniffPolygraphy(%.40q) = %v", c.s, got)
		}
	}
	// Markers past the first 4 KiB, behind a long runner or output name
	// (escapes in it), and a UTF-8 byte order mark before the file.
	good := pgNpy(pgF4, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	long := strings.Repeat(`n\"`, 2000)
	runner := `{"lst": [["` + long + `", [{"outputs": {"o": ` + pgArrayText(good) + `}, "runtime": 0.0, "runner_name": "r", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"}`
	output := string(pgFile(`"` + long + `": ` + pgArrayText(good)))
	inputs := "[\n  {\n    \"" + long + "\": " + pgArrayText(good) + "}]"
	for name, b := range map[string]string{"long runner": runner, "long output": output, "long input": inputs,
		"bom": "\xef\xbb\xbf" + string(pgFile(`"o": `+pgArrayText(good))), "bom and long name": "\xef\xbb\xbf" + output} {
		if strings.HasPrefix(name, "long") && (strings.Contains(b[:4096], "polygraphy_class") || strings.Contains(b[:4096], `"array"`)) {
			t.Fatalf("%s: a marker in the first 4 KiB", name)
		}
		if !SniffPolygraphy([]byte(b)) || format.Sniff([]byte(b)) != KindPolygraphy || format.Detect("x.json", []byte(b)) != KindPolygraphy {
			t.Errorf("%s: not detected as Polygraphy", name)
		}
	}
	for _, s := range []string{`{"lst": 1}`, `[{"` + long + `": {"array": "aGVsbG8="}}]`, `[{"` + long + `": [1]}]`, `{"dtype": "uint8", "shape": [1], "data": [1]}`} {
		if SniffPolygraphy([]byte(s)) {
			t.Errorf("SniffPolygraphy(%.40q): true", s)
		}
	}
	if format.Sniff([]byte(`{"lst": [], "polygraphy_class": "RunResults"}`)) != KindPolygraphy || format.Sniff([]byte(`[[1]]`)) != jsonfmt.KindJSON {
		t.Error("Sniff order: polygraphy must win over JSON, and only on Polygraphy files")
	}
}

// FuzzPolygraphy: Open never panics; what it accepts decodes (deferred
// and eagerly alike) to exactly each header's data, and written back with
// its Meta reads back the same.
func FuzzPolygraphy(f *testing.F) {
	good := pgNpy(pgF4, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(pgFile(`"out0": ` + pgArrayText(good)))
	f.Add([]byte(`[{"x": ` + pgArrayText(good) + `}, {"x": ` + pgArrayText(good) + `}]`))
	f.Add(pgFile(`"a": {"values": ` + pgArrayText(good) + `, "polygraphy_class": "LazyNumpyArray"}, "b": ` + pgArrayText(pgNpy("{'descr': '<u2', 'fortran_order': True, 'shape': (2, 2), }\n", make([]byte, 8)))))
	f.Add([]byte(`{"lst": [["a", []], ["b", []]], "polygraphy_class": "RunResults"}`))
	// A byte order mark, and names of 4 KiB or more before the first array.
	f.Add(append([]byte("\xef\xbb\xbf"), pgFile(`"out0": `+pgArrayText(good))...))
	f.Add(pgFile(`"` + strings.Repeat("o", 4200) + `": ` + pgArrayText(good)))
	f.Add([]byte(`[{"` + strings.Repeat(`i\"`, 1500) + `": ` + pgArrayText(good) + `}]`))
	if files, _ := filepath.Glob("testdata/*.json"); len(files) > 0 {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		SniffPolygraphy(b) // any bytes: no panic, no read past them
		ar, err := openPolygraphy(b, format.OpenOptions{Deferred: true})
		eager, eerr := openPolygraphy(b, format.OpenOptions{Threads: 2})
		if err != nil {
			if eerr == nil {
				t.Fatalf("deferred Open: %v; eager accepted", err)
			}
			return
		}
		datas := make([][]byte, len(ar.Members))
		for i, m := range ar.Members {
			data, err := m.Lazy.InflateData()
			if err != nil {
				if eerr == nil {
					t.Fatalf("member %q: %v; eager accepted", m.Name, err)
				}
				return
			}
			if int64(len(data)) != m.Header.DataBytes() {
				t.Fatalf("member %q: %d bytes, header says %d", m.Name, len(data), m.Header.DataBytes())
			}
			if ra, ok := m.Lazy.(io.ReaderAt); ok && len(data) > 0 {
				p := make([]byte, len(data)-len(data)/3)
				if n, err := ra.ReadAt(p, int64(len(data)/3)); n != len(p) || err != nil || !bytes.Equal(p, data[len(data)/3:]) {
					t.Fatalf("member %q: ReadAt: %d, %v", m.Name, n, err)
				}
			}
			datas[i] = data
		}
		if eerr != nil {
			t.Fatalf("eager Open: %v; deferred decoded", eerr)
		}
		for i := range datas {
			if !bytes.Equal(eager.Members[i].Data, datas[i]) {
				t.Fatalf("member %q: eager and deferred differ", ar.Members[i].Name)
			}
		}
		for i, m := range ar.Members {
			if m.Header.Fortran { // written back in C order: not comparable
				return
			}
			ar.Members[i].Lazy = bytesLazy(datas[i])
		}
		back, err := openPolygraphy(pgWriteBack(t, ar), format.OpenOptions{})
		if err != nil {
			t.Fatalf("written back: %v", err)
		}
		if len(back.Members) != len(ar.Members) {
			t.Fatalf("written back: %d members, want %d", len(back.Members), len(ar.Members))
		}
		for i, m := range back.Members {
			if m.Name != ar.Members[i].Name || !bytes.Equal(m.Data, datas[i]) || m.Header.DType.Descr() != ar.Members[i].Header.DType.Descr() {
				t.Fatalf("written back: member %d %q differs", i, m.Name)
			}
		}
	})
}

// TestPolygraphyFile: with OpenOptions.File the strings are scanned and
// decoded through reads by position (windows of 1 MiB, escapes across
// their edges) and give what the mapping gives.
func TestPolygraphyFile(t *testing.T) {
	data := make([]byte, 3<<20/2)
	for i := range data {
		data[i] = byte(i*131 + i>>11)
	}
	h := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }\n", len(data))
	text := base64.StdEncoding.EncodeToString(pgNpy(h, data))
	for _, esc := range []bool{false, true} {
		s := text
		if esc {
			s = strings.ReplaceAll(text, "/", `\/`)
		}
		b := pgFile(`"x": {"array": "` + s + `", "polygraphy_class": "ndarray"}, "y": ` + pgArrayText(pgNpy(pgF4, make([]byte, 8))))
		for _, deferred := range []bool{true, false} {
			ar, err := openPolygraphy(b, format.OpenOptions{File: bytes.NewReader(b), Deferred: deferred})
			if err != nil {
				t.Fatalf("escaped %v: %v", esc, err)
			}
			got := ar.Members[0].Data
			if deferred {
				var buf bytes.Buffer
				if err := ar.Members[0].Lazy.Inflate(&buf); err != nil {
					t.Fatal(err)
				}
				got = buf.Bytes()
			}
			if len(ar.Members) != 2 || !bytes.Equal(got, data) {
				t.Fatalf("escaped %v deferred %v: %d members, data differ", esc, deferred, len(ar.Members))
			}
		}
		// A file shorter than the mapping says: an error, not a panic.
		if _, err := openPolygraphy(b, format.OpenOptions{File: bytes.NewReader(b[:len(b)/2]), Deferred: true}); err == nil || !strings.Contains(err.Error(), "reading the file") {
			t.Errorf("truncated file: %v", err)
		}
	}
}

// TestPolygraphyBase64: our tables encode as encoding/base64 does, and
// decode what it encodes, at every length and alignment.
func TestPolygraphyBase64(t *testing.T) {
	src := make([]byte, 300)
	for i := range src {
		src[i] = byte(i*167 + i>>3)
	}
	a := &pgArray{name: "x"}
	for n := 0; n <= len(src); n++ {
		for off := 0; off < 3 && off <= n; off++ {
			in := src[off:n]
			want := base64.StdEncoding.EncodeToString(in)
			body := len(in) / 3 * 3
			got := make([]byte, body/4*3+body/3*4)
			pgEncode(got[:body/3*4], in[:body])
			if string(got[:body/3*4]) != want[:body/3*4] {
				t.Fatalf("pgEncode of %d bytes: %q, want %q", len(in), got[:body/3*4], want[:body/3*4])
			}
			dec := make([]byte, len(want)/4*3)
			m, err := a.decode(dec, []byte(want), 0, true)
			if err != nil || !bytes.Equal(dec[:m], in) {
				t.Fatalf("decode of %d bytes: %v", len(in), err)
			}
		}
	}
}

// TestPolygraphyReadAt: a member's data read at any offset and length
// (through the file or the mapping) are those Inflate gives; text with
// escapes gives a Lazy without ReadAt; invalid text is an error there too.
func TestPolygraphyReadAt(t *testing.T) {
	data := make([]byte, 200_003)
	for i := range data {
		data[i] = byte(i*29 + i>>7)
	}
	for pad := 0; pad < 3; pad++ {
		h := fmt.Sprintf("{'descr': '|u1', 'fortran_order': False, 'shape': (%d,), }%s\n", len(data), strings.Repeat(" ", pad))
		b := pgFile(`"x": ` + pgArrayText(pgNpy(h, data)))
		for _, file := range []io.ReaderAt{nil, bytes.NewReader(b)} {
			ar, err := openPolygraphy(b, format.OpenOptions{File: file, Deferred: true})
			if err != nil {
				t.Fatal(err)
			}
			ra, ok := ar.Members[0].Lazy.(io.ReaderAt)
			if !ok {
				t.Fatal("no ReadAt")
			}
			for _, r := range [][2]int{{0, 1}, {0, len(data)}, {1, 2}, {2, 100_000}, {99_999, 3}, {len(data) - 1, 1}, {len(data) - 5, 5}, {5, 70_000}, {len(data) - 70_001, 70_001}} {
				p := make([]byte, r[1])
				n, err := ra.ReadAt(p, int64(r[0]))
				if n != r[1] || err != nil || !bytes.Equal(p, data[r[0]:r[0]+r[1]]) {
					t.Fatalf("pad %d ReadAt(%d, %d): %d, %v", pad, r[0], r[1], n, err)
				}
			}
			p := make([]byte, 10)
			if n, err := ra.ReadAt(p, int64(len(data)-4)); n != 4 || err != io.EOF || !bytes.Equal(p[:4], data[len(data)-4:]) {
				t.Fatalf("ReadAt past the end: %d, %v", n, err)
			}
		}
	}
	esc := pgOpen(t, pgFile(`"x": {"array": "`+strings.ReplaceAll(base64.StdEncoding.EncodeToString(pgNpy(pgF4, []byte{0xff, 0xff, 0xff, 0xfc, 1, 2, 3, 4})), "/", `\/`)+`", "polygraphy_class": "ndarray"}`), true)
	if _, ok := esc.Members[0].Lazy.(io.ReaderAt); ok {
		t.Error("escaped text has ReadAt")
	}
	goodText := base64.StdEncoding.EncodeToString(pgNpy(pgF4, make([]byte, 8)))
	bad := pgOpen(t, pgFile(`"out0": {"array": "`+goodText[:len(goodText)-8]+`!!!!`+goodText[len(goodText)-4:]+`", "polygraphy_class": "ndarray"}`), true)
	if _, err := bad.Members[0].Lazy.(io.ReaderAt).ReadAt(make([]byte, 8), 0); err == nil || !strings.Contains(err.Error(), `"out0": invalid base64 at character`) {
		t.Errorf("invalid text: %v", err)
	}
}
