//go:build !linux

package walk

import "os"

// listDir opens the directory p and lists its entries (in no order: read
// sorts them). d stays open for regularSize; it is nil when p could not
// be opened. What could be read of a directory that fails midway is
// listed with the error.
func (w *dirWalk) listDir(p string) (d *os.File, entries []dirEntry, err error) {
	d, err = os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	des, err := d.ReadDir(-1)
	entries = make([]dirEntry, 0, len(des))
	for _, e := range des {
		regular := e.Type().IsRegular()
		if !regular || IsTensorName(e.Name()) {
			entries = append(entries, dirEntry{name: e.Name(), regular: regular})
		}
	}
	return d, entries, err
}
