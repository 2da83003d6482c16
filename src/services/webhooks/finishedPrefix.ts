/**
 * The events one lead of the dispatcher has read, in feed order, and the position it saves: the
 * last event of the finished prefix, every delivery of which was attempted and recorded or
 * handed to Agenda (dispatcher.ts says why the position may pass nothing else), or, with no
 * event open, the feed's checkpoint.
 */

/** An event read from the feed whose deliveries are not all finished yet. */
export interface OpenEvent {
  token: string;
  /** Deliveries of it not yet attempted and recorded (or handed to Agenda). */
  remaining: number;
  /** A delivery of it was cut short by stop(): the position must not pass it. */
  abandoned: boolean;
}

/** The feed's checkpoint taken while no event was open (see `quietPoint`). */
interface QuietPoint {
  token: string;
  reads: number;
}

export class FinishedPrefix {
  readonly #open: OpenEvent[] = [];
  /** The last event of the finished prefix not saved yet. */
  #finishedToken: string | null = null;
  #saving: Promise<boolean> | null = null;
  /** The last position saved (an event's token or a checkpoint). */
  #saved: string | null = null;
  /** Events read so far (a quiet point is stale once this moved). */
  #reads = 0;
  /** When a position was last saved; 0, so the first finished event is saved at once. */
  savedAt = 0;

  /** `save` answers false when the lease was lost. */
  constructor(private readonly saveToken: (token: string) => Promise<boolean>) {}

  /** Tracks an event just read. */
  read(token: string): OpenEvent {
    this.#reads += 1;
    const event: OpenEvent = { token, remaining: 0, abandoned: false };
    this.#open.push(event);
    return event;
  }

  /** Events read and not yet passed by the finished prefix. */
  get size(): number {
    return this.#open.length;
  }

  /** Moves the finished prefix past the events finished since. */
  advance(): void {
    while (this.#open.length > 0 && this.#open[0]?.remaining === 0 && !this.#open[0].abandoned) {
      this.#finishedToken = (this.#open.shift() as OpenEvent).token;
    }
  }

  /**
   * The feed's checkpoint (`ChangeSubscription.checkpoint`: a position past everything it
   * handed out) as a position to save, when no event is open; null otherwise (resuming past an
   * open event would skip its deliveries). Take it between events (in a timer: an event taken
   * from the feed is read by then), apply it with `checkpoint` once the lease is renewed.
   */
  quietPoint(token: string | null): QuietPoint | null {
    if (token === null || this.#open.length > 0 || token === this.#saved) return null;
    return { token, reads: this.#reads };
  }

  /**
   * Makes a quiet point the position to save, so a quiet Folio's position moves on with the
   * feed instead of ageing out of the retained history; ignored once an event was read since
   * (its own token is the newer position).
   */
  checkpoint(point: QuietPoint | null): void {
    if (point === null || point.reads !== this.#reads || point.token === this.#saved) return;
    this.#finishedToken = point.token;
  }

  /** Saves the finished prefix's last event, if new; false when the lease was lost. */
  async save(): Promise<boolean> {
    // One save at a time, so an older position never lands after a newer one.
    while (this.#saving) await this.#saving;
    if (this.#finishedToken === null) return true;
    const token = this.#finishedToken;
    this.#saving = this.saveToken(token);
    try {
      if (!(await this.#saving)) return false;
    } finally {
      this.#saving = null;
    }
    if (this.#finishedToken === token) this.#finishedToken = null;
    this.#saved = token;
    this.savedAt = Date.now();
    return true;
  }
}
