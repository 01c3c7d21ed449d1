package batch

import (
	"path"
	"strings"
)

// takenNames are the output names taken in one directory of the batch's
// outputs that a later input could still take, and by which inputs.
//
// Inputs come in byte-wise order of their relative paths. Every input
// whose output is the name N has a relative path that starts with N
// without its extension, D (OutputName keeps the path, or replaces or
// appends one single-dot extension): x.npy and x.json to x.npy (D "x"),
// frames.dat and frames.dat.npy to frames.dat.npy (D "frames.dat"). The
// paths that start with D come one after another in that order, so once
// an input's path does not start with D, no later one will, and N is
// forgotten. What is kept is a few names (those whose D starts the
// current path), however many files the directory or prefix holds: a
// listing of 10^6 keys in one prefix no longer keeps 10^6 names.
type takenNames []takenName

type takenName struct {
	stem, name, input string
}

// take records that input (at relative path rel) writes name: false, or
// true with the input that took name already.
func (t *takenNames) take(name, rel, input string) (other string, dup bool) {
	kept := (*t)[:0]
	for _, e := range *t {
		if strings.HasPrefix(rel, e.stem) {
			kept = append(kept, e)
		}
	}
	clear((*t)[len(kept):])
	*t = kept
	for _, e := range *t {
		if e.name == name {
			return e.input, true
		}
	}
	stem := strings.TrimSuffix(name, path.Ext(name))
	if !strings.HasPrefix(rel, stem) {
		stem = rel[:strings.LastIndexByte(rel, '/')+1] // not expected: kept while the directory is walked
	}
	*t = append(*t, takenName{stem: stem, name: name, input: input})
	return "", false
}
