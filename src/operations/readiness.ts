/**
 * Readiness to take traffic (`GET /readyz`), distinct from health (`/healthz`: the store
 * answers). Ready means: start-up finished, not shutting down, the store answers, and the job
 * runner and the webhook dispatcher are running, so a write's webhooks will be delivered.
 */
export interface ReadinessChecks {
  store(): Promise<boolean>;
  jobs(): boolean;
  webhookDispatcher(): boolean;
}

export type Phase = 'starting' | 'running' | 'stopping';

export interface ReadinessReport {
  ready: boolean;
  phase: Phase;
  checks: { store: boolean; jobs: boolean; webhookDispatcher: boolean };
}

export class Readiness {
  #phase: Phase = 'starting';

  constructor(private readonly checks: ReadinessChecks | null) {}

  get phase(): Phase {
    return this.#phase;
  }

  markRunning(): void {
    if (this.#phase === 'starting') this.#phase = 'running';
  }

  markStopping(): void {
    this.#phase = 'stopping';
  }

  async report(): Promise<ReadinessReport> {
    const checks = {
      store: (await this.checks?.store().catch(() => false)) ?? false,
      jobs: this.checks?.jobs() ?? false,
      webhookDispatcher: this.checks?.webhookDispatcher() ?? false,
    };
    const ready = this.#phase === 'running' && checks.store && checks.jobs && checks.webhookDispatcher;
    return { ready, phase: this.#phase, checks };
  }
}
