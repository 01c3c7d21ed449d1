package polygraphy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// Create writes what Polygraphy's json.dumps(indent=4) writes, each array
// np.save's npy file (version 1.0 preamble, the member's descr, C order)
// in base64, streamed as the member's data come.
//
// With the Meta of a Polygraphy input whose members are the ones written
// (same names, same order), the file has the input's structure: its
// runners, iterations, runtimes, runner names, other keys and output
// order, an input list staying an input list. Without it (converting an
// npz, say) the file is RunResults of one runner "depthspace" with one
// iteration of runtime 0.0 holding every member as an output, each in a
// LazyArray as Polygraphy writes them: what `polygraphy run
// --load-outputs` and depthspace compare read (`polygraphy data to-input`
// turns it into an input list).
func createPolygraphy(w io.Writer, members []format.MemberSpec, meta any) (format.MemberWriter, error) {
	for _, m := range members {
		if !utf8.ValidString(m.Name) {
			// An npz member's name can be any bytes; JSON would write
			// U+FFFD in their place, another name.
			return nil, fmt.Errorf("polygraphy member %q: the name is not UTF-8, and a Polygraphy file (JSON) holds UTF-8 names only (name it with --rename-member)", m.Name)
		}
	}
	m, _ := meta.(*PolygraphyMeta)
	if m != nil && !sameNames(m.Names, members) {
		m = nil
	}
	if m == nil {
		m = defaultPolygraphyMeta(members)
	}
	pw := &pgWriter{w: w, members: members}
	pw.layout(m)
	return pw, nil
}

func sameNames(names []string, members []format.MemberSpec) bool {
	if len(names) != len(members) {
		return false
	}
	for i := range names {
		if names[i] != members[i].Name {
			return false
		}
	}
	return true
}

func defaultPolygraphyMeta(members []format.MemberSpec) *PolygraphyMeta {
	const runner = "depthspace"
	it := PolygraphyIteration{Keys: []PolygraphyKey{
		{Key: "outputs"}, {Key: "runtime", Raw: []byte("0.0")},
		{Key: "runner_name", Raw: []byte(pyJSONString(runner))},
	}}
	m := &PolygraphyMeta{}
	for i, s := range members {
		it.Outputs = append(it.Outputs, PolygraphyOutput{Name: s.Name, Wrapper: "LazyArray"})
		m.Names = append(m.Names, s.Name)
		m.Places = append(m.Places, PolygraphyPlace{0, 0, i})
	}
	m.Runners = []PolygraphyRunner{{Name: runner, Iterations: []PolygraphyIteration{it}}}
	return m
}

// pgWriter writes the JSON text around the arrays (pieces[i] before
// member i, the last after all) and each member's npy file in base64.
type pgWriter struct {
	w       io.Writer
	members []format.MemberSpec
	pieces  [][]byte
	next    int
	left    int64 // data bytes the current member still takes
	open    bool
	enc     pgEncoder
}

// layout prints the structure with a cut where each array's base64 goes.
func (pw *pgWriter) layout(m *PolygraphyMeta) {
	var b bytes.Buffer
	ind := func(level int) {
		b.WriteByte('\n')
		for range level {
			b.WriteString("    ")
		}
	}
	cut := func() {
		pw.pieces = append(pw.pieces, bytes.Clone(b.Bytes()))
		b.Reset()
	}
	// output writes one array (at its key) at level l.
	output := func(o PolygraphyOutput, l int) {
		b.WriteString(pyJSONString(o.Name))
		b.WriteString(": {")
		if o.Wrapper != "" {
			ind(l + 1)
			b.WriteString(`"values": {`)
			l++
		}
		ind(l + 1)
		b.WriteString(`"array": "`)
		cut()
		b.WriteString(`",`)
		ind(l + 1)
		b.WriteString(`"polygraphy_class": "ndarray"`)
		ind(l)
		b.WriteByte('}')
		if o.Wrapper != "" {
			b.WriteByte(',')
			ind(l)
			b.WriteString(`"polygraphy_class": ` + pyJSONString(o.Wrapper))
			ind(l - 1)
			b.WriteByte('}')
		}
	}
	outputs := func(it PolygraphyIteration, l int) {
		if len(it.Outputs) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, o := range it.Outputs {
			if i > 0 {
				b.WriteByte(',')
			}
			ind(l + 1)
			output(o, l+1)
		}
		ind(l)
		b.WriteByte('}')
	}
	if m.Inputs {
		var its []PolygraphyIteration
		if len(m.Runners) > 0 {
			its = m.Runners[0].Iterations
		}
		if len(its) == 0 {
			b.WriteString("[]")
		} else {
			b.WriteByte('[')
			for i, it := range its {
				if i > 0 {
					b.WriteByte(',')
				}
				ind(1)
				outputs(it, 1)
			}
			ind(0)
			b.WriteByte(']')
		}
		cut()
		return
	}
	b.WriteString("{")
	ind(1)
	b.WriteString(`"lst": `)
	if len(m.Runners) == 0 {
		b.WriteString("[]")
	} else {
		b.WriteByte('[')
		for ri, run := range m.Runners {
			if ri > 0 {
				b.WriteByte(',')
			}
			ind(2)
			b.WriteByte('[')
			ind(3)
			b.WriteString(pyJSONString(run.Name))
			b.WriteByte(',')
			ind(3)
			if len(run.Iterations) == 0 {
				b.WriteString("[]")
			} else {
				b.WriteByte('[')
				for ii, it := range run.Iterations {
					if ii > 0 {
						b.WriteByte(',')
					}
					ind(4)
					b.WriteByte('{')
					for _, kv := range it.Keys {
						ind(5)
						b.WriteString(pyJSONString(kv.Key))
						b.WriteString(": ")
						if kv.Raw == nil {
							outputs(it, 5)
						} else {
							b.Write(kv.Raw)
						}
						b.WriteByte(',')
					}
					ind(5)
					b.WriteString(`"polygraphy_class": "IterationResult"`)
					ind(4)
					b.WriteByte('}')
				}
				ind(3)
				b.WriteByte(']')
			}
			ind(2)
			b.WriteByte(']')
		}
		ind(1)
		b.WriteByte(']')
	}
	b.WriteByte(',')
	for _, kv := range m.Extra {
		ind(1)
		b.WriteString(pyJSONString(kv.Key) + ": ")
		b.Write(kv.Raw)
		b.WriteByte(',')
	}
	ind(1)
	b.WriteString(`"polygraphy_class": "RunResults"`)
	ind(0)
	b.WriteByte('}')
	cut()
}

// pyJSONString quotes s as Python's json.dumps does (ensure_ascii):
// everything outside printable ASCII as \uXXXX (surrogate pairs beyond
// the BMP), the usual short escapes, '/' as it is.
func pyJSONString(s string) string {
	var b []byte
	b = append(b, '"')
	for _, r := range s { // invalid UTF-8 reads as U+FFFD
		switch r {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			switch {
			case r >= 0x20 && r < 0x7f:
				b = append(b, byte(r))
			case r > 0xffff:
				r1, r2 := utf16.EncodeRune(r)
				b = fmt.Appendf(b, `\u%04x\u%04x`, r1, r2)
			default:
				b = fmt.Appendf(b, `\u%04x`, r)
			}
		}
	}
	return string(append(b, '"'))
}

// Member starts the next member's array: the text before it, then the
// npy preamble in base64; the writer returned takes its data.
func (pw *pgWriter) Member(name string, h format.Header) (io.Writer, error) {
	if err := pw.finish(); err != nil {
		return nil, err
	}
	if pw.next >= len(pw.members) || pw.members[pw.next].Name != name {
		return nil, fmt.Errorf("internal error: polygraphy member %q out of the declared order", name)
	}
	if _, err := pw.w.Write(pw.pieces[pw.next]); err != nil {
		return nil, err
	}
	pw.next++
	pw.open = true
	pw.left = h.DataBytes()
	pw.enc.reset(pw.w)
	c := h
	c.Fortran = false // the data come in C order
	if _, err := pw.enc.Write(npy.EncodeNpy(c)); err != nil {
		return nil, err
	}
	return (*pgData)(pw), nil
}

// finish ends the current member's base64 text.
func (pw *pgWriter) finish() error {
	if !pw.open {
		return nil
	}
	if pw.left != 0 {
		return fmt.Errorf("polygraphy member %q: %d bytes missing", pw.members[pw.next-1].Name, pw.left)
	}
	pw.open = false
	return pw.enc.close()
}

// Close ends the file: the last member, the text after it.
func (pw *pgWriter) Close() error {
	if err := pw.finish(); err != nil {
		return err
	}
	if pw.next != len(pw.members) {
		return errors.New("internal error: polygraphy file left incomplete")
	}
	_, err := pw.w.Write(pw.pieces[len(pw.pieces)-1])
	return err
}

type pgData pgWriter

func (d *pgData) Write(p []byte) (int, error) {
	if int64(len(p)) > d.left {
		return 0, errors.New("internal error: more bytes than the tensor holds")
	}
	n, err := d.enc.Write(p)
	d.left -= int64(n)
	return n, err
}

// pgEncoder encodes to base64 in big blocks (encoding/base64's encoder
// writes 1 KiB at a time): up to 2 bytes carried between writes.
type pgEncoder struct {
	w     io.Writer
	carry [3]byte
	nc    int
	out   []byte
}

const pgEncBlock = 3 << 16 // 192 KiB of bytes, 256 KiB of text

func (e *pgEncoder) reset(w io.Writer) {
	e.w, e.nc = w, 0
	if e.out == nil {
		e.out = make([]byte, pgEncBlock/3*4)
	}
}

func (e *pgEncoder) Write(p []byte) (int, error) {
	n := len(p)
	if e.nc > 0 {
		k := copy(e.carry[e.nc:], p)
		e.nc += k
		p = p[k:]
		if e.nc < 3 {
			return n, nil
		}
		base64.StdEncoding.Encode(e.out, e.carry[:])
		if _, err := e.w.Write(e.out[:4]); err != nil {
			return 0, err
		}
		e.nc = 0
	}
	for len(p) >= 3 {
		k := min(len(p)/3*3, pgEncBlock)
		pgEncode(e.out[:k/3*4], p[:k])
		if _, err := e.w.Write(e.out[:k/3*4]); err != nil {
			return 0, err
		}
		p = p[k:]
	}
	e.nc = copy(e.carry[:], p)
	return n, nil
}

func (e *pgEncoder) close() error {
	if e.nc == 0 {
		return nil
	}
	base64.StdEncoding.Encode(e.out, e.carry[:e.nc])
	_, err := e.w.Write(e.out[:4])
	e.nc = 0
	return err
}
