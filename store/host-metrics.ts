import { readFileSync, statfsSync } from 'node:fs';

/*
 * Host figures for `/api/system/status` and the dashboard (WIRE.md `*_percent`), from Linux's /proc
 * and statfs. Each reader answers null where its source is missing (not Linux, a vanished mount),
 * so the caller shows 0 rather than failing the whole status.
 */

/** Cumulative jiffies from the first line of /proc/stat. */
export interface CpuTimes {
  idle: number;
  total: number;
}

export function readCpuTimes(): CpuTimes | null {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const m = /^cpu\s+(.*)$/.exec(line);
    if (!m) return null;
    const f = m[1]!.trim().split(/\s+/).map(Number);
    if (f.length < 4 || f.some((n) => !Number.isFinite(n))) return null;
    // idle + iowait are time the CPU had nothing to run.
    const idle = f[3]! + (f[4] ?? 0);
    return { idle, total: f.reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}

const round1 = (n: number) => Math.round(Math.min(100, Math.max(0, n)) * 10) / 10;

/**
 * Busy share between two samples; with no earlier sample (or counters that went back), since boot.
 * null when no time passed between them: the caller keeps its last figure.
 */
export function cpuPercent(prev: CpuTimes | null, now: CpuTimes | null): number | null {
  if (!now) return null;
  if (prev && now.total === prev.total) return null;
  const base = prev && now.total > prev.total && now.idle >= prev.idle ? prev : { idle: 0, total: 0 };
  const total = now.total - base.total;
  return total > 0 ? round1((100 * (total - (now.idle - base.idle))) / total) : null;
}

/** Memory in use: what MemAvailable says cannot be had without swapping. */
export function readRamPercent(): number | null {
  try {
    const text = readFileSync('/proc/meminfo', 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const total = kb('MemTotal');
    const available = kb('MemAvailable');
    return Number.isFinite(total) && Number.isFinite(available) && total > 0 ? round1((100 * (total - available)) / total) : null;
  } catch {
    return null;
  }
}

/** Use of the filesystem holding `path`, as df counts it (blocks reserved for root left out). */
export function readDiskPercent(path: string): number | null {
  try {
    const s = statfsSync(path);
    const used = s.blocks - s.bfree;
    const usable = used + s.bavail;
    return usable > 0 ? round1((100 * used) / usable) : null;
  } catch {
    return null;
  }
}

export interface HostSample {
  cpu: CpuTimes | null;
  ram_percent: number | null;
  disk_percent: number | null;
}

export function readHostSample(home: string): HostSample {
  return { cpu: readCpuTimes(), ram_percent: readRamPercent(), disk_percent: readDiskPercent(home) };
}
