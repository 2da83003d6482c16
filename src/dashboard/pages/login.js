/** Log in or sign up: email and password; the session cookie is set by Folio. */
import { useState } from 'preact/hooks';
import { ErrorBox } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { session } from '../lib/api.js';
import { useAction } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';

export function LoginPage({ mode, message, onSignedIn }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [run, { busy, error }] = useAction();
  const signup = mode === 'signup';

  const submit = (event) => {
    event.preventDefault();
    run(async () => {
      if (signup) await session.signup(email, password);
      else await session.login(email, password);
      const { data } = await session.current();
      onSignedIn(data);
    });
  };

  return html`<${Page} title=${signup ? 'Create a Folio account' : 'Log in to Folio'}>
    ${message ? html`<p class="notice" role="status">${message}</p>` : null}
    <form class="card narrow" onSubmit=${submit} aria-describedby=${error ? 'auth-error' : undefined}>
      <div class="field">
        <label for="email">Email</label>
        <input id="email" type="email" autocomplete="email" required value=${email}
          onInput=${(e) => setEmail(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="password">Password</label>
        <input id="password" type="password" required minlength=${signup ? 8 : undefined}
          autocomplete=${signup ? 'new-password' : 'current-password'}
          aria-describedby=${signup ? 'password-hint' : undefined}
          value=${password} onInput=${(e) => setPassword(e.currentTarget.value)} />
        ${signup ? html`<p class="hint" id="password-hint">At least 8 characters.</p>` : null}
      </div>
      <div id="auth-error"><${ErrorBox} error=${error} /></div>
      <button type="submit" class="primary" disabled=${busy}>${signup ? 'Create account' : 'Log in'}</button>
    </form>
    <p>
      ${
        signup
          ? html`Already have an account? <a href=${href('login')}>Log in</a>`
          : html`New to Folio? <a href=${href('signup')}>Create an account</a>`
      }
    </p>
  <//>`;
}
