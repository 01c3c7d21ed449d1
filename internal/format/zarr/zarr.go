// Package zarr reads and writes Zarr stores, v2 and v3: an array is a
// directory (or an s3:// prefix) of chunk objects beside its metadata,
// and a group a directory of arrays and groups. It registers two formats
// (zarr, v2; zarr3, v3) with package format, each with a StoreFormat: an
// array is one tensor, a group a container of its arrays at any depth,
// named by path. Chunks are decoded a slab of rows at a time on several
// goroutines; Blosc is package blosc.
package zarr

import (
	"github.com/depthspace/depthspace/internal/format"
)

// Kinds: v2 and v3. An output named *.zarr is v3 (zarr3 owns the
// extension), unless its input is a v2 store: v2 shares the extension by
// content (ByContent), so a v2 store written to *.zarr stays v2.
const (
	KindV2 format.Kind = "zarr"
	KindV3 format.Kind = "zarr3"
)

func init() {
	format.Register(format.Format{Kind: KindV2, Rank: 11, Container: true, Noun: "a Zarr v2 store",
		Doc:     "a Zarr v2 store (a directory): an array is one tensor, a group its arrays by path",
		Aliases: []string{"zarr2"}, Exts: []string{".zarr"}, ByContent: true,
		Store: &format.StoreFormat{Claims: claimsV2, Markers: []string{".zarray", ".zgroup"}, Open: open, Create: creator(2), Codecs: CodecNames()}})
	format.Register(format.Format{Kind: KindV3, Rank: 12, Container: true, Noun: "a Zarr v3 store",
		Doc:   "a Zarr v3 store (a directory; sharding read and written): an array is one tensor, a group its arrays by path",
		Exts:  []string{".zarr"},
		Store: &format.StoreFormat{Claims: claimsV3, Markers: []string{"zarr.json"}, Open: open, Create: creator(3), Codecs: CodecNames()}})
}

// has says whether the store holds the object key where it can be read:
// a directory whose markers cannot be read (no permission) is walked and
// reported as a directory, not taken for a store.
func has(st format.Store, key string) bool {
	_, err := st.ReadRange(key, 0, 0)
	return err == nil
}

func claimsV2(st format.Store) bool { return has(st, ".zarray") || has(st, ".zgroup") }
func claimsV3(st format.Store) bool { return has(st, "zarr.json") }
