// The actor types a host runs, and reading a stored state back through the
// type's schema (stored data is a boundary: it may predate the schema or be corrupt).
import { TroupeError } from "../../core/errors.ts";
import type { AnyActorDefinition } from "../actor.ts";

export class ActorRegistry {
  private readonly types = new Map<string, AnyActorDefinition>();

  add(definitions: readonly AnyActorDefinition[]): void {
    for (const definition of definitions) {
      const existing = this.types.get(definition.type);
      if (existing && existing !== definition) throw new Error(`actor type ${definition.type} is registered twice`);
      this.types.set(definition.type, definition);
    }
  }

  get(type: string): AnyActorDefinition {
    const definition = this.types.get(type);
    if (!definition) throw new TroupeError("not_found", `No actor type ${type} is registered.`);
    return definition;
  }

  has(type: string): boolean {
    return this.types.has(type);
  }

  names(): string[] {
    return [...this.types.keys()];
  }
}

/** The committed state JSON for an activation: the stored value parsed by the schema, or the initial state. */
export function initialStateJson(definition: AnyActorDefinition, stored: unknown, id: string): string {
  if (stored === undefined) return JSON.stringify(definition.state.parse(definition.initialState()));
  const parsed = definition.state.safeParse(stored);
  if (!parsed.success) {
    throw new TroupeError("internal_error", `Stored state of ${definition.type}/${id} does not match its schema.`, { cause: parsed.error });
  }
  return JSON.stringify(parsed.data);
}
