// The attributes every actor span carries (embedded and Dapr hosts alike).
export function actorSpanAttributes(type: string, id: string, method: string): Record<string, string> {
  return { "troupe.actor.type": type, "troupe.actor.id": id, "troupe.actor.method": method };
}
