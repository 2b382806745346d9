import type { ChatAddress, ChatTransport, TransportHealth } from '../schemas/index.js';

/*
 * The chat transports running now, by name. Edges add theirs as they start (the composition root
 * adds one line per transport); `chat.deliver` (actors/chat-delivery/) asks here whether a chat can
 * be told, and the banner, `svc status`, `svc doctor` and the dashboard read each one's health.
 */
export class TransportRegistry {
  private readonly byName = new Map<string, ChatTransport>();

  /** Registers a transport; the function returned takes it out again (on stop). */
  add(transport: ChatTransport): () => void {
    if (this.byName.has(transport.name)) throw new Error(`transport ${transport.name} is registered twice`);
    this.byName.set(transport.name, transport);
    return () => {
      if (this.byName.get(transport.name) === transport) this.byName.delete(transport.name);
    };
  }

  get(name: string): ChatTransport | null {
    return this.byName.get(name) ?? null;
  }

  /** Whether `name` is registered and can take a message for that chat now. */
  reaches(name: string, to: ChatAddress): boolean {
    const t = this.byName.get(name);
    return t !== undefined && t.health().state === 'running' && t.reaches(to);
  }

  health(): TransportHealth[] {
    return [...this.byName.values()].map((t) => t.health());
  }
}
