import type { ChatTransport, TransportHealth } from '../schemas/index.js';

/*
 * The chat transports running now, by name. Edges add theirs as they start (the composition root
 * adds one line per transport); `chat.deliver` (actors/chat-delivery/) looks up a chat's transport
 * here, and the dashboard reads each one's health.
 */
export class TransportRegistry {
  private readonly byName = new Map<string, ChatTransport>();

  /**
   * Registers a transport; the function returned takes it out again (on stop). `forAgent`: it
   * speaks for that agent only (a sub-agent's own bot); without it, for every agent that has none.
   */
  add(transport: ChatTransport, forAgent?: string): () => void {
    const key = keyOf(transport.name, forAgent);
    if (this.byName.has(key)) throw new Error(`transport ${key} is registered twice`);
    this.byName.set(key, transport);
    return () => {
      if (this.byName.get(key) === transport) this.byName.delete(key);
    };
  }

  /** The agent's own transport of that name, else the shared one. */
  get(name: string, agent?: string): ChatTransport | null {
    return (agent !== undefined ? this.byName.get(keyOf(name, agent)) : undefined) ?? this.byName.get(name) ?? null;
  }

  health(): TransportHealth[] {
    return [...this.byName.values()].map((t) => t.health());
  }
}

function keyOf(name: string, agent: string | undefined): string {
  return agent === undefined ? name : `${name}:${agent}`;
}
