// Reads arrays of a Zarr v3 store with zarrita and prints, per array,
// one JSON line: its path, shape, data type and its elements' bytes in
// C order as hex (the tests compare them with depthspace's input).
import * as zarr from "zarrita";
import FileSystemStore from "@zarrita/storage/fs";

const [root, ...paths] = process.argv.slice(2);
const store = new FileSystemStore(root);
for (const p of paths) {
  const arr = await zarr.open(zarr.root(store).resolve(p), { kind: "array" });
  // A scalar array's get gives the bare value: its one chunk has the bytes.
  const { data, shape } = arr.shape.length === 0 ? await arr.getChunk([]) : await zarr.get(arr);
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  console.log(JSON.stringify({ path: p, shape, dtype: arr.dtype, hex: Buffer.from(bytes).toString("hex") }));
}
