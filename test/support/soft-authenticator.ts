/**
 * A passkey authenticator in software, for tests that drive the WebAuthn ceremonies without a
 * browser: it makes a P-256 key pair per credential and answers registration and sign-in options
 * as a platform authenticator would (attestation "none", user present and verified), in the JSON
 * shape @simplewebauthn/browser sends. The Chromium tests use the browser's own virtual
 * authenticator instead.
 */

import { base64Url, fromBase64Url } from "../../src/bytes";
import { join, latin1 } from "./build";

const encoder = new TextEncoder();

const b64url = (bytes: Uint8Array) => base64Url(String.fromCharCode(...bytes));
const fromB64url = (text: string) => latin1(fromBase64Url(text));
const concat = join;

/** CBOR (RFC 8949) for what an attestation holds: small maps of small ints, text and bytes. */
function cbor(value: unknown): Uint8Array {
  const head = (major: number, n: number) =>
    n < 24
      ? Uint8Array.of((major << 5) | n)
      : n < 256
        ? Uint8Array.of((major << 5) | 24, n)
        : Uint8Array.of((major << 5) | 25, n >> 8, n & 255);
  if (typeof value === "number") return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === "string") return concat(head(3, encoder.encode(value).length), encoder.encode(value));
  if (value instanceof Uint8Array) return concat(head(2, value.length), value);
  if (value instanceof Map) return concat(head(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)]));
  throw new Error(`no CBOR for ${String(value)}`);
}

/** WebCrypto's raw ECDSA signature (r || s) as the DER sequence WebAuthn carries. */
function der(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    const trimmed = bytes.subarray(i);
    const body = trimmed[0]! & 0x80 ? concat(Uint8Array.of(0), trimmed) : trimmed;
    return concat(Uint8Array.of(0x02, body.length), body);
  };
  const seq = concat(integer(raw.subarray(0, 32)), integer(raw.subarray(32)));
  return concat(Uint8Array.of(0x30, seq.length), seq);
}

const sha256 = async (bytes: Uint8Array) =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));

interface Credential {
  id: Uint8Array;
  keys: CryptoKeyPair;
  userHandle: string;
  rpId: string;
  counter: number;
}

export class SoftAuthenticator {
  readonly credentials: Credential[] = [];

  constructor(readonly origin: string) {}

  async register(options: any, { origin = this.origin } = {}) {
    const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, [
      "sign",
      "verify",
    ])) as CryptoKeyPair;
    const id = crypto.getRandomValues(new Uint8Array(16));
    const credential = { id, keys, userHandle: options.user.id as string, rpId: options.rp.id as string, counter: 0 };
    const jwk = (await crypto.subtle.exportKey("jwk", keys.publicKey)) as JsonWebKey;
    const cose = new Map<number, unknown>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, fromB64url(jwk.x!)],
      [-3, fromB64url(jwk.y!)],
    ]);
    const authData = concat(
      await sha256(encoder.encode(credential.rpId)),
      Uint8Array.of(0x45), // user present, user verified, attested credential data
      new Uint8Array(4),
      new Uint8Array(16), // AAGUID: none
      Uint8Array.of(0, id.length),
      id,
      cbor(cose),
    );
    const clientData = encoder.encode(
      JSON.stringify({ type: "webauthn.create", challenge: options.challenge, origin, crossOrigin: false }),
    );
    const attestation = cbor(
      new Map<string, unknown>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", authData],
      ]),
    );
    this.credentials.push(credential);
    return {
      id: b64url(id),
      rawId: b64url(id),
      type: "public-key",
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientData),
        attestationObject: b64url(attestation),
        transports: ["internal"],
      },
    };
  }

  /** A sign-in answer with `credential` (the last registered by default). */
  async signIn(options: any, { credential = this.credentials.at(-1)!, origin = this.origin } = {}) {
    credential.counter++;
    const count = new Uint8Array(4);
    new DataView(count.buffer).setUint32(0, credential.counter);
    const authData = concat(await sha256(encoder.encode(options.rpId ?? credential.rpId)), Uint8Array.of(0x05), count);
    const clientData = encoder.encode(
      JSON.stringify({ type: "webauthn.get", challenge: options.challenge, origin, crossOrigin: false }),
    );
    const signed = concat(authData, await sha256(clientData));
    const raw = new Uint8Array(
      await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, credential.keys.privateKey, signed),
    );
    return {
      id: b64url(credential.id),
      rawId: b64url(credential.id),
      type: "public-key",
      clientExtensionResults: {},
      response: {
        clientDataJSON: b64url(clientData),
        authenticatorData: b64url(authData),
        signature: b64url(der(raw)),
        userHandle: credential.userHandle,
      },
    };
  }
}
