// Passkey demo: the WebAuthn browser ceremony against latchkey's API.
// The server's options are PublicKeyCredentialCreationOptions and
// PublicKeyCredentialRequestOptions as JSON, with every binary field in
// base64url; navigator.credentials wants ArrayBuffers, and the server wants
// the resulting PublicKeyCredential back as JSON in base64url again.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  // The demo's calls go to /demo/passkeys/api/v1/..., which the server
  // forwards to /api/v1/... after refusing live-mode keys.
  const API = "/demo/passkeys/api/v1/";
  let session = null; // {token, userId, email}; kept in memory only

  const b64urlToBuf = (s) => {
    const b64 = s.replace(/-/g, "+").replace(/_/g, "/");
    const bin = atob(b64 + "===".slice((b64.length + 3) % 4));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  };
  const bufToB64url = (buf) => {
    const bytes = new Uint8Array(buf);
    let bin = "";
    for (let i = 0; i < bytes.length; i++) bin += String.fromCharCode(bytes[i]);
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  };

  const status = (msg, kind) => {
    const el = $("status");
    el.textContent = msg;
    el.className = kind || "";
  };

  class APIError extends Error {
    constructor(body, httpStatus) {
      super(body.error || "HTTP " + httpStatus);
      this.code = body.code || "";
      this.httpStatus = httpStatus;
    }
  }

  async function call(method, path, token, body) {
    const init = { method, headers: { Authorization: "Bearer " + token } };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(API + path, init);
    let data;
    try {
      data = await res.json();
    } catch (e) {
      throw new APIError({ error: "The server did not answer with JSON." }, res.status);
    }
    if (!res.ok || data.success !== true) throw new APIError(data, res.status);
    return data;
  }

  // apiKey returns the key field, refusing anything but a test-mode key.
  function apiKey() {
    const key = $("key").value.trim();
    if (key.startsWith("sk_live_")) {
      throw new Error("Live keys are refused: this demo accepts test-mode keys (sk_test_…) only.");
    }
    if (!key.startsWith("sk_test_")) {
      throw new Error("Paste a test-mode API key (sk_test_…).");
    }
    return key;
  }

  function creationOptions(options) {
    const pk = structuredClone(options.publicKey);
    pk.challenge = b64urlToBuf(pk.challenge);
    pk.user.id = b64urlToBuf(pk.user.id);
    pk.excludeCredentials = (pk.excludeCredentials || []).map((c) => ({ ...c, id: b64urlToBuf(c.id) }));
    return pk;
  }

  function requestOptions(options) {
    const pk = structuredClone(options.publicKey);
    pk.challenge = b64urlToBuf(pk.challenge);
    if (pk.allowCredentials) {
      pk.allowCredentials = pk.allowCredentials.map((c) => ({ ...c, id: b64urlToBuf(c.id) }));
    }
    return pk;
  }

  function attestationJSON(cred) {
    const r = cred.response;
    return {
      id: cred.id,
      rawId: bufToB64url(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults(),
      response: {
        clientDataJSON: bufToB64url(r.clientDataJSON),
        attestationObject: bufToB64url(r.attestationObject),
        transports: typeof r.getTransports === "function" ? r.getTransports() : [],
      },
    };
  }

  function assertionJSON(cred) {
    const r = cred.response;
    return {
      id: cred.id,
      rawId: bufToB64url(cred.rawId),
      type: cred.type,
      authenticatorAttachment: cred.authenticatorAttachment || undefined,
      clientExtensionResults: cred.getClientExtensionResults(),
      response: {
        clientDataJSON: bufToB64url(r.clientDataJSON),
        authenticatorData: bufToB64url(r.authenticatorData),
        signature: bufToB64url(r.signature),
        userHandle: r.userHandle ? bufToB64url(r.userHandle) : null,
      },
    };
  }

  // register runs a registration ceremony: with token a session (add a
  // passkey), with an API key and email a sign-up.
  async function register(token, email) {
    const start = await call("POST", "passkey/register/start", token, email ? { email } : {});
    status("Waiting for the authenticator…");
    const cred = await navigator.credentials.create({ publicKey: creationOptions(start.options) });
    if (!cred) throw new Error("No credential was created.");
    return call("POST", "passkey/register/verify", token, { challengeId: start.challengeId, credential: attestationJSON(cred) });
  }

  async function login(key, email) {
    const start = await call("POST", "passkey/login/start", key, email ? { email } : {});
    status("Waiting for the authenticator…");
    const cred = await navigator.credentials.get({ publicKey: requestOptions(start.options) });
    if (!cred) throw new Error("No passkey was chosen.");
    return call("POST", "passkey/login/verify", key, { challengeId: start.challengeId, credential: assertionJSON(cred) });
  }

  function signedIn(result) {
    session = { token: result.token, userId: result.userId, email: result.user ? result.user.email : "" };
    $("user-email").textContent = session.email;
    $("user-id").textContent = session.userId;
    $("token").textContent = session.token;
    $("session").hidden = false;
    $("passkeys").hidden = true;
  }

  async function listPasskeys() {
    const data = await call("GET", "passkeys", session.token);
    const body = $("passkeys").querySelector("tbody");
    body.replaceChildren();
    for (const p of data.passkeys) {
      const tr = document.createElement("tr");
      tr.dataset.credentialId = p.credentialId;
      const id = document.createElement("td");
      const code = document.createElement("code");
      code.textContent = p.credentialId;
      id.append(code);
      const created = document.createElement("td");
      created.textContent = p.createdAt;
      const act = document.createElement("td");
      const rm = document.createElement("button");
      rm.type = "button";
      rm.className = "danger remove";
      rm.textContent = "Remove";
      rm.addEventListener("click", () => run(async () => {
        await call("DELETE", "passkeys/" + encodeURIComponent(p.credentialId), session.token);
        const n = await listPasskeys();
        return "Removed the passkey. " + n + " left.";
      }));
      act.append(rm);
      tr.append(id, created, act);
      body.append(tr);
    }
    $("passkeys").hidden = false;
    return data.passkeys.length;
  }

  // run disables the buttons while fn runs and shows its outcome.
  async function run(fn) {
    const buttons = document.querySelectorAll("button");
    buttons.forEach((b) => (b.disabled = true));
    try {
      status(await fn(), "ok");
    } catch (e) {
      let msg = e.message;
      if (e instanceof APIError) msg = (e.code ? e.code + ": " : "") + e.message;
      else if (e.name === "NotAllowedError") msg = "The browser or the authenticator refused (cancelled, timed out, or this origin is not allowed for the rpId).";
      else if (e.name === "InvalidStateError") msg = "This authenticator already holds a passkey for this account.";
      else if (e.name === "SecurityError") msg = "WebAuthn refused this origin: the rpId must be this page's host (" + location.hostname + ").";
      status(msg, "err");
    } finally {
      buttons.forEach((b) => (b.disabled = false));
    }
  }

  const email = () => {
    const v = $("email").value.trim();
    if (!v) throw new Error("Type an email address.");
    return v;
  };

  document.addEventListener("DOMContentLoaded", () => {
    if (!window.PublicKeyCredential || !window.isSecureContext) {
      status("This browser or origin cannot use WebAuthn here: open the page over https or as http://localhost.", "err");
      return;
    }
    $("signup").addEventListener("click", () => run(async () => {
      const key = apiKey();
      const res = await register(key, email());
      signedIn(res);
      return "Signed up as " + session.email + " with passkey " + res.credentialId + ".";
    }));
    $("signin-email").addEventListener("click", () => run(async () => {
      const key = apiKey();
      signedIn(await login(key, email()));
      return "Signed in as " + session.email + " with a passkey (by email).";
    }));
    $("signin-discoverable").addEventListener("click", () => run(async () => {
      const key = apiKey();
      signedIn(await login(key, ""));
      return "Signed in as " + session.email + " with a passkey (discoverable).";
    }));
    $("add").addEventListener("click", () => run(async () => {
      const res = await register(session.token, "");
      await listPasskeys();
      return "Added passkey " + res.credentialId + ".";
    }));
    $("list").addEventListener("click", () => run(async () => {
      const n = await listPasskeys();
      return n + (n === 1 ? " passkey." : " passkeys.");
    }));
    $("signout").addEventListener("click", () => run(async () => {
      await call("POST", "logout", session.token);
      session = null;
      $("session").hidden = true;
      return "Signed out: the session token no longer works.";
    }));
  });
})();
