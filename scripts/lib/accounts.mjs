// Creating an account through the admin API: the demo account of `npm run dev`, and the accounts
// of the benchmarks and the tests.

/**
 * POST /admin/accounts on the service at `origin`; resolves the account as the API answers it,
 * with its keys (shown this once only). `send` is fetch, or a test's own way into the Worker.
 */
export async function createAccount({ origin, adminToken, name, send = fetch }) {
  const res = await send(`${origin}/admin/accounts`, {
    method: "POST",
    headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`account creation failed: ${res.status} ${await res.text()}`);
  return (await res.json()).data;
}
