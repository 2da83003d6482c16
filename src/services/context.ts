/** Who is calling, resolved once per request by the auth middleware and passed to services. */
import type { PlanLimits } from '../config/schema.js';
import type { AccountRecord, ApiKeyRecord, DataScope, Plan, ProjectRecord } from '../store/port.js';
import type { KeyAccess } from './keyAccess.js';

export interface KeyContext {
  account: AccountRecord;
  project: ProjectRecord;
  key: ApiKeyRecord;
  plan: Plan;
  limits: PlanLimits;
  scope: DataScope;
  /** What the key's rules let it reach, compiled once per key (keyAccess.ts). */
  access: KeyAccess;
}
