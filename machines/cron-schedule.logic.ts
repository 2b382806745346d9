/*
 * The cron jobs' next fires kept in time order: a binary min-heap of (time, job), so finding what is
 * due costs O(due · log n) instead of a pass over every job at every tick. An entry is live while its
 * time is still the job's next fire; a job moved or removed leaves its old entry behind, dropped
 * when it reaches the top (or when dead entries outnumber live ones, by a rebuild).
 */

export interface FireEntry {
  id: string;
  at: number;
}

export type FireHeap = FireEntry[];

const before = (a: FireEntry, b: FireEntry) => a.at < b.at || (a.at === b.at && a.id < b.id);

export function heapPush(heap: FireHeap, entry: FireEntry): void {
  heap.push(entry);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

export function heapPop(heap: FireHeap): FireEntry | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  heap[0] = last;
  let i = 0;
  for (;;) {
    const l = 2 * i + 1;
    const r = l + 1;
    let m = i;
    if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
    if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
    if (m === i) return top;
    [heap[i], heap[m]] = [heap[m]!, heap[i]!];
    i = m;
  }
}

/** Drops dead entries from the top, so heap[0] is the soonest live fire (or there is none). */
export function heapSoonest(heap: FireHeap, next: Readonly<Record<string, number | null>>): FireEntry | undefined {
  while (heap.length && next[heap[0]!.id] !== heap[0]!.at) heapPop(heap);
  return heap[0];
}

/** A heap of only the live entries, when dead ones have piled up (jobs edited many times). */
export function heapOf(next: Readonly<Record<string, number | null>>): FireHeap {
  const heap: FireHeap = [];
  for (const [id, at] of Object.entries(next)) if (at !== null) heapPush(heap, { id, at });
  return heap;
}
