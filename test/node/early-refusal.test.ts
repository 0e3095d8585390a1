import { randomBytes } from "node:crypto";
import { beforeAll, expect, it } from "vitest";
import { createAccount, fixture, sharedTestServer, uploadFile, type TestAccount, type TestServer } from "./server";

/**
 * An upload refused from its first bytes (a corrupt JPEG, a file of no accepted type) is answered
 * before the rest of its body has been read. The next request must be served as usual.
 *
 * `wrangler dev` 4.86 answered every POST that followed such a refusal with 503 "Your worker
 * restarted mid-request": its dev proxy reuses the connection to the Worker that the refusal left
 * with unread bytes, and reports any failed forward that way, though the Worker never restarted
 * (workers-sdk issues 14641 and 15203). The toolchain the project pins does not; this keeps it so.
 * On the run's shared dev server: the refusals leave the connection to its Worker as any client's
 * would, so every file that uses that server after them would meet the same 503s.
 */
let server: TestServer;
let account: TestAccount;

beforeAll(async () => {
  server = await sharedTestServer();
  account = await createAccount(server, "early-refusal");
});

it.each([
  ["a 1.9 MB camera JPEG whose marker structure breaks part-way", "corrupt/corrupted.jpg", /broken marker structure/],
  ["2 MB of random bytes", null, /Unsupported file type/],
])("serves the request after %s, refused before its body was read", async (_what, name, reason) => {
  const refused = name ? await fixture(name) : new Uint8Array(randomBytes(2_000_000));
  const next = await fixture("tiny/png-transparent.png");
  for (let round = 0; round < 3; round++) {
    const answer = await exchange(() => uploadFile(server, account.full, refused, "file.jpg"));
    expect(answer.status).toBe(422);
    expect((JSON.parse(answer.text) as { errors: string }).errors).toMatch(reason);

    const after = await exchange(() => uploadFile(server, account.full, next, "next.png", { allow_duplicate: "1" }));
    expect(after.text).not.toMatch(/restarted mid-request/);
    expect(after.status, after.text).toBe(200);
  }
});

/**
 * One request and its whole answer. The dev proxy may close the connection once it has answered a
 * refusal, while the client is still sending the body, and Node's fetch may have chosen that
 * connection for the next request too: either way it loses the answer, at the headers or part-way
 * through the body ("terminated", the socket's other side closed: once in a full run on a loaded
 * machine, and once twice in a row, and once, in CI, while the answer's body was read), or while it
 * was still sending ("fetch failed", EPIPE or ECONNRESET: once in a run of the node files). Or the
 * proxy sends a request on the connection a refusal left being drained, and workerd loses it: a 500
 * "Network connection lost" from Miniflare's entry Worker, before ours runs (the next request, and
 * once, in a full run, the refused one itself). Each is a client or the dev proxy meeting an early
 * answer, not the refusal failing: up to three resends, and never a 503 "restarted". Deployed, no
 * such proxy stands between the client and the Worker.
 */
async function exchange(send: () => Promise<Response>, resends = 3): Promise<{ status: number; text: string }> {
  try {
    const response = await send();
    const answer = { status: response.status, text: await response.text() };
    if (resends > 0 && answer.status === 500 && answer.text.includes("Network connection lost"))
      return exchange(send, resends - 1);
    return answer;
  } catch (error) {
    if (!lostAnswer(error) || resends === 0) throw error;
    return exchange(send, resends - 1);
  }
}

/** Node's fetch losing the connection under a request or its answer, as the dev proxy's close makes it. */
function lostAnswer(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  if (error.message === "terminated") return true;
  const code = (error.cause as { code?: string } | undefined)?.code;
  return error.message === "fetch failed" && (code === "EPIPE" || code === "ECONNRESET");
}
