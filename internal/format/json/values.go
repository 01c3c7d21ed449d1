package json

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
)

// values prints elements as JSON output prints them (SPEC, Formats: the
// shortest float text, "NaN", "Infinity", [re, im], strings), for compare
// (format.Format.Values): it asks the encoder itself, on a 1-d tensor of
// the elements, so that the two can never disagree, and splits its data
// array.
func values(dt format.DType, elems [][]byte) ([]string, error) {
	if len(elems) == 0 {
		return nil, nil
	}
	var data []byte
	for _, e := range elems {
		data = append(data, e...)
	}
	var sb strings.Builder
	if err := EncodeJSON(&sb, dt, []int{len(elems)}, data); err != nil {
		return nil, err
	}
	var obj struct{ Data []json.RawMessage }
	if err := json.Unmarshal([]byte(sb.String()), &obj); err != nil {
		return nil, err
	}
	if len(obj.Data) != len(elems) {
		return nil, fmt.Errorf("internal error: %d values printed for %d elements", len(obj.Data), len(elems))
	}
	out := make([]string, len(elems))
	for i, v := range obj.Data {
		out[i] = string(v)
	}
	return out, nil
}

// metadata says whether a JSON text is metadata rather than a tensor: an
// object naming none of a tensor's keys (dtype, shape, data), with no
// Polygraphy class marker anywhere (a Polygraphy file whose marker is
// beyond what its sniff reads).
func metadata(data []byte) bool {
	if bytes.Contains(data, []byte(`"polygraphy_class"`)) {
		return false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(data, &obj) != nil {
		return false
	}
	for _, k := range []string{"dtype", "shape", "data"} {
		if _, ok := obj[k]; ok {
			return false
		}
	}
	return true
}
