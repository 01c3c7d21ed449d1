package polygraphy

import (
	"fmt"

	"github.com/depthspace/depthspace/internal/format"
)

// Polygraphy's JSON files (NVIDIA TensorRT, tools/Polygraphy:
// polygraphy/json/serde.py and polygraphy/comparator/struct.py), read and
// written as a container of named tensors.
//
// Polygraphy encodes objects with json.dumps(indent=4), each custom class
// as an object whose last key is "polygraphy_class" (before Polygraphy
// 0.30: a key "__polygraphy_encoded_CLASS" with the value
// "polygraphy_serialized_json_type"):
//
//   - an array (np.ndarray) is {"array": base64 of a whole .npy file (np.save,
//     allow_pickle=False), "polygraphy_class": "ndarray"};
//   - LazyArray (formerly LazyNumpyArray, still an alias) is {"values": ARRAY};
//   - IterationResult is {"outputs": {NAME: LazyArray or ARRAY, …},
//     "runtime": float, "runner_name": str};
//   - RunResults (--save-outputs) is {"lst": [[RUNNER, [IterationResult,
//     …]], …]};
//   - an input list (--save-inputs, `polygraphy data to-input`) is a plain
//     list of plain objects {NAME: ARRAY}, one per iteration.
//
// A torch Tensor ({"tensor": base64 of torch.save, "polygraphy_class":
// "Tensor"}) is a pickle: refused by name, never unpickled; so is an npy
// payload of dtype object (ParseNpy). The latin-1 text of an npz that
// Polygraphy 0.29 wrote is read too (polygraphy_latin1.go).
//
// Open parses the JSON structure without decoding the arrays: a scanner
// records each base64 string's span in the (mapped) file, only the first
// bytes of each are decoded for the npy header, and the element data are
// decoded in 64 KiB pieces of text when the member's job asks for them
// (Lazy), or up front on opt.Threads goroutines without opt.Deferred.

// KindPolygraphy is a Polygraphy JSON file: RunResults or an input list.
const KindPolygraphy format.Kind = "polygraphy"

// PolygraphyMeta is what a Polygraphy file holds besides its arrays: the
// structure Create needs to write the file back as it was.
type PolygraphyMeta struct {
	// Inputs says the file is an input list rather than RunResults; its
	// iterations are then those of Runners[0], whose Name is "".
	Inputs  bool
	Runners []PolygraphyRunner
	// Extra are RunResults' keys besides "lst" and its class, in order
	// (Polygraphy writes none).
	Extra []PolygraphyKey
	// Names are the member names in file order, and Places where each
	// member is (same index).
	Names  []string
	Places []PolygraphyPlace
}

// PolygraphyRunner is one runner of a RunResults: its name and its
// iterations in order.
type PolygraphyRunner struct {
	Name       string
	Iterations []PolygraphyIteration
}

// PolygraphyIteration is one IterationResult (or one feed dict of an
// input list): its outputs in order, and its other keys (runtime,
// runner_name, anything else) as JSON text in file order; the key
// "outputs" appears in Keys with a nil Raw to keep its position.
type PolygraphyIteration struct {
	Outputs []PolygraphyOutput
	Keys    []PolygraphyKey
}

// Key returns the raw JSON text of an iteration's key (runtime,
// runner_name), or nil.
func (it *PolygraphyIteration) Key(k string) []byte {
	for _, kv := range it.Keys {
		if kv.Key == k {
			return kv.Raw
		}
	}
	return nil
}

// PolygraphyOutput is one array of an iteration: its name and the class
// that wraps the ndarray ("LazyArray", "LazyNumpyArray", or "" when the
// ndarray is the value itself, as in input lists).
type PolygraphyOutput struct {
	Name    string
	Wrapper string
}

// PolygraphyKey is a key and its value's JSON text.
type PolygraphyKey struct {
	Key string
	Raw []byte
}

// PolygraphyPlace says where a member is: runner, iteration and output
// indices.
type PolygraphyPlace struct{ Runner, Iteration, Output int }

// PolygraphyError is a malformed Polygraphy file: at a byte offset of the
// JSON text, or in one member.
type PolygraphyError struct {
	Member string
	Offset int64 // -1: none
	Msg    string
}

func (e *PolygraphyError) Error() string {
	switch {
	case e.Member != "":
		return fmt.Sprintf("polygraphy member %q: %s", e.Member, e.Msg)
	case e.Offset >= 0:
		return fmt.Sprintf("polygraphy JSON, byte %d: %s", e.Offset, e.Msg)
	}
	return "polygraphy: " + e.Msg
}

func pgErr(member string, format string, a ...any) error {
	return &PolygraphyError{Member: member, Offset: -1, Msg: fmt.Sprintf(format, a...)}
}

// Limits on what a hostile file can make us build: the nesting depth and
// the number of JSON values (Polygraphy needs 8 levels and a handful of
// values per array), and the length of a name.
const (
	pgMaxDepth  = 128
	pgMaxValues = 1 << 20
	pgMaxName   = 1 << 20
	// pgChunk is how much base64 text is decoded at a time (a multiple
	// of 4).
	pgChunk = 64 << 10
)

func init() {
	format.Register(format.Format{Kind: KindPolygraphy, Rank: 9, Noun: "a Polygraphy file",
		Doc:  "Polygraphy run results and input lists (JSON of base64 npy arrays), member by member",
		Exts: []string{".json"}, ByContent: true, Container: true, Sniff: SniffPolygraphy, SniffOrder: 80,
		Open: openPolygraphy, Create: createPolygraphy})
}

// RunNames names a RunResults' runners (format.Runs, for compare of one
// file); an input list has one run.
func (m *PolygraphyMeta) RunNames() []string {
	n := make([]string, len(m.Runners))
	for i, r := range m.Runners {
		n[i] = r.Name
	}
	return n
}

// RunOf says which runner a member belongs to and its name without the
// runner's prefix (which members carry only when there are several).
func (m *PolygraphyMeta) RunOf(member string) (int, string, bool) {
	for i, n := range m.Names {
		if n != member || i >= len(m.Places) {
			continue
		}
		run := m.Places[i].Runner
		if len(m.Runners) > 1 && run < len(m.Runners) {
			if p := m.Runners[run].Name + "/"; len(member) > len(p) && member[:len(p)] == p {
				member = member[len(p):]
			}
			return run, member, true
		}
		return run, member, true
	}
	return 0, "", false
}
