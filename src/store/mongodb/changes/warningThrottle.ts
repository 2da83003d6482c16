/**
 * One warning per interval for a condition that can repeat for every event (a delete without
 * its pre-image, events of a database nobody can name): the first occurrence is reported at
 * once, later ones within `intervalMs` are only counted, and the next report says how many were
 * left out. The metrics count every occurrence.
 */
export class WarningThrottle {
  #lastMs = Number.NEGATIVE_INFINITY;
  #suppressed = 0;
  /** Every occurrence noted, reported or not. */
  total = 0;

  constructor(
    private readonly intervalMs: number,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Note one occurrence; `report` says whether to warn now, `suppressed` how many were left out since. */
  note(): { report: boolean; suppressed: number } {
    this.total += 1;
    const now = this.nowMs();
    if (now - this.#lastMs < this.intervalMs) {
      this.#suppressed += 1;
      return { report: false, suppressed: 0 };
    }
    this.#lastMs = now;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    return { report: true, suppressed };
  }
}
