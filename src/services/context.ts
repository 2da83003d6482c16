/** Who is calling, resolved once per request by the auth middleware and passed to services. */
import type { PlanLimits } from '../config/schema.js';
import type { AccountRecord, ApiKeyRecord, DataScope, Plan, ProjectRecord } from '../store/port.js';

export interface KeyContext {
  account: AccountRecord;
  project: ProjectRecord;
  key: ApiKeyRecord;
  plan: Plan;
  limits: PlanLimits;
  scope: DataScope;
}
