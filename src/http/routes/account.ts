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
import { JSON_TYPE, jsonBody } from '../middleware/body.js';
import { SESSION_COOKIE, sessionAuth } from '../middleware/sessionAuth.js';
import { accountOf, type Ctx, type FolioRouter, param } from '../types.js';
import { parseBody } from './parseBody.js';

export const planSchema = z.strictObject({ plan: z.enum(['free', 'pro', 'team']) });
export const projectSchema = z.strictObject({ name: projectNameSchema });

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
  const body = jsonBody([JSON_TYPE], 64 * 1024);
  const session = sessionAuth();

  router.post('/api/auth/signup', body, async (ctx) => {
    const input = parseBody(credentialsSchema, ctx.request.body);
    // ctx.ip is the socket's address, or the proxy's X-Forwarded-For with FOLIO_HTTP_TRUST_PROXY.
    const { account, token } = await ctx.services.accounts.signup(input, { address: ctx.ip });
    setSessionCookie(ctx, token, ctx.services.config.auth.sessionTtlHours * 3_600_000);
    ctx.status = 201;
    ctx.body = { account: publicAccount(account), token, csrfToken: csrfTokenFor(token) };
  });

  router.post('/api/auth/login', body, async (ctx) => {
    const input = parseBody(credentialsSchema, ctx.request.body);
    const { token } = await ctx.services.accounts.login(input, ctx.ip);
    setSessionCookie(ctx, token, ctx.services.config.auth.sessionTtlHours * 3_600_000);
    ctx.body = { token, csrfToken: csrfTokenFor(token) };
  });

  // What a page holding only the HttpOnly cookie needs: who is signed in, and the CSRF token
  // its state-changing requests must send.
  router.get('/api/auth/session', session, async (ctx) => {
    ctx.body = {
      account: publicAccount(accountOf(ctx)),
      csrfToken: csrfTokenFor(ctx.state.sessionToken as string),
    };
  });

  router.post('/api/auth/logout', session, async (ctx) => {
    await ctx.services.accounts.logout(ctx.state.sessionToken as string);
    ctx.cookies.set(SESSION_COOKIE, null);
    ctx.status = 204;
  });

  router.get('/api/account', session, async (ctx) => {
    ctx.body = publicAccount(accountOf(ctx));
  });

  router.patch('/api/account', session, body, async (ctx) => {
    const { plan } = parseBody(planSchema, ctx.request.body);
    ctx.body = publicAccount(await ctx.services.accounts.setPlan(accountOf(ctx), plan));
  });

  router.post('/api/projects', session, body, async (ctx) => {
    const { name } = parseBody(projectSchema, ctx.request.body);
    ctx.status = 201;
    ctx.body = publicProject(await ctx.services.accounts.createProject(accountOf(ctx), name));
  });

  router.get('/api/projects', session, async (ctx) => {
    const projects = await ctx.services.accounts.listProjects(accountOf(ctx));
    ctx.body = { projects: projects.map(publicProject) };
  });

  router.patch('/api/projects/:projectId', session, body, async (ctx) => {
    const settings = parseBody(projectSettingsSchema, ctx.request.body);
    const project = await ctx.services.accounts.updateProjectSettings(
      accountOf(ctx),
      param(ctx, 'projectId'),
      settings,
    );
    ctx.body = publicProject(project);
  });
}
