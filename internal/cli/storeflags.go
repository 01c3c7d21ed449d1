package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/pflag"
)

// storeFlags shape an output that is a store (Zarr): the registry's
// formats that are directories (format.StoreFormat) say which codecs.
type storeFlags struct {
	chunks, codec, shard string
}

// isStore says whether a format is a directory store.
func isStore(f *format.Format) bool { return f.Store != nil }

func (f *storeFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.chunks, "chunks", "", "an output in a directory store ("+format.Either(format.Names(isStore))+"): the chunk shape D1,D2,... (default: the input's chunks where the shape is kept, else chunks near 16 MiB)")
	fl.StringVar(&f.codec, "zarr-codec", "", "Zarr output: the compressor, "+format.Either(format.StoreCodecs())+" (default: blosc-lz4-shuffle for v2, zstd for v3)")
	fl.StringVar(&f.shard, "zarr-shard", "", "Zarr v3 output: the shard shape D1,D2,..., a multiple of the chunks (sharding_indexed; --shard is the batch split)")
}

func (f *storeFlags) apply(opts *pipeline.Options) error {
	parse := func(flag, s string) ([]int, error) {
		if s == "" {
			return nil, nil
		}
		v, err := format.ParseShape(s)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flag, err)
		}
		for _, d := range v {
			if d < 1 {
				return nil, fmt.Errorf("--%s %s: every extent must be at least 1", flag, s)
			}
		}
		return v, nil
	}
	var err error
	if opts.Store.Chunks, err = parse("chunks", f.chunks); err != nil {
		return err
	}
	if opts.Store.Shards, err = parse("zarr-shard", f.shard); err != nil {
		return err
	}
	if codecs := format.StoreCodecs(); f.codec != "" && !slices.Contains(codecs, f.codec) {
		return fmt.Errorf("--zarr-codec %q is not one of %s", f.codec, strings.Join(codecs, ", "))
	}
	opts.Store.Codec = f.codec
	return nil
}
