package polygraphy

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// Reading: the file's structure into members, and the format's Open.

// SniffPolygraphy reports whether b starts like a Polygraphy JSON file:
// JSON whose first 4 KiB hold a Polygraphy class marker, or an "array"
// key whose string starts with the base64 of the npy magic (an array of
// any size whose marker comes after it).
//
// A UTF-8 byte order mark before it is skipped (the reader then says
// what is wrong with it), and where the first 4 KiB hold no marker, as
// behind a runner or output name of 4 KiB or more, the file's opening is
// read: RunResults' {"lst": [[ and an input list's [{NAME: {"array": with
// an npy's text, the name skipped whatever its length.
func SniffPolygraphy(b []byte) bool {
	b = bytes.TrimPrefix(b, json.UTF8BOM)
	head := b[:min(len(b), 4096)]
	if !json.SniffJSON(head) {
		return false
	}
	if pgOpening(b) {
		return true
	}
	if bytes.Contains(head, []byte(`"polygraphy_class"`)) || bytes.Contains(head, []byte(`"__polygraphy_encoded_`)) {
		return true
	}
	for rest := head; ; {
		i := bytes.Index(rest, []byte(`"array"`))
		if i < 0 {
			return false
		}
		rest = rest[i+7:]
		t := bytes.TrimLeft(rest, " \t\r\n")
		if len(t) > 0 && t[0] == ':' {
			t = bytes.TrimLeft(t[1:], " \t\r\n")
			if bytes.HasPrefix(t, []byte(`"k05VTVBZ`)) || // base64 of "\x93NUMPY"
				bytes.HasPrefix(t, []byte(`"PK\u0003\u0004`)) || bytes.HasPrefix(t, []byte(`"\u0093NUMPY`)) { // latin-1 (Polygraphy 0.29)
				return true
			}
		}
	}
}

// pgOpening reports whether b opens as a Polygraphy file does: {"lst":
// [[" (RunResults, its first runner's name next) or [{NAME: {"array": and
// the text of an npy file (an input list). Only the opening is read; a
// name is skipped to its closing quote, whatever its length.
func pgOpening(b []byte) bool {
	i := 0
	ws := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	tok := func(t string) bool {
		ws()
		if !bytes.HasPrefix(b[i:], []byte(t)) {
			return false
		}
		i += len(t)
		return true
	}
	str := func() bool { // any string, escapes included
		ws()
		if i >= len(b) || b[i] != '"' {
			return false
		}
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				i++
				return true
			}
		}
		return false
	}
	if tok("{") {
		return tok(`"lst"`) && tok(":") && tok("[") && tok("[") && tok(`"`)
	}
	if !(tok("[") && tok("{") && str() && tok(":") && tok("{") && tok(`"array"`) && tok(":") && tok(`"`)) {
		return false
	}
	for _, p := range []string{"k05VTVBZ", `\u0093NUMPY`, `PK\u0003\u0004`} {
		if bytes.HasPrefix(b[i:], []byte(p)) {
			return true
		}
	}
	return false
}

// pgArray is one member: its base64 text in the file and its npy header.
type pgArray struct {
	name string
	text []byte // the string's content, between the quotes
	// file reads the same bytes by position (OpenOptions.File), the text
	// starting at textOff; nil: the text is read from the mapping.
	file    io.ReaderAt
	textOff int64
	// latin1: the text is the file's bytes as latin-1 characters
	// (Polygraphy 0.29 and older), the data starting at byte start of
	// them (polygraphy_latin1.go).
	latin1 bool
	start  int64
	esc    bool
	npy    npy.Npy
	length int64 // the text's length once unescaped
}

type pgReader struct {
	b       []byte
	file    io.ReaderAt
	meta    *PolygraphyMeta
	arrays  []*pgArray
	seen    map[string]bool
	prefixR bool // names carry the runner
	prefixI bool // names carry the iteration
}

// ReadPolygraphy parses a Polygraphy file's structure and every member's
// npy header; the element data are left encoded (pgArray's Inflate).
func readPolygraphy(b []byte, file io.ReaderAt) (*PolygraphyMeta, []*pgArray, error) {
	p := &pjParser{b: b, file: file}
	if len(b) >= 3 && string(b[:3]) == "\xef\xbb\xbf" {
		return nil, nil, p.errAt(0, "a UTF-8 byte order mark (EF BB BF) before the JSON: Polygraphy, through Python's json, refuses it; remove those 3 bytes")
	}
	top, err := p.value(0)
	if err != nil {
		return nil, nil, err
	}
	p.space()
	if p.i != len(b) {
		return nil, nil, p.errAt(p.i, "text after the JSON value")
	}
	r := &pgReader{b: b, file: file, meta: &PolygraphyMeta{}, seen: map[string]bool{}}
	switch top.kind {
	case '[':
		err = r.inputs(top)
	case '{':
		err = r.runResults(top)
	default:
		err = pgErr("", "the file is a JSON %s, not RunResults or an input list", pjKindName(top.kind))
	}
	if err != nil {
		return nil, nil, err
	}
	return r.meta, r.arrays, nil
}

func pjKindName(k byte) string {
	switch k {
	case '{':
		return "object"
	case '[':
		return "list"
	case '"':
		return "string"
	}
	return "number or literal"
}

func (r *pgReader) inputs(top *pjValue) error {
	r.meta.Inputs = true
	run := PolygraphyRunner{}
	for i, feed := range top.elems {
		if feed.kind != '{' {
			return pgErr("", "input list item %d is a JSON %s, not an object of arrays", i, pjKindName(feed.kind))
		}
		if c, err := feed.class(r.b); err != nil || c != "" {
			if err != nil {
				return err
			}
			return pgErr("", "input list item %d is a %s, not an object of arrays", i, c)
		}
		it := PolygraphyIteration{Keys: []PolygraphyKey{{Key: "outputs"}}}
		for _, name := range feed.keys {
			it.Outputs = append(it.Outputs, PolygraphyOutput{Name: name})
		}
		run.Iterations = append(run.Iterations, it)
	}
	r.meta.Runners = []PolygraphyRunner{run}
	r.prefixI = len(run.Iterations) > 1
	for i, feed := range top.elems {
		for j, v := range feed.elems {
			name := feed.keys[j]
			full := r.memberName("", i, name)
			w, err := r.array(v, full)
			if err != nil {
				return err
			}
			run.Iterations[i].Outputs[j].Wrapper = w
			r.meta.Places = append(r.meta.Places, PolygraphyPlace{0, i, j})
		}
	}
	return nil
}

func (r *pgReader) memberName(runner string, iter int, out string) string {
	name := out
	if r.prefixI {
		name = strconv.Itoa(iter) + "/" + name
	}
	if r.prefixR {
		name = runner + "/" + name
	}
	return name
}

func (r *pgReader) runResults(top *pjValue) error {
	c, err := top.class(r.b)
	if err != nil {
		return err
	}
	switch c {
	case "RunResults":
	case "":
		return pgErr("", "the JSON object has no polygraphy_class: not RunResults (an input list is a JSON list)")
	case "Tensor":
		return pgErr("", "the file is a torch Tensor (a pickle, torch.save): refused, never unpickled")
	default:
		return pgErr("", "the file holds a Polygraphy %s, not RunResults or an input list", c)
	}
	lst := top.get("lst")
	if lst == nil {
		return pgErr("", "RunResults has no \"lst\"")
	}
	if lst.kind != '[' {
		return pgErr("", "RunResults' \"lst\" is a JSON %s, not a list", pjKindName(lst.kind))
	}
	for i, k := range top.keys {
		if k != "lst" && !isMarkerKey(k) {
			r.meta.Extra = append(r.meta.Extra, PolygraphyKey{Key: k, Raw: bytes.Clone(r.b[top.elems[i].off:top.elems[i].end])})
		}
	}
	// First the structure (runner names, iteration counts), to know the
	// member names' prefixes; then the arrays.
	names := map[string]bool{}
	var iters [][]*pjValue
	for i, e := range lst.elems {
		if e.kind != '[' || len(e.elems) != 2 {
			return pgErr("", "RunResults' lst item %d is not a [runner name, iterations] pair", i)
		}
		name, err := pjString(r.b, e.elems[0])
		if err != nil {
			return pgErr("", "RunResults' lst item %d: the runner name is not a string", i)
		}
		if names[name] {
			return pgErr("", "runner %q appears twice", name)
		}
		names[name] = true
		if e.elems[1].kind != '[' {
			return pgErr("", "runner %q: the iterations are a JSON %s, not a list", name, pjKindName(e.elems[1].kind))
		}
		r.meta.Runners = append(r.meta.Runners, PolygraphyRunner{Name: name})
		iters = append(iters, e.elems[1].elems)
		if len(e.elems[1].elems) > 1 {
			r.prefixI = true
		}
	}
	r.prefixR = len(lst.elems) > 1
	for ri, its := range iters {
		run := &r.meta.Runners[ri]
		for ii, it := range its {
			where := fmt.Sprintf("runner %q iteration %d", run.Name, ii)
			c, err := it.class(r.b)
			if err != nil {
				return err
			}
			if c != "IterationResult" {
				if c == "" {
					return pgErr("", "%s is not an IterationResult", where)
				}
				return pgErr("", "%s is a %s, not an IterationResult", where, c)
			}
			var iter PolygraphyIteration
			var outs *pjValue
			for ki, k := range it.keys {
				switch {
				case isMarkerKey(k):
				case k == "outputs":
					outs = it.elems[ki]
					iter.Keys = append(iter.Keys, PolygraphyKey{Key: k})
				default:
					v := it.elems[ki]
					iter.Keys = append(iter.Keys, PolygraphyKey{Key: k, Raw: bytes.Clone(r.b[v.off:v.end])})
				}
			}
			for _, k := range []string{"outputs", "runtime", "runner_name"} {
				if it.get(k) == nil {
					return pgErr("", "%s has no %q", where, k)
				}
			}
			if outs.kind != '{' {
				return pgErr("", "%s: outputs are a JSON %s, not an object", where, pjKindName(outs.kind))
			}
			if c, err := outs.class(r.b); err != nil || c != "" {
				if err != nil {
					return err
				}
				return pgErr("", "%s: outputs are a %s, not an object of arrays", where, c)
			}
			for oi, name := range outs.keys {
				full := r.memberName(run.Name, ii, name)
				w, err := r.array(outs.elems[oi], full)
				if err != nil {
					return err
				}
				iter.Outputs = append(iter.Outputs, PolygraphyOutput{Name: name, Wrapper: w})
				r.meta.Places = append(r.meta.Places, PolygraphyPlace{ri, ii, oi})
			}
			run.Iterations = append(run.Iterations, iter)
		}
	}
	return nil
}

// array reads one output: an ndarray, or a LazyArray holding one; it
// returns the wrapper's class.
func (r *pgReader) array(v *pjValue, name string) (string, error) {
	if r.seen[name] {
		return "", pgErr(name, "two members have this name")
	}
	r.seen[name] = true
	c, err := v.class(r.b)
	if err != nil {
		return "", pgErr(name, "%v", err)
	}
	wrapper := ""
	if c == "LazyArray" || c == "LazyNumpyArray" {
		wrapper = c
		if v = v.get("values"); v == nil {
			return "", pgErr(name, "%s has no \"values\"", c)
		}
		if c, err = v.class(r.b); err != nil {
			return "", pgErr(name, "%v", err)
		}
	}
	switch c {
	case "ndarray":
	case "Tensor":
		return "", pgErr(name, "is a torch Tensor (a pickle, torch.save): refused, never unpickled; save it as a numpy array")
	case "":
		return "", pgErr(name, "is a JSON %s, not a Polygraphy array (no polygraphy_class)", pjKindName(v.kind))
	default:
		return "", pgErr(name, "is a Polygraphy %s, not an array", c)
	}
	s := v.get("array")
	if s == nil {
		return "", pgErr(name, "the ndarray has no \"array\"")
	}
	if s.kind != '"' {
		return "", pgErr(name, "the ndarray's \"array\" is a JSON %s, not a string", pjKindName(s.kind))
	}
	a := &pgArray{name: name, text: r.b[s.off+1 : s.end-1], esc: s.esc, file: r.file, textOff: int64(s.off + 1)}
	if err := a.open(); err != nil {
		return "", err
	}
	r.meta.Names = append(r.meta.Names, name)
	r.arrays = append(r.arrays, a)
	return wrapper, nil
}

// openPolygraphy is the format's Open.
func openPolygraphy(b []byte, opt format.OpenOptions) (*format.Archive, error) {
	meta, arrays, err := readPolygraphy(b, opt.File)
	if err != nil {
		return nil, err
	}
	a := &format.Archive{Meta: meta, Members: make([]format.Member, len(arrays))}
	for i, arr := range arrays {
		npy := arr.npy
		a.Members[i] = format.Member{Name: arr.name, Header: npy.Header, Stored: &npy, Lazy: arr.lazy()}
	}
	if opt.Deferred {
		return a, nil
	}
	// Decode every member now, up to opt.Threads at a time.
	threads := max(1, opt.Threads)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range min(threads, len(arrays)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, err := arrays[i].InflateData()
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
				a.Members[i].Data, a.Members[i].Lazy = data, nil
			}
		}()
	}
	for i := range arrays {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return a, nil
}
