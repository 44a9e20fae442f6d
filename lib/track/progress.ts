/**
 * A one-line progress display for the rollout and training phases on
 * stderr: `phase [█████░░░░░] 64/128 50% 12.3/s eta 5s extra`, redrawn in
 * place (carriage return, erase to end of line) at most every 100 ms.
 *
 * When stderr is not a terminal (logs, CI, pipes) it writes nothing: the
 * stdout tracker's per-step line and metrics.jsonl record progress there, and
 * carriage-return animation would only clutter a log file.
 *
 * @module
 */

/** Where the line is drawn (default `Deno.stderr`). */
export interface ProgressOutput {
  /** Whether this is an interactive terminal; nothing is drawn otherwise. */
  isTerminal(): boolean;
  /** Writes bytes, returning how many were written. */
  writeSync(p: Uint8Array): number;
}

/** Options of {@linkcode Progress}. */
export interface ProgressOptions {
  /** Output stream (default `Deno.stderr`). */
  output?: ProgressOutput;
  /** Clock in milliseconds (default `performance.now`). */
  now?: () => number;
  /** Fewest milliseconds between two redraws (default 100). */
  minIntervalMs?: number;
  /** Line width; longer lines are cut (default the terminal's width, else 100). */
  columns?: number;
}

const BAR_WIDTH = 24;
const encoder = new TextEncoder();

/**
 * A progress line for one phase at a time.
 *
 * @example
 * ```ts
 * import { Progress } from "./progress.ts";
 * const progress = new Progress(); // silent unless stderr is a terminal
 * progress.start("rollout", 4);
 * for (let i = 1; i <= 4; i++) progress.update(i, `episode ${i}`);
 * progress.done();
 * ```
 */
export class Progress {
  #out: ProgressOutput;
  #now: () => number;
  #minInterval: number;
  #columns: number | undefined;
  /** Whether anything is drawn (the output is a terminal). */
  readonly enabled: boolean;
  #phase = "";
  #total = 0;
  #done = 0;
  #extra = "";
  #startedAt = 0;
  #drawnAt = -Infinity;
  #shown = false;

  /** A display on `options.output` (default stderr). */
  constructor(options: ProgressOptions = {}) {
    this.#out = options.output ?? Deno.stderr;
    this.#now = options.now ?? (() => performance.now());
    this.#minInterval = options.minIntervalMs ?? 100;
    this.#columns = options.columns;
    let tty = false;
    try {
      tty = this.#out.isTerminal();
    } catch {
      // A closed or unusual stream: stay silent.
    }
    this.enabled = tty;
  }

  /** Begins a phase of `total` units (0 or less: unknown total, no bar or ETA). */
  start(phase: string, total: number): void {
    this.#phase = phase;
    this.#total = total;
    this.#done = 0;
    this.#extra = "";
    this.#startedAt = this.#now();
    this.#draw(true);
  }

  /** Sets the count of units done so far (not an increment) and an optional note. */
  update(done: number, extra = ""): void {
    this.#done = done;
    this.#extra = extra;
    this.#draw(this.#total > 0 && done >= this.#total);
  }

  /** Ends the phase: draws the final line (elapsed time instead of ETA) and moves to a new line. */
  done(extra?: string): void {
    if (extra !== undefined) this.#extra = extra;
    if (this.#total > 0 && this.#done < this.#total) this.#done = this.#total;
    if (!this.enabled) return;
    this.#write(`\r${this.#line(true)}\x1b[K\n`);
    this.#shown = false;
  }

  /** Erases the line (before printing other output); the next update draws it again. */
  clear(): void {
    if (!this.enabled || !this.#shown) return;
    this.#write("\r\x1b[K");
    this.#shown = false;
    this.#drawnAt = -Infinity;
  }

  #draw(force: boolean): void {
    if (!this.enabled) return;
    const t = this.#now();
    if (!force && t - this.#drawnAt < this.#minInterval) return;
    this.#drawnAt = t;
    this.#write(`\r${this.#line(false)}\x1b[K`);
    this.#shown = true;
  }

  /** The text of the line, cut to the terminal width. */
  #line(final: boolean): string {
    const seconds = (this.#now() - this.#startedAt) / 1000;
    const parts = [this.#phase];
    if (this.#total > 0) {
      const frac = Math.min(1, Math.max(0, this.#done / this.#total));
      const full = Math.round(frac * BAR_WIDTH);
      parts.push(`[${"█".repeat(full)}${"░".repeat(BAR_WIDTH - full)}]`);
      parts.push(`${this.#done}/${this.#total}`, `${Math.floor(frac * 100)}%`);
    } else {
      parts.push(String(this.#done));
    }
    const rate = seconds > 0 ? this.#done / seconds : 0;
    if (rate > 0) parts.push(`${rate >= 10 ? Math.round(rate) : rate.toFixed(1)}/s`);
    if (final) parts.push(`in ${formatSeconds(seconds)}`);
    else if (this.#total > 0 && rate > 0 && this.#done < this.#total) {
      parts.push(`eta ${formatSeconds((this.#total - this.#done) / rate)}`);
    }
    if (this.#extra) parts.push(this.#extra.replace(/[\r\n\t]+/g, " "));
    const width = Math.max(10, (this.#columns ?? terminalColumns()) - 1);
    const chars = [...parts.join("  ")];
    return chars.length > width ? chars.slice(0, width - 1).join("") + "…" : chars.join("");
  }

  #write(s: string): void {
    const bytes = encoder.encode(s);
    try {
      for (let off = 0; off < bytes.length;) off += this.#out.writeSync(bytes.subarray(off));
    } catch {
      // A progress line is never worth failing a run for (e.g. a closed terminal).
    }
  }
}

/** The terminal's width, or 100 when it cannot be asked. */
function terminalColumns(): number {
  try {
    return Deno.consoleSize().columns || 100;
  } catch {
    return 100;
  }
}

/** `42s`, `3m05s`, `1h02m`. */
function formatSeconds(s: number): string {
  const r = Math.round(s);
  if (r < 60) return `${r}s`;
  if (r < 3600) return `${Math.floor(r / 60)}m${String(r % 60).padStart(2, "0")}s`;
  return `${Math.floor(r / 3600)}h${String(Math.floor(r / 60) % 60).padStart(2, "0")}m`;
}
