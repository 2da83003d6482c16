/**
 * Reliability suites that run `folio serve` in a process of their own reach it only over HTTP:
 * this sets up an account on a plan, a project and a read-write test key through the API.
 */
import type { Json } from '../support/server.js';

export interface ProcessTenant {
  session: string;
  project: string;
  key: string;
}

export async function call(
  base: string,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  contentType?: string,
): Promise<{ status: number; body: Json }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': contentType ?? 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function expectStatus(
  answer: Promise<{ status: number; body: Json }>,
  status: number,
  what: string,
): Promise<Json> {
  const res = await answer;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A new account on `plan` with project `project` and one read-write `test` key. */
export async function processTenant(
  url: string,
  email: string,
  project: string,
  plan: 'pro' | 'team' = 'team',
): Promise<ProcessTenant> {
  const signup = await fetch(`${url}/api/auth/signup`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  });
  if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${await signup.text()}`);
  const session: string = ((await signup.json()) as { token: string }).token;
  await expectStatus(call(url, 'PATCH', '/api/account', session, { plan }), 200, 'plan');
  await expectStatus(call(url, 'POST', '/api/projects', session, { name: project }), 201, 'project');
  const created = await expectStatus(
    call(url, 'POST', '/api/keys', session, {
      project,
      name: 'reliability',
      env: 'test',
      scope: 'read-write',
    }),
    201,
    'key',
  );
  return { session, project, key: created.rawKey };
}
