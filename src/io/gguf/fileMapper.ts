// How readGGUF (reader.ts) brings a file's bytes into memory: the native backend installs a
// memory-mapper (backends/index.ts selectBackend). Its own module, without node: imports, so
// that the backend selection also bundles for a browser (src/browser/).

/** The file's bytes, mapped rather than read. */
export type FileMapper = (path: string) => Uint8Array;

let mapper: FileMapper | undefined;

export function setFileMapper(m: FileMapper | undefined): void {
  mapper = m;
}

export function fileMapper(): FileMapper | undefined {
  return mapper;
}
