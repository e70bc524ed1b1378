// Audio as bytes with their Content-Type: what speech synthesis returns,
// transcription takes, and the converters here read and write. It is media's
// own type, so providers/ (whose adapters return it) imports it from here
// and media/ needs nothing from the layer above it.
export interface AudioBytes {
  bytes: Buffer;
  contentType: string;
}
