// A model of the shipped catalogue by id, for tests that build a catalogue
// of their own from real entries; an id the catalogue lacks fails loudly.
import { Catalogue, type ModelEntry } from "../../providers/catalogue.ts";

const shipped = Catalogue.load();

export function catalogueModel(id: string): ModelEntry {
  const entry = shipped.get(id);
  if (!entry) throw new Error(`no catalogue model ${id}`);
  return entry;
}
