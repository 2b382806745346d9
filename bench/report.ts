/** Prints benchmark figures as an aligned table; a target is shown as met or missed, never asserted. */
export class BenchReport {
  private missed: string[] = [];

  section(title: string): void {
    process.stdout.write(`\n## ${title}\n`);
  }

  figure(
    label: string,
    value: number,
    unit: string,
    opts: { ratio?: number; against?: string; target?: { op: '<=' | '>='; value: number } } = {},
  ): void {
    const shown = value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(3);
    let line = `  ${label.padEnd(62)} ${shown.padStart(12)} ${unit}`;
    if (opts.ratio !== undefined) line += `   ${opts.ratio.toFixed(2)}x ${opts.against ?? 'baseline'}`;
    if (opts.target) {
      const ok = opts.target.op === '<=' ? value <= opts.target.value : value >= opts.target.value;
      line += `   target ${opts.target.op} ${opts.target.value} ${unit}: ${ok ? 'met' : 'MISSED'}`;
      if (!ok) this.missed.push(label);
    }
    process.stdout.write(line + '\n');
  }

  /** A line of context that is not a figure (counts, what was checked). */
  note(label: string, text: string): void {
    process.stdout.write(`  ${label.padEnd(62)} ${text}\n`);
  }

  summary(): void {
    process.stdout.write(this.missed.length ? `\ntargets missed: ${this.missed.join('; ')}\n` : '\nall targets met\n');
  }
}
