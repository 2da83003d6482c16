/** Request input checks shared by the account routes: 400 `invalid_body` naming the field. */
import type { z } from 'zod';
import { badRequest } from '../../errors.js';

/** Validate a parsed request body with zod. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path.join('.') || undefined;
  throw badRequest(
    `${field ? `${field}: ` : ''}${issue?.message ?? 'invalid body'}`,
    field ? { field } : undefined,
  );
}

/** A required, non-empty string (query parameter or body field). */
export function requireString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') throw badRequest(`${name} is required.`, { field: name });
  return value;
}
