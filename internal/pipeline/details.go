package pipeline

import (
	"bytes"
	"encoding/json"

	"github.com/depthspace/depthspace/internal/format"
)

// Details is what an input's format says of it beyond the tensor
// (format.Format.Describe: a DNG's CFA pattern, bit depth, black and
// white levels, ActiveArea, DefaultCrop), as key/value pairs in order.
// info prints them as rows; --json as one object, keys in that order.
type Details [][2]string

// MarshalJSON writes the pairs as a JSON object, in their order.
func (d Details) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, kv := range d {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[0])
		v, _ := json.Marshal(kv[1])
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// details asks t's format to describe its file, if it can (nil when not,
// or when the file cannot be described: its decode already said why).
func details(t *Tensor) Details {
	if d, ok := t.lazy.(format.Described); ok {
		kv, err := d.Details()
		if err != nil {
			return nil
		}
		return kv
	}
	f := format.Lookup(t.Kind)
	if f == nil || f.Describe == nil || t.input == nil {
		return nil
	}
	kv, err := f.Describe(t.input.Data)
	if err != nil {
		return nil
	}
	return kv
}
