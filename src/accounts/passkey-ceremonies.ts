import type {
  AuthenticationResponseJSON,
  generateRegistrationOptions,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { newAccountId } from "./accounts";
import { unprocessable } from "../errors";
import type { Database } from "../storage/db";
import { findAccountName } from "../storage/accounts";
import { findPasskey, listPasskeys, notePasskeyUse } from "../storage/passkeys";
import { insertChallenge, takeChallenge, type ChallengeRow } from "../storage/webauthn-challenges";
import type { PasskeyRow, SignInLinkRow } from "../model/sign-in-schema";

/*
 * The two WebAuthn ceremonies, through @simplewebauthn/server: registering a passkey and signing
 * in with one. Each begins with options holding a random challenge, kept in D1 until the browser's
 * answer comes back; the answer is checked once against it (the challenge is taken as it is read)
 * and against this service's origin and relying party id.
 */

/** The relying party: the service's host, as the browser sees it. */
export interface RelyingParty {
  /** The host name passkeys are bound to (no port). */
  id: string;
  name: string;
  /** The origin every answer must come from. */
  origin: string;
}

/**
 * The library, loaded on the first ceremony rather than when the isolate starts: its attestation
 * formats' ASN.1 and X.509 schemas, built as it loads, doubled the Worker's start-up time
 * (deploy check: 257 to 518 ms) for every request, though only a sign-in uses them.
 */
const library = () => Promise.all([import("@simplewebauthn/server"), import("@simplewebauthn/server/helpers")]);

/** How long a browser has to answer a challenge (the options' timeout too). */
export const CHALLENGE_MS = 5 * 60_000;

/** Who a passkey is being registered for: through a link (an invite's account is made then), or signed in. */
export type Registrant = { link: SignInLinkRow } | { accountId: string };

const accountIdOf = (registrant: Registrant) =>
  "link" in registrant ? (registrant.link.accountId ?? newAccountId()) : registrant.accountId;

export async function registrationOptions(
  db: Database,
  rp: RelyingParty,
  registrant: Registrant,
  now: number,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const accountId = accountIdOf(registrant);
  const invited = "link" in registrant && registrant.link.kind === "invite";
  const name = invited ? (registrant.link.name ?? "New account") : await findAccountName(db, accountId);
  const existing = invited ? [] : await listPasskeys(db, accountId);
  const [{ generateRegistrationOptions }] = await library();
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userID: new TextEncoder().encode(accountId) as Uint8Array<ArrayBuffer>,
    userName: name ?? accountId,
    attestationType: "none",
    // A passkey the browser can offer by itself: signing in asks for no name first.
    authenticatorSelection: { residentKey: "required", userVerification: "preferred" },
    excludeCredentials: existing.map((p) => ({ id: p.id, transports: transportsOf(p) })),
    timeout: CHALLENGE_MS,
  });
  await insertChallenge(db, {
    challenge: options.challenge,
    purpose: "register",
    accountId,
    linkHash: "link" in registrant ? registrant.link.tokenHash : null,
    expiresAt: now + CHALLENGE_MS,
  });
  return options;
}

/** A verified registration: the passkey to store, for the account the challenge was for. */
export interface NewCredential {
  accountId: string;
  id: string;
  /** The COSE public key, base64url. */
  publicKey: string;
  counter: number;
  transports: string | null;
}

/**
 * Checks a registration's answer against its challenge, which must have been given to the same
 * registrant (the same link, or the same signed-in account). Throws a 422 saying what is wrong.
 */
export async function verifyRegistration(
  db: Database,
  rp: RelyingParty,
  registrant: Registrant,
  response: RegistrationResponseJSON,
  now: number,
): Promise<NewCredential> {
  const [{ verifyRegistrationResponse }, { isoBase64URL }] = await library();
  const challenge = await takeChallengeOf(db, response.response.clientDataJSON, "register", now);
  const sameRegistrant =
    "link" in registrant
      ? challenge.linkHash === registrant.link.tokenHash
      : challenge.linkHash === null && challenge.accountId === registrant.accountId;
  if (!sameRegistrant || !challenge.accountId) throw unprocessable("This passkey was made for another request.");
  const verified = await verifyRegistrationResponse({
    response,
    expectedChallenge: challenge.challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
    requireUserVerification: false,
  }).catch((error: unknown) => {
    throw unprocessable(`The passkey could not be checked: ${(error as Error).message}`);
  });
  if (!verified.verified) throw unprocessable("The passkey could not be checked.");
  const { credential } = verified.registrationInfo;
  return {
    accountId: challenge.accountId,
    id: credential.id,
    publicKey: isoBase64URL.fromBuffer(credential.publicKey),
    counter: credential.counter,
    transports: credential.transports ? JSON.stringify(credential.transports) : null,
  };
}

export async function signInOptions(
  db: Database,
  rp: RelyingParty,
  now: number,
): Promise<PublicKeyCredentialRequestOptionsJSON> {
  // No credentials listed: the browser offers the passkeys it holds for this host.
  const [{ generateAuthenticationOptions }] = await library();
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    userVerification: "preferred",
    timeout: CHALLENGE_MS,
  });
  await insertChallenge(db, {
    challenge: options.challenge,
    purpose: "sign-in",
    accountId: null,
    linkHash: null,
    expiresAt: now + CHALLENGE_MS,
  });
  return options;
}

/**
 * The passkey a sign-in's answer proves, or null when it proves none (an unknown passkey, a wrong
 * signature, an expired or reused challenge): the caller counts those as wrong guesses.
 */
export async function verifySignIn(
  db: Database,
  rp: RelyingParty,
  response: AuthenticationResponseJSON,
  now: number,
): Promise<PasskeyRow | null> {
  const [{ verifyAuthenticationResponse }, { isoBase64URL }] = await library();
  const challenge = await takeChallengeOf(db, response.response.clientDataJSON, "sign-in", now).catch(() => null);
  const passkey = typeof response.id === "string" ? await findPasskey(db, response.id) : undefined;
  if (!challenge || !passkey) return null;
  const verified = await verifyAuthenticationResponse({
    response,
    expectedChallenge: challenge.challenge,
    expectedOrigin: rp.origin,
    expectedRPID: rp.id,
    credential: {
      id: passkey.id,
      publicKey: isoBase64URL.toBuffer(passkey.publicKey),
      counter: passkey.counter,
      transports: transportsOf(passkey),
    },
    requireUserVerification: false,
  }).catch(() => null);
  if (!verified?.verified) return null;
  await notePasskeyUse(db, passkey.id, verified.authenticationInfo.newCounter, now);
  return passkey;
}

/** The challenge the answer's client data names, taken for `purpose`; a 422 when there is none. */
async function takeChallengeOf(
  db: Database,
  clientDataJSON: unknown,
  purpose: ChallengeRow["purpose"],
  now: number,
): Promise<ChallengeRow> {
  const [, { isoBase64URL }] = await library();
  let challenge: unknown;
  try {
    challenge = JSON.parse(isoBase64URL.toUTF8String(String(clientDataJSON))).challenge;
  } catch {
    throw unprocessable("The passkey's answer is not one a browser makes.");
  }
  const taken = typeof challenge === "string" ? await takeChallenge(db, challenge, purpose, now) : undefined;
  if (!taken) throw unprocessable("This request has expired or was answered already; try again.");
  return taken;
}

type Transports = NonNullable<
  Parameters<typeof generateRegistrationOptions>[0]["excludeCredentials"]
>[number]["transports"];

function transportsOf(passkey: PasskeyRow): Transports {
  try {
    return passkey.transports ? (JSON.parse(passkey.transports) as Transports) : undefined;
  } catch {
    return undefined;
  }
}
