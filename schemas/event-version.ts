import { SvcError } from './error.js';
import type { AnyEnvelope, EventData } from './event.schema.js';

/*
 * Each event type's payload has a schema version, stamped on the envelope as `v` when a fact is
 * appended. A version of 1 is not written (`v` absent reads as 1), so every log svc wrote before
 * versions existed reads as version 1, and such envelopes stay byte-for-byte as they were.
 *
 * When a payload's shape changes, its version goes up here and an upcaster from the previous
 * version goes in UPCASTERS: readers of the log (replay, projections, restores) see every event at
 * its current version. An event no upcaster can bring forward — a version newer than this svc
 * knows, or a gap in the chain — is refused by name (stream, seq, type, version), never guessed at.
 */

/** Event types whose payload is past version 1, by type: the version this svc writes. */
export const EVENT_VERSIONS: Readonly<Record<string, number>> = {
  // v2: says which surface the connection came in on, now that `/ws/admin` connections record facts too.
  'connection.authenticated': 2,
};

/** `UPCASTERS[type][n]` turns version n of `type`'s payload into version n + 1. */
export const UPCASTERS: Readonly<Record<string, Readonly<Record<number, (data: EventData) => EventData>>>> = {
  'connection.authenticated': {
    // Before v2 only the direct API's `/ws` recorded connection facts.
    1: (data) => ({ surface: 'direct', ...data }),
  },
};

/** The version this svc writes for `type`. */
export function eventVersion(type: string): number {
  return EVENT_VERSIONS[type] ?? 1;
}

/** The version an envelope was written at (absent: 1, as every log before versions). */
export function envelopeVersion(e: { v?: number }): number {
  return e.v ?? 1;
}

/** Brings an envelope to its type's current version, or throws `unreadable-event` naming it exactly. */
export function upcastEnvelope(e: AnyEnvelope): AnyEnvelope {
  const current = eventVersion(e.type);
  let version = envelopeVersion(e);
  if (version === current) return e;
  const where = `${e.stream} seq ${e.seq}: ${e.type} version ${version}`;
  if (version > current) {
    throw new SvcError('unreadable-event', `${where} was written by a newer svc (this one reads ${e.type} up to version ${current}); upgrade svc`, { stream: e.stream, seq: e.seq, type: e.type, version });
  }
  let data = e.data;
  while (version < current) {
    const step = UPCASTERS[e.type]?.[version];
    if (!step) throw new SvcError('unreadable-event', `${where}: no upcaster from version ${version} to ${version + 1} of ${e.type}`, { stream: e.stream, seq: e.seq, type: e.type, version });
    data = step(data);
    version++;
  }
  const { v: _old, ...rest } = e;
  return current === 1 ? { ...rest, data } : { ...rest, data, v: current };
}
