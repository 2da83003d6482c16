/**
 * Drives one MongoDB change stream: maps each change to the port's event and hands it on, and
 * reports once why the stream ended. The driver resumes by itself after resumable errors
 * (network, elections); whatever reaches this loop is final for the stream.
 */
import type { ChangeStream, ChangeStreamDocument } from 'mongodb';
import type { ChangeFeedEnd } from '../port.js';
import type { StoredDocument } from '../storedForm.js';
import { endReasonFor, type MappedChange, toChangeEvent } from './changeEvents.js';

export interface PumpHandlers {
  change(mapped: MappedChange): void;
  end(reason: ChangeFeedEnd): void;
}

export class ChangeStreamPump {
  #stopped = false;
  #closing: Promise<void> | null = null;

  constructor(
    private readonly stream: ChangeStream<StoredDocument, ChangeStreamDocument<StoredDocument>>,
    private readonly collection: string,
    private readonly handlers: PumpHandlers,
  ) {}

  start(): void {
    void this.#run();
  }

  /** Stop without reporting an end; resolves once the server cursor is closed. */
  stop(): Promise<void> {
    this.#stopped = true;
    return this.#close();
  }

  async #run(): Promise<void> {
    try {
      while (!this.#stopped) {
        // The first call sends the aggregate; later ones wait on getMore (awaitData).
        const change = await this.stream.next();
        if (this.#stopped) break;
        if (change.operationType === 'invalidate') {
          // The collection was dropped or renamed (or its database dropped).
          this.#finish('invalidated');
          break;
        }
        const mapped = toChangeEvent(change, this.collection);
        if (mapped) this.handlers.change(mapped);
      }
    } catch (error) {
      // After stop(), next() rejects because the stream was closed under it: not an end.
      if (!this.#stopped) this.#finish(endReasonFor(error));
    } finally {
      await this.#close();
    }
  }

  #finish(reason: ChangeFeedEnd): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.handlers.end(reason);
  }

  #close(): Promise<void> {
    this.#closing ??= this.stream.close().catch(() => {
      // Closing a cursor the server already dropped fails harmlessly.
    });
    return this.#closing;
  }
}
