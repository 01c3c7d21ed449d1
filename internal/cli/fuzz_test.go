package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	npyfmt "github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/raw"
)

// cliCase is what the variant byte of FuzzCLIInput selects: how the input
// file is named and described, the operation, the block, where the result
// goes and in which format.
type cliCase struct {
	input  string   // file name in the temporary directory
	args   []string // the command line, without the input
	out    string   // output file name, or "-" for stdout
	toJSON bool
}

// variantArgs decodes the variant byte:
//
//	bits 0-1  input: in.npy, in.json, in.bin (raw uint8, shape 1,1,2,len/2), in.dat (sniffed)
//	bit  2    space-to-depth or depth-to-space
//	bits 3-4  block 2, 1, 2x1 or 3
//	bit  5    -o out.npy or standard output
//	bit  6    -j 1 or -j 2
//	bit  7    --to json
func variantArgs(v uint8, size int) cliCase {
	var c cliCase
	op := "s2d"
	if v&4 != 0 {
		op = "d2s"
	}
	c.args = []string{op, "-b", []string{"2", "1", "2x1", "3"}[v>>3&3], "-j", strconv.Itoa(1 + int(v>>6&1))}
	switch v & 3 {
	case 0:
		c.input = "in.npy"
	case 1:
		c.input = "in.json"
	case 2:
		c.input = "in.bin"
		c.args = append(c.args, "--from", "raw", "--dtype", "uint8", "--shape", "1,1,2,"+strconv.Itoa(size/2))
	case 3:
		c.input = "in.dat"
	}
	c.out = "out.npy"
	if v&32 != 0 {
		c.out = "-"
	}
	if v&128 != 0 {
		c.toJSON = true
		c.args = append(c.args, "--to", "json")
	}
	c.args = append(c.args, "-o", c.out)
	return c
}

var oneErrorLine = regexp.MustCompile(`^depthspace: [^\n]+\n$`)

// FuzzCLIInput feeds arbitrary bytes to the command line as an input file
// (npy-ish and JSON-ish seeds in testdata/fuzz/FuzzCLIInput) and checks the
// promises of SPEC "Behaviour under error": exit status 0 or 2, never a
// panic (run recovers one and prints "internal error": that is a failure
// here too), exactly one line on stderr for an error, the input unchanged,
// no output file after a failure and no temporary file left behind.
func FuzzCLIInput(f *testing.F) {
	dml := `[[[[0, 18, 1, 19, 2, 20], [36, 54, 37, 55, 38, 56], [3, 21, 4, 22, 5, 23], [39, 57, 40, 58, 41, 59]],
 [[9, 27, 10, 28, 11, 29], [45, 63, 46, 64, 47, 65], [12, 30, 13, 31, 14, 32], [48, 66, 49, 67, 50, 68]]]]`
	u4, _ := format.ParseDescr("<u4")
	npy := append(npyfmt.EncodeNpy(format.Header{DType: u4, Shape: []int{1, 2, 4, 6}}), make([]byte, 4*48)...)
	for _, v := range []uint8{0, 4, 8, 32, 64 + 16, 128} {
		f.Add(npy, v)
	}
	for _, v := range []uint8{1, 3, 1 + 4, 1 + 32 + 128} {
		f.Add([]byte(dml), v)
	}
	f.Add([]byte(`{"dtype": "uint8", "shape": [1, 1, 2, 2], "data": [[[[1, 2], [3, 4]]]]}`), uint8(1))
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07"), uint8(2))
	f.Add([]byte(""), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, variant uint8) {
		dir := t.TempDir()
		c := variantArgs(variant, len(data))
		in := filepath.Join(dir, c.input)
		if err := os.WriteFile(in, data, 0o644); err != nil {
			t.Fatal(err)
		}
		args := append(c.args, in)
		if c.out != "-" {
			for i, a := range args {
				if a == c.out {
					args[i] = filepath.Join(dir, c.out)
				}
			}
		}
		var stdout, stderr bytes.Buffer
		code := run(args, bytes.NewReader(nil), &stdout, &stderr)

		msg := stderr.String()
		if strings.Contains(msg, "internal error") || strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic") {
			t.Fatalf("%v: a panic: %s", args, msg)
		}
		switch code {
		case 0:
			if msg != "" {
				t.Errorf("%v: success with a message: %q", args, msg)
			}
			checkResult(t, c, dir, stdout.Bytes())
		case 2:
			if !oneErrorLine.MatchString(msg) {
				t.Errorf("%v: stderr is not one 'depthspace: ...' line: %q", args, msg)
			}
			if _, err := os.Lstat(filepath.Join(dir, "out.npy")); err == nil {
				t.Errorf("%v: failed (%q) but left an output file", args, msg)
			}
		default:
			t.Fatalf("%v: exit status %d (want 0 or 2): %q", args, code, msg)
		}
		if got, err := os.ReadFile(in); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%v: the input was modified (%v)", args, err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != c.input && e.Name() != "out.npy" {
				t.Errorf("%v: left behind %s", args, e.Name())
			}
		}
	})
}

// checkResult checks that a successful run wrote one complete tensor.
func checkResult(t *testing.T, c cliCase, dir string, stdout []byte) {
	t.Helper()
	out := stdout
	if c.out != "-" {
		var err error
		if out, err = os.ReadFile(filepath.Join(dir, c.out)); err != nil {
			t.Fatalf("success but no output: %v", err)
		}
		if len(stdout) != 0 {
			t.Errorf("success with -o FILE and %d bytes on stdout", len(stdout))
		}
	}
	inputKind := map[string]format.Kind{"in.npy": npyfmt.KindNpy, "in.json": json.KindJSON, "in.bin": raw.KindRaw}[c.input]
	switch {
	case c.toJSON, c.out == "-" && inputKind == json.KindJSON:
		if _, _, err := json.DecodeJSON(out, nil); err != nil {
			t.Fatalf("the JSON written does not read back: %v\n%s", err, out)
		}
	case c.out != "-" || inputKind == npyfmt.KindNpy:
		n, err := npyfmt.ParseNpy(out)
		if err != nil {
			t.Fatalf("the npy written does not read back: %v", err)
		}
		if int64(len(out))-n.DataOffset != n.DataBytes() {
			t.Fatalf("npy output of %d bytes for %d data bytes at offset %d", len(out), n.DataBytes(), n.DataOffset)
		}
	}
}

// Found while writing FuzzCLIInput: every call of run started
// fileio.HandleSignals, which registered a new signal channel and parked a
// new goroutine that never ended, so a process calling run repeatedly (a
// fuzzer, a test, a batch driver) grew by a goroutine (about 2.4 KiB) per
// call.
func TestRunDoesNotLeakGoroutines(t *testing.T) {
	run([]string{"--version"}, bytes.NewReader(nil), io.Discard, io.Discard) // the first may start the handler
	before := runtime.NumGoroutine()
	for i := 0; i < 100; i++ {
		run([]string{"--version"}, bytes.NewReader(nil), io.Discard, io.Discard)
	}
	if after := runtime.NumGoroutine(); after > before+10 {
		t.Errorf("100 calls of run: %d goroutines before, %d after", before, after)
	}
}

// A header may claim any size; nothing is allocated for the claim before
// it is checked against the file. Each input here claims 4 GiB or more in
// a few bytes and must be refused having allocated little.
func TestHostileClaimsAllocateLittle(t *testing.T) {
	dir := t.TempDir()
	f4, _ := format.ParseDescr("<f4")
	claim := npyfmt.EncodeNpy(format.Header{DType: f4, Shape: []int{1, 1, 65536, 16384}})
	files := map[string][]byte{
		"claim.npy":  append(claim, make([]byte, 16)...),
		"hlen.npy":   []byte("\x93NUMPY\x02\x00\xff\xff\x0f\x00{"),
		"raw.bin":    make([]byte, 16),
		"shape.json": []byte(`{"dtype": "float32", "shape": [1, 1, 65536, 16384], "data": [1, 2, 3]}`),
		"wide.json":  []byte(`{"dtype": "float64", "shape": [1000000000000], "data": [1, 2, 3]}`),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := [][]string{
		{"s2d", "-b", "2", "claim.npy"},
		{"s2d", "-b", "2", "hlen.npy"},
		{"s2d", "-b", "2", "--from", "raw", "--dtype", "float32", "--shape", "1,1,65536,16384", "raw.bin"},
		{"s2d", "-b", "2", "shape.json"},
		{"s2d", "-b", "2", "wide.json"},
	}
	for _, args := range cases {
		args[len(args)-1] = filepath.Join(dir, args[len(args)-1])
		var stderr bytes.Buffer
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		code := run(append(args, "-o", filepath.Join(dir, "out.npy")), bytes.NewReader(nil), io.Discard, &stderr)
		runtime.ReadMemStats(&after)
		if code != 2 || !oneErrorLine.MatchString(stderr.String()) {
			t.Errorf("%v: status %d, stderr %q", args, code, stderr.String())
		}
		n := after.TotalAlloc - before.TotalAlloc
		if n > 8<<20 {
			t.Errorf("%v: allocated %d bytes for a refused claim", args, n)
		}
		t.Logf("%s: %d bytes allocated: %s", filepath.Base(args[len(args)-1]), n, strings.TrimSpace(stderr.String()))
	}
}

// cliCommand is one command line of FuzzCLICommands; IN stands for the
// input (a file, or - for standard input) and DIR for the working
// directory.
type cliCommand struct {
	args  []string
	codes string // allowed exit statuses
	out   string // the output file or directory it may create, "" for none
}

var cliCommands = []cliCommand{
	{[]string{"info", "IN"}, "02", ""},
	{[]string{"info", "--json", "IN"}, "02", ""},
	{[]string{"info", "-b", "2", "IN"}, "02", ""},
	{[]string{"convert", "IN", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"convert", "IN", "DIR/out.json"}, "02", "out.json"},
	{[]string{"convert", "--to", "raw", "IN", "DIR/out.bin"}, "02", "out.bin"},
	{[]string{"convert", "IN", "DIR/out.npz"}, "02", "out.npz"},
	{[]string{"convert", "IN", "DIR/out.pb"}, "02", "out.pb"},
	{[]string{"compare", "IN", "DIR/in.copy"}, "02", ""}, // a tensor equals itself: never 1
	{[]string{"compare", "IN", "DIR/good.npy"}, "012", ""},
	{[]string{"compare", "--json", "--rtol", "1e-3", "IN", "DIR/good.json"}, "012", ""},
	{[]string{"s2d", "-b", "2", "--out-dir", "DIR/outdir", "IN"}, "02", "outdir"},
	{[]string{"d2s", "-b", "1", "--json", "--out-dir", "DIR/outdir", "IN"}, "02", "outdir"},
	{[]string{"reorder", "--from-order", "dcr", "--to-order", "crd", "-b", "2", "IN", "-o", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"reorder", "--from-layout", "nchw", "--to-layout", "nhwc", "IN", "-o", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"s2d", "-b", "1", "IN", "-o", "DIR/out.npz"}, "02", "out.npz"},
	// Block orders, layouts, crop/pad, and the formats after npy, raw and JSON.
	{[]string{"s2d", "-b", "2", "--layout", "hw", "--block-order", "bggr", "--pad", "reflect", "IN", "-o", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"s2d", "-b", "2", "--block-order", "0,1,3,2", "--crop", "IN", "-o", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"d2s", "-b", "2", "--layout", "hwc", "--block-order", "col-major", "--crop-to", "3,3", "IN", "-o", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"convert", "IN", "DIR/out.safetensors"}, "02", "out.safetensors"},
	{[]string{"convert", "IN", "DIR/out.png"}, "02", "out.png"},
	{[]string{"s2d", "-b", "2", "--member", "*", "IN", "-o", "DIR/out.safetensors"}, "02", "out.safetensors"},
	{[]string{"s2d", "-b", "2", "--from", "tar", "IN", "-o", "DIR/out.tar"}, "02", "out.tar"},
	{[]string{"compare", "--check-error-stat", "median", "--atol", "1e-3", "IN", "DIR/in.copy"}, "02", ""},
	{[]string{"compare", "--check-error-stat", "quantile", "--rtol", "x:1", "IN", "DIR/good.npy"}, "012", ""},
	{[]string{"compare", "--diff-image", "DIR/d.png", "IN", "DIR/good.npy"}, "012", "d.png"},
	{[]string{"reorder", "--from-block-order", "bggr", "--to-block-order", "rggb", "-b", "2", "--from-layout", "hwc", "--to-layout", "hwc", "IN", "-o", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"info", "--json", "IN"}, "02", ""},
	{[]string{"s2d", "-b", "1", "IN", "-o", "DIR/out.tar"}, "02", "out.tar"},
	{[]string{"convert", "--member", "a*", "IN", "DIR/out.npy"}, "02", "out.npy"},
	{[]string{"explain", "s2d", "-b", "2", "--layout", "hw", "--block-order", "gbrg", "--shape", "4,4"}, "0", ""},
	{[]string{"compare", "DIR", "DIR"}, "02", ""},
}

// FuzzCLICommands is FuzzCLIInput for the other commands (info, convert,
// compare, reorder, and s2d/d2s as a batch with --out-dir) and the other
// input formats (npz, ONNX TensorProto). cmd selects:
//
//	bits 0-2  input: in.npy, in.json, in.bin (raw uint8 1,1,2,len/2), in.dat (sniffed),
//	          in.npz, in.pb, in.npy read --from json, in.json read --dtype uint8
//	bits 3-6  the command line (cliCommands)
//	bit  7    the input comes on standard input (-)
//
// The promises: an allowed exit status (compare: 0, 1 or 2; a tensor
// compared with itself: never 1; others 0 or 2), never a panic or an
// "internal error", every line of an error report a "depthspace: ..." line,
// no output after a failure, no temporary file, the input unchanged.
func FuzzCLICommands(f *testing.F) {
	u4, _ := format.ParseDescr("<u4")
	npy := append(npyfmt.EncodeNpy(format.Header{DType: u4, Shape: []int{1, 2, 4, 6}}), make([]byte, 4*48)...)
	for c := 0; c < len(cliCommands); c++ {
		f.Add(npy, uint8(c<<3))
		f.Add([]byte(`[[[[1, 2], [3, 4]]]]`), uint8(c<<3|1))
	}
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07"), uint8(2))
	f.Add([]byte(""), uint8(3|128))
	f.Fuzz(func(t *testing.T, data []byte, cmd uint8) {
		dir := t.TempDir()
		names := []string{"in.npy", "in.json", "in.bin", "in.dat", "in.npz", "in.pb", "in.npy", "in.json",
			"in.safetensors", "in.png", "in.tar", "in.dat", "in.npy", "in.safetensors", "in.png", "in.tar"}
		// The length's second bit chooses the second half of the inputs
		// and of the commands (there are only 8 bits of cmd).
		half := len(data) >> 1 & 1
		name := names[int(cmd&7)+8*half]
		var extra []string
		switch int(cmd&7) + 8*half {
		case 2:
			extra = []string{"--from", "raw", "--dtype", "uint8", "--shape", "1,1,2," + strconv.Itoa(len(data)/2)}
		case 6:
			extra = []string{"--from", "json"}
		case 7:
			extra = []string{"--dtype", "uint8"}
		}
		c := cliCommands[(int(cmd>>3&15)+16*half)%len(cliCommands)]
		in := filepath.Join(dir, name)
		files := map[string][]byte{name: data, "in.copy": data}
		good := append(npyfmt.EncodeNpy(format.Header{DType: u4, Shape: []int{1, 1, 2, 2}}), make([]byte, 16)...)
		files["good.npy"] = good
		files["good.json"] = []byte(`{"dtype": "uint32", "shape": [1, 1, 2, 2], "data": [[[[0, 0], [0, 0]]]]}`)
		if int(cmd&7)+8*half == 2 {
			files["in.copy"] = nil // compare needs the description too; use the same file
		}
		for n, b := range files {
			if b == nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		args := []string{}
		for _, a := range c.args {
			switch {
			case a == "IN" && cmd&128 != 0:
				args = append(args, "-")
			case a == "IN":
				args = append(args, in)
			case a == "DIR/in.copy" && int(cmd&7)+8*half == 2:
				args = append(args, in)
			default:
				args = append(args, strings.Replace(a, "DIR", dir, 1))
			}
		}
		args = append(args, extra...)
		var stdout, stderr bytes.Buffer
		code := run(args, bytes.NewReader(data), &stdout, &stderr)

		msg := stderr.String()
		if strings.Contains(msg, "internal error") || strings.Contains(msg, "goroutine ") || strings.Contains(msg, "panic") {
			t.Fatalf("%v: %s", args, msg)
		}
		if !strings.ContainsRune(c.codes, rune('0'+code)) {
			t.Fatalf("%v: exit status %d, want one of %s: %q", args, code, c.codes, msg)
		}
		if code == 2 {
			for _, line := range strings.SplitAfter(msg, "\n") {
				if line != "" && !oneErrorLine.MatchString(line) {
					t.Errorf("%v: stderr line %q is not a 'depthspace: ...' line", args, line)
				}
			}
			if msg == "" {
				t.Errorf("%v: exit status 2 and nothing on stderr", args)
			}
			if c.out != "" {
				filepath.WalkDir(filepath.Join(dir, c.out), func(p string, d os.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						t.Errorf("%v: failed (%q) but left %s", args, msg, p)
					}
					return nil
				})
			}
		}
		for n, b := range files {
			if b == nil {
				continue
			}
			if got, err := os.ReadFile(filepath.Join(dir, n)); err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%v: %s was modified (%v)", args, n, err)
			}
		}
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.Contains(d.Name(), ".depthspace-") {
				t.Errorf("%v: left behind %s", args, p)
			}
			return nil
		})
	})
}

// Found by FuzzCLICommands' seeds. SPEC: "npz: ... every command works
// member by member and an output keeps the member names". `convert in.npy
// out.npz` printed "internal error: npz output goes through the members
// path" and exited 2.
func TestConvertToNpz(t *testing.T) {
	dir := t.TempDir()
	u4, _ := format.ParseDescr("<u4")
	in := filepath.Join(dir, "in.npy")
	if err := os.WriteFile(in, append(npyfmt.EncodeNpy(format.Header{DType: u4, Shape: []int{1, 1, 2, 2}}), make([]byte, 16)...), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	code := run([]string{"convert", in, filepath.Join(dir, "out.npz")}, bytes.NewReader(nil), io.Discard, &stderr)
	if code != 0 || strings.Contains(stderr.String(), "internal error") {
		t.Errorf("convert in.npy out.npz: status %d, %s", code, stderr.String())
	}
}
