/** Signup, login, logout, the account and its projects: session-authenticated `/api` routes. */
import { z } from 'zod';
import {
  credentialsSchema,
  projectNameSchema,
  publicAccount,
  publicProject,
} from '../../services/accounts.js';
import { csrfTokenFor } from '../../services/csrf.js';
import { projectSettingsSchema } from '../../services/projectSettings.js';
import { jsonBody } from '../middleware/body.js';
import { SESSION_COOKIE } from '../middleware/sessionAuth.js';
import { accountSchema, projectSchema as projectAnswer } from '../openapi/components.js';
import { answer, bodyTypes, type OperationDeclaration, validatedJson } from '../openapi/declare.js';
import { accountOf, type Ctx, type FolioRouter, param } from '../types.js';
import { bodyOf, declare, route } from './route.js';

export const planSchema = z.strictObject({ plan: z.enum(['free', 'pro', 'team']) });
export const projectSchema = z.strictObject({ name: projectNameSchema });

const tags = ['accounts'];
const sessionCookie = z.object({
  'Set-Cookie': z.string().meta({ description: '`folio_session=...; HttpOnly; SameSite=Lax`' }),
});
const projectId = z.object({ projectId: z.string().meta({ description: 'Project id (`prj_...`).' }) });

export const signup = declare({
  auth: 'public',
  method: 'post',
  path: '/api/auth/signup',
  operationId: 'signup',
  tags,
  summary: 'Create an account (when signup is open)',
  body: validatedJson(credentialsSchema),
  ok: answer(
    201,
    'Created; sets the session cookie',
    z.object({ account: accountSchema, token: z.string(), csrfToken: z.string() }),
    sessionCookie,
  ),
  errors: [400, 403, 409, 413, 415, 429],
});

export const login = declare({
  auth: 'public',
  method: 'post',
  path: '/api/auth/login',
  operationId: 'login',
  tags,
  summary: 'Log in; sets the session cookie',
  body: validatedJson(credentialsSchema),
  ok: answer(200, 'Logged in', z.object({ token: z.string(), csrfToken: z.string() }), sessionCookie),
  errors: [400, 401, 413, 415, 429],
});

export const readSession = declare({
  auth: 'session',
  method: 'get',
  path: '/api/auth/session',
  operationId: 'readSession',
  tags,
  summary: 'The signed-in account and the CSRF token cookie-authenticated writes must send',
  ok: answer(200, 'The session', z.object({ account: accountSchema, csrfToken: z.string() })),
  errors: [],
});

export const logout = declare({
  auth: 'session',
  method: 'post',
  path: '/api/auth/logout',
  operationId: 'logout',
  tags,
  summary: 'End the session',
  ok: answer(204, 'Logged out'),
  errors: [],
});

export const readAccount = declare({
  auth: 'session',
  method: 'get',
  path: '/api/account',
  operationId: 'readAccount',
  tags,
  summary: 'The account',
  ok: answer(200, 'The account', accountSchema),
  errors: [],
});

export const changePlan = declare({
  auth: 'session',
  method: 'patch',
  path: '/api/account',
  operationId: 'changePlan',
  tags,
  summary: 'Change the plan (free in the pre-release phase)',
  body: validatedJson(planSchema),
  ok: answer(200, 'The account', accountSchema),
  errors: [400, 413, 415],
});

export const createProject = declare({
  auth: 'session',
  method: 'post',
  path: '/api/projects',
  operationId: 'createProject',
  tags,
  summary: 'Create a project',
  body: validatedJson(projectSchema),
  ok: answer(201, 'Created', projectAnswer),
  errors: [400, 409, 413, 415],
});

export const listProjects = declare({
  auth: 'session',
  method: 'get',
  path: '/api/projects',
  operationId: 'listProjects',
  tags,
  summary: 'The account’s projects',
  ok: answer(200, 'Projects', z.object({ projects: z.array(projectAnswer) })),
  errors: [],
});

export const updateProject = declare({
  auth: 'session',
  method: 'patch',
  path: '/api/projects/{projectId}',
  operationId: 'updateProject',
  tags,
  summary: 'Project settings: allowed browser origins, automatic indexes',
  params: projectId,
  body: validatedJson(projectSettingsSchema),
  ok: answer(200, 'The project', projectAnswer),
  errors: [400, 404, 413, 415],
});

export const ACCOUNT_OPERATIONS: OperationDeclaration[] = [
  signup,
  login,
  readSession,
  logout,
  readAccount,
  changePlan,
  createProject,
  listProjects,
  updateProject,
];

function setSessionCookie(ctx: Ctx, token: string, maxAgeMs: number): void {
  ctx.cookies.set(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    // Behind TLS (directly, or via a trusted proxy's X-Forwarded-Proto) the cookie never travels in clear.
    secure: ctx.secure,
    maxAge: maxAgeMs,
    overwrite: true,
  });
}

export function registerAccountRoutes(router: FolioRouter): void {
  const body = jsonBody(bodyTypes(signup), 64 * 1024);

  route(router, signup, body, async (ctx) => {
    const input = bodyOf(ctx, signup);
    const { account, token } = await ctx.services.accounts.signup(input, { address: ctx.ip });
    setSessionCookie(ctx, token, ctx.services.config.auth.sessionTtlHours * 3_600_000);
    ctx.status = 201;
    ctx.body = { account: publicAccount(account), token, csrfToken: csrfTokenFor(token) };
  });

  route(router, login, body, async (ctx) => {
    const { token } = await ctx.services.accounts.login(bodyOf(ctx, login), ctx.ip);
    setSessionCookie(ctx, token, ctx.services.config.auth.sessionTtlHours * 3_600_000);
    ctx.body = { token, csrfToken: csrfTokenFor(token) };
  });

  // What a page holding only the HttpOnly cookie needs: who is signed in, and the CSRF token
  // its state-changing requests must send.
  route(router, readSession, async (ctx) => {
    ctx.body = {
      account: publicAccount(accountOf(ctx)),
      csrfToken: csrfTokenFor(ctx.state.sessionToken as string),
    };
  });

  route(router, logout, async (ctx) => {
    await ctx.services.accounts.logout(ctx.state.sessionToken as string);
    ctx.cookies.set(SESSION_COOKIE, null);
    ctx.status = 204;
  });

  route(router, readAccount, async (ctx) => {
    ctx.body = publicAccount(accountOf(ctx));
  });

  route(router, changePlan, body, async (ctx) => {
    const { plan } = bodyOf(ctx, changePlan);
    ctx.body = publicAccount(await ctx.services.accounts.setPlan(accountOf(ctx), plan));
  });

  route(router, createProject, body, async (ctx) => {
    const { name } = bodyOf(ctx, createProject);
    ctx.status = 201;
    ctx.body = publicProject(await ctx.services.accounts.createProject(accountOf(ctx), name));
  });

  route(router, listProjects, async (ctx) => {
    const projects = await ctx.services.accounts.listProjects(accountOf(ctx));
    ctx.body = { projects: projects.map(publicProject) };
  });

  route(router, updateProject, body, async (ctx) => {
    const settings = bodyOf(ctx, updateProject);
    const project = await ctx.services.accounts.updateProjectSettings(
      accountOf(ctx),
      param(ctx, 'projectId'),
      settings,
    );
    ctx.body = publicProject(project);
  });
}
